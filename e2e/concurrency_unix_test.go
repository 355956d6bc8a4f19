//go:build unix

package e2e_test

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// TestTenCallCap watches the 10-call cap from outside the process. The
// model asks for 25 allowlisted `cat` commands on FIFOs; each blocks in
// open() until a writer comes. The test sees a reader on a FIFO when opening it
// for writing with O_NONBLOCK succeeds (ENXIO means nobody reads it), so it
// can count the calls in flight, and it releases one at a time by writing
// the content and closing. At no moment may more than 10 be reading, and
// 10 must be reached (the calls do run in parallel).
func TestTenCallCap(t *testing.T) {
	t.Parallel()
	const n, limit = 25, 10
	var cs []chatserver.Call
	// Not read_file: the read tools refuse FIFOs (regular files only).
	for i := range n {
		cs = append(cs, chatserver.Call{ID: fmt.Sprintf("call_%02d", i), Name: "execute_command",
			Arguments: chatserver.JSONArgs(map[string]string{"command": fmt.Sprintf("cat pipe_%02d", i), "description": "read a pipe"})})
	}
	srv := chatserver.New(calls(cs...), answer("all read"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.writeConfig(`{"maxRetries": 0, "autoApprovedCommands": ["cat"]}`)
	w.agent("x", "execute_command")
	paths := make([]string, n)
	for i := range n {
		paths[i] = filepath.Join(w.cwd, fmt.Sprintf("pipe_%02d", i))
		mkfifo(t, paths[i])
	}

	cmd := exec.Command(jazzBin, "run", "--agent", "x", "--json", "--timeout", "60000", "read all the pipes")
	cmd.Dir, cmd.Env = w.cwd, w.environ()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	held := map[int]int{} // FIFO index → our write fd (its reader is in flight)
	released := map[int]bool{}
	peak, stable := 0, 0
	deadline := time.Now().Add(45 * time.Second)
	for len(released) < n {
		if time.Now().After(deadline) {
			t.Fatalf("gave up: %d released, %d in flight, peak %d\nstderr: %s", len(released), len(held), peak, errb.String())
		}
		select {
		case err := <-exited:
			t.Fatalf("jazz exited early (%v) with %d of %d released\nstdout: %s\nstderr: %s", err, len(released), n, out.String(), errb.String())
		default:
		}
		grew := false
		for i, p := range paths {
			if released[i] {
				continue
			}
			if _, ok := held[i]; ok {
				continue
			}
			fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
			if errors.Is(err, syscall.ENXIO) {
				continue
			}
			if err != nil {
				t.Fatalf("open %s for writing: %v", p, err)
			}
			held[i] = fd
			grew = true
		}
		peak = max(peak, len(held))
		if len(held) > limit {
			t.Fatalf("%d calls in flight at once, the cap is %d", len(held), limit)
		}
		if grew {
			stable = 0
		} else {
			stable++
		}
		want := min(limit, n-len(released))
		// Release one only after the in-flight set has held still for a
		// while, so an eleventh reader would have had time to show up.
		if len(held) == want && stable >= 5 {
			i := lowest(held)
			fd := held[i]
			delete(held, i)
			if _, err := syscall.Write(fd, []byte(fmt.Sprintf("content of pipe %02d\n", i))); err != nil {
				t.Fatalf("write pipe %d: %v", i, err)
			}
			syscall.Close(fd)
			released[i] = true
			stable = 0
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("jazz did not finish after every pipe was released\nstderr: %s", errb.String())
	}
	if peak != limit {
		t.Errorf("peak in flight %d, want exactly %d", peak, limit)
	}
	r := result{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
	if e := wantSuccess(t, r); len(e.ToolCalls) != n || e.Answer != "all read" {
		t.Fatalf("envelope: %d tool calls, answer %q", len(e.ToolCalls), e.Answer)
	}
	tms := srv.Requests()[1].ToolMessages()
	if len(tms) != n {
		t.Fatalf("%d tool messages, want %d", len(tms), n)
	}
	for i, m := range tms {
		if m.ToolCallID != fmt.Sprintf("call_%02d", i) || m.Content == nil || !strings.Contains(*m.Content, fmt.Sprintf("content of pipe %02d", i)) {
			t.Errorf("tool message %d: id %s content %v: want call order and the pipe's content", i, m.ToolCallID, m.Content)
		}
	}
}

func lowest(m map[int]int) int {
	best := -1
	for k := range m {
		if best < 0 || k < best {
			best = k
		}
	}
	return best
}
