//go:build unix

package personas

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

// TestLookupRefusesUnsafeFiles: a persona decides a subagent's
// instructions and tools, so one another user could have written, or one
// that is not a regular file, is refused with a message naming it; never
// read, never waited on.
func TestLookupRefusesUnsafeFiles(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir, file string)
		want  string
		is    error
	}{
		{"group-writable file", func(t *testing.T, _, file string) { os.Chmod(file, 0o664) }, "writable by group", safefile.ErrUnsafe},
		{"world-writable personas dir", func(t *testing.T, dir, _ string) { os.Chmod(dir, 0o777) }, "its directory ", safefile.ErrUnsafe},
		{"fifo", func(t *testing.T, _, file string) {
			os.Remove(file)
			if err := syscall.Mkfifo(file, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "named pipe", safefile.ErrNotRegular},
		{"someone else's file", func(t *testing.T, _, file string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to chown")
			}
			os.Chown(file, 4242, 4242)
		}, "owned by uid 4242", safefile.ErrUnsafe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			writePersona(t, home, "coder", `{"systemPrompt":"Do as the file says.","tools":["execute_command"]}`)
			dir := filepath.Join(home, "personas")
			file := filepath.Join(dir, "coder.json")
			tt.setup(t, dir, file)
			done := make(chan error, 1)
			go func() {
				_, err := Lookup(context.Background(), home, "coder")
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrInvalid) || !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), file) {
					t.Fatalf("err = %v, want %q naming %s", err, tt.want, file)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Lookup blocked")
			}
		})
	}
}
