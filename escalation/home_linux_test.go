package escalation

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWhyKnowsTheHomeByIdentity: a bind mount of the home directory, or
// of a directory above it, reaches its dot entries by a path that shares
// nothing with $HOME; Why still sends them to a person, and only them,
// and HoldsHome still knows a directory above the home.
func TestWhyKnowsTheHomeByIdentity(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	for _, d := range []string{home, filepath.Join(root, "alias"), filepath.Join(root, "above")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for src, dst := range map[string]string{home: "alias", root: "above"} {
		dst = filepath.Join(root, dst)
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			t.Skipf("bind mount needs privileges this test does not have: %v", err)
		}
		t.Cleanup(func() {
			if err := unix.Unmount(dst, unix.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", dst, err)
			}
		})
	}
	homes := Homes(home)
	for p, want := range map[string]bool{
		root + "/alias/.bashrc":              true,
		root + "/alias/.ssh/authorized_keys": true,
		root + "/alias/.config":              true,
		root + "/above/home/.profile":        true,
		root + "/alias/notes.txt":            false,
		root + "/alias":                      false,
		root + "/above/.hidden":              false,
		root + "/alias/src/.env":             false,
	} {
		if got := Why(p, homes) != ""; got != want {
			t.Errorf("Why(%s) human-only = %v, want %v", p, got, want)
		}
	}
	// Removing or moving a directory that holds the home directory.
	for p, want := range map[string]bool{
		root:                  true,
		root + "/above":       true, // root again, by identity
		home:                  false,
		root + "/alias":       false, // the home itself (rm and mv refuse it as critical)
		root + "/above/home":  false,
		root + "/not-created": false,
	} {
		if got := HoldsHome(p, homes) != ""; got != want {
			t.Errorf("HoldsHome(%s) = %v, want %v", p, got, want)
		}
	}
}

// TestTakesHomeKnowsTheHomeItself: for a program that may remove or
// replace what it names, the home directory itself counts as well as a
// directory holding it, by path, by identity (a bind mount) and through
// a link written with a trailing slash (the kernel follows it); a link
// named without one is the link only.
func TestTakesHomeKnowsTheHomeItself(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "users", "u")
	for _, d := range []string{home, filepath.Join(root, "alias"), filepath.Join(root, "plain")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(home, filepath.Join(root, "hlink")); err != nil {
		t.Fatal(err)
	}
	cases := map[string]bool{
		home:                       true,
		home + "/":                 true,
		root + "/users":            true,
		root + "/users/u/..":       true,
		root + "/hlink/":           true,
		root + "/hlink":            false,
		root + "/plain":            false,
		home + "/.bashrc-missing":  false,
		root + "/users/u/../../ws": false,
	}
	if err := unix.Mount(home, filepath.Join(root, "alias"), "", unix.MS_BIND, ""); err == nil {
		t.Cleanup(func() {
			if err := unix.Unmount(filepath.Join(root, "alias"), unix.MNT_DETACH); err != nil {
				t.Errorf("unmount: %v", err)
			}
		})
		cases[root+"/alias"] = true
	} else {
		t.Logf("no bind mount (%v): the identity case is not checked", err)
	}
	homes := Homes(home)
	for p, want := range cases {
		if got := TakesHome(p, homes) != ""; got != want {
			t.Errorf("TakesHome(%s) = %v, want %v", p, got, want)
		}
	}
}
