//go:build unix

package replay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jazz-run/jazz/safefile"
)

func TestLoadRefusesFIFOAndHugeFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "script.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, MaxScriptBytes+1); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]error{fifo: safefile.ErrNotRegular, huge: safefile.ErrTooLarge} {
		done := make(chan error, 1)
		go func() {
			_, err := Load(context.Background(), path)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, want) || !strings.Contains(err.Error(), path) {
				t.Errorf("Load(%s) = %v, want %v naming the file", path, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) blocked", path)
		}
	}
}
