//go:build unix

package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// TestFilesOthersCouldWrite: as ssh does with its own files, jazz refuses
// a JAZZ_HOME, config, agent or persona file that another user could have
// written, naming it and the fix; and it never changes the mode of a file
// it reached through a symlink.
func TestFilesOthersCouldWrite(t *testing.T) {
	t.Parallel()
	srv := chatserver.NewFunc(func(int, chatserver.Request) chatserver.Turn { return answer("ok") })
	defer srv.Close()
	cases := []struct {
		name  string
		setup func(t *testing.T, w *world, agentID string) string // the path at fault
	}{
		{"JAZZ_HOME writable by others", func(t *testing.T, w *world, _ string) string {
			must(t, os.Chmod(w.home, 0o777))
			return w.home
		}},
		{"JAZZ_HOME's parent writable by group", func(t *testing.T, w *world, _ string) string {
			parent := filepath.Dir(w.home)
			must(t, os.Chmod(parent, 0o770))
			t.Cleanup(func() { os.Chmod(parent, 0o700) })
			return parent
		}},
		{"config writable by group", func(t *testing.T, w *world, _ string) string {
			p := filepath.Join(w.home, "config.json")
			must(t, os.Chmod(p, 0o620))
			return p
		}},
		{"agent file writable by others", func(t *testing.T, w *world, id string) string {
			p := filepath.Join(w.home, "agents", id+".json")
			must(t, os.Chmod(p, 0o602))
			return p
		}},
		{"agents directory writable by others", func(t *testing.T, w *world, _ string) string {
			p := filepath.Join(w.home, "agents")
			must(t, os.Chmod(p, 0o777))
			return p
		}},
		{"agent file owned by someone else", func(t *testing.T, w *world, id string) string {
			if os.Geteuid() != 0 {
				t.Skip("needs root to chown")
			}
			p := filepath.Join(w.home, "agents", id+".json")
			must(t, os.Chown(p, 4242, 4242))
			return p
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, srv.URL())
			id := w.agent("x", "read_file")
			bad := c.setup(t, w, id)
			r := w.exec("", "run", "--agent", id, "--json", "hi")
			e := wantFailure(t, r, "refusing")
			if !strings.Contains(e.Error, bad) {
				t.Fatalf("error %q does not name %s", e.Error, bad)
			}
			if !strings.Contains(e.Error, "owned by uid") && !strings.Contains(e.Error, "chmod go-w "+bad) {
				t.Fatalf("error %q gives no fix", e.Error)
			}
			if len(srv.Requests()) != 0 {
				t.Fatal("the model was called")
			}
		})
	}
}

// TestBusRefusesHomeOthersCouldWrite: the bus commands write identities
// (seeds) into JAZZ_HOME and the server trusts what they list, and the
// approvals CLI reads an approver's seed and the server's pin there, so
// they refuse a JAZZ_HOME another user could change, as jazz run does,
// and write nothing there.
func TestBusRefusesHomeOthersCouldWrite(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"bus", "add-approver", "alice"},
		{"bus", "add-worker", "w1"},
		{"bus", "serve", "--port", "-1"},
		{"approvals", "list", "--nats-url", "nats://127.0.0.1:1"},
	} {
		t.Run(args[1], func(t *testing.T) {
			w := newWorld(t, "http://127.0.0.1:1")
			must(t, os.Chmod(w.home, 0o777))
			r := w.exec("", args...)
			if r.code == 0 {
				t.Fatalf("%v succeeded in a JAZZ_HOME others can write:\n%s", args, r.stderr)
			}
			if !strings.Contains(r.stderr, w.home) || !strings.Contains(r.stderr, "chmod go-w "+w.home) {
				t.Fatalf("error does not name %s and the fix:\n%s", w.home, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(w.home, "bus")); err == nil {
				t.Fatal("identities were written into the untrusted JAZZ_HOME")
			}
		})
	}
}

// TestConfigModeRepair: a config others may read is tightened to 0600 in
// place; one reached through a symlink keeps its mode (jazz does not own
// the arrangement) and stderr says what to do.
func TestConfigModeRepair(t *testing.T) {
	t.Parallel()
	srv := chatserver.NewFunc(func(int, chatserver.Request) chatserver.Turn { return answer("ok") })
	defer srv.Close()

	w := newWorld(t, srv.URL())
	id := w.agent("x", "read_file")
	p := filepath.Join(w.home, "config.json")
	must(t, os.Chmod(p, 0o644))
	wantSuccess(t, w.exec("", "run", "--agent", id, "--json", "hi"))
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("config mode %04o, want 0600", st.Mode().Perm())
	}

	target := filepath.Join(t.TempDir(), "dotfiles-jazz.json")
	must(t, os.WriteFile(target, []byte(`{"maxRetries": 0}`), 0o644))
	must(t, os.Chmod(target, 0o644))
	must(t, os.Remove(p))
	must(t, os.Symlink(target, p))
	r := w.exec("", "run", "--agent", id, "--json", "hi")
	wantSuccess(t, r)
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o644 {
		t.Fatalf("the symlink's target was changed to %04o", st.Mode().Perm())
	}
	if !strings.Contains(r.stderr, "reached through a symlink") {
		t.Fatalf("no warning about the symlinked config:\n%s", r.stderr)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
