//go:build unix

package agents

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

// TestUnsafeAgentFiles: an agent file decides the model, the tools and
// the instructions of a run, so one another user could have written, or
// one that is not a regular file, is refused by Lookup (naming it) and
// skipped by List with a warning; a FIFO is never waited on.
func TestUnsafeAgentFiles(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, s *Store, file string)
		want  string
		is    error
	}{
		{"world-writable file", func(t *testing.T, _ *Store, file string) { os.Chmod(file, 0o646) }, "writable by others", safefile.ErrUnsafe},
		{"fifo", func(t *testing.T, _ *Store, file string) {
			os.Remove(file)
			if err := syscall.Mkfifo(file, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "named pipe", safefile.ErrNotRegular},
		{"huge", func(t *testing.T, _ *Store, file string) {
			if err := os.Truncate(file, MaxFileBytes+1); err != nil {
				t.Fatal(err)
			}
		}, "over the limit of 1 MiB", safefile.ErrTooLarge},
		{"someone else's file", func(t *testing.T, _ *Store, file string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to chown")
			}
			os.Chown(file, 4242, 4242)
		}, "owned by uid 4242", safefile.ErrUnsafe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			a, err := s.Create(context.Background(), Agent{Name: "x", Model: "openai/gpt-4o-mini"})
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(s.Home, "agents", a.ID+".json")
			tt.setup(t, s, file)
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, err := s.Lookup(context.Background(), a.ID)
				if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), file) {
					t.Errorf("Lookup err = %v, want %q naming %s", err, tt.want, file)
				}
				list, warns, err := s.List(context.Background())
				if err != nil || len(list) != 0 || len(warns) != 1 || !strings.Contains(warns[0], tt.want) {
					t.Errorf("List: %v %q %v", list, warns, err)
				}
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("blocked")
			}
		})
	}
	t.Run("world-writable agents dir", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.Create(context.Background(), Agent{Name: "x", Model: "openai/gpt-4o-mini"}); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(s.Home, "agents"), 0o777)
		if _, _, err := s.List(context.Background()); !errors.Is(err, safefile.ErrUnsafe) {
			t.Fatalf("List err = %v", err)
		}
		if _, err := s.Lookup(context.Background(), "x"); !errors.Is(err, safefile.ErrUnsafe) {
			t.Fatalf("Lookup by name err = %v", err)
		}
		if _, err := s.Create(context.Background(), Agent{Name: "y", Model: "openai/gpt-4o-mini"}); !errors.Is(err, safefile.ErrUnsafe) {
			t.Fatalf("Create err = %v", err)
		}
	})
}
