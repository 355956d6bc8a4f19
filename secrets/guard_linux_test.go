package secrets_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jazz-run/jazz/secrets"
)

// JAZZ_HOME bind-mounted elsewhere has no path in common with it and no
// symlink leads there: only the directory's identity (device and inode)
// gives it away, whether the path is checked, opened, or reached through
// a symlink to the mount.
func TestGuardRefusesABindMountOfHome(t *testing.T) {
	w := newGuardWorld(t)
	mnt := filepath.Join(w.other, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(w.home, mnt, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind mount needs privileges this test does not have: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	if err := os.Symlink("mnt/agents", filepath.Join(w.other, "to-agents")); err != nil {
		t.Fatal(err)
	}
	g := secrets.NewGuard(w.home, w.extra)
	for _, p := range []string{
		mnt, filepath.Join(mnt, "config.json"), filepath.Join(mnt, "agents", "a.json"),
		filepath.Join(mnt, "agents", "..", "config.json"), filepath.Join(w.other, "to-agents", "a.json"),
		filepath.Join(mnt, "not-yet-created.json"),
	} {
		if err := g.Check(p); !errors.Is(err, secrets.ErrRefused) {
			t.Errorf("Check(%s) = %v, want ErrRefused", p, err)
		}
		if f, err := g.Open(p); err == nil {
			f.Close()
			t.Errorf("Open(%s) succeeded", p)
		}
	}
	if err := g.Check(filepath.Join(w.other, "ok.txt")); err != nil {
		t.Errorf("ok.txt beside the mount: %v", err)
	}
}
