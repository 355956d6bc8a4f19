//go:build linux

package sleeper

import (
	"os/exec"
	"testing"
	"time"
)

// TestAwaitSeesStartAndEnd: Await counts the linked sleeper once it runs
// and zero once it is killed, and reports a count never reached.
func TestAwaitSeesStartAndEnd(t *testing.T) {
	link, marker := Link(t)
	if left, ok := Await(marker, 0, 0); !ok {
		t.Fatalf("processes before any started: %q", left)
	}
	cmd := exec.Command(link, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if left, ok := Await(marker, 1, 10*time.Second); !ok {
		t.Fatalf("the sleeper never showed: %q", left)
	}
	if _, ok := Await(marker, 2, 50*time.Millisecond); ok {
		t.Fatal("Await reached a count no process made")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if left, ok := Await(marker, 0, 10*time.Second); !ok {
		t.Fatalf("a killed sleeper still shows: %q", left)
	}
}
