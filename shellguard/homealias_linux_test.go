package shellguard

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHumanOnlyKnowsTheHomeByIdentity: a bind mount of the home
// directory, or of the directory holding it, shares no path with $HOME
// and no link leads there; a command that writes the home's dot entries
// through one, or removes, moves or lays a tree over one, is still a
// person's, at propose time and on the expanded argv at run time.
func TestHumanOnlyKnowsTheHomeByIdentity(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, ws := root+"/users/u", root+"/ws"
	for _, d := range []string{home + "/.ssh", ws + "/alias", ws + "/ualias", ws + "/x/u"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(home+"/.bashrc", []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{home: ws + "/alias", root + "/users": ws + "/ualias"} {
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			t.Skipf("bind mount needs privileges this test does not have: %v", err)
		}
		t.Cleanup(func() {
			if err := unix.Unmount(dst, unix.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", dst, err)
			}
		})
	}
	for _, cmd := range []string{
		"echo x > alias/.bashrc",
		"cd alias && touch .profile",
		"cd ualias/u && echo x >> .bashrc",
		"mkdir alias/.config",
		"ln -s /x alias/.vimrc",
		"cd ualias && rm -r -- u/.ssh",
		"find ualias -delete",
		"mv ualias gone",
		"cp -r x/u ualias",
		"cp -r x/. alias",
		"find alias -name .bashrc -delete",
	} {
		if why := HumanOnly(cmd, ws, home); why == "" {
			t.Errorf("HumanOnly(%q) = \"\", want a reason", cmd)
		}
	}
	if why := HumanOnly("echo x > alias/notes.txt; mkdir -p ualias/v", ws, home); why != "" {
		t.Errorf("a plain file in the home and a directory beside it: %q", why)
	}
	homes := []string{home}
	for _, argv := range [][]string{{"touch", ws + "/alias/.profile"}, {"find", ws + "/ualias", "-delete"}, {"cp", "-r", "x/u", "ualias"}} {
		if why := ProtectedArgv(argv, ws, homes); why == "" {
			t.Errorf("ProtectedArgv(%q) = \"\", want a reason", argv)
		}
	}
	if why := ProtectedWrite("alias/.bashrc", ws, homes); why == "" {
		t.Error("ProtectedWrite(alias/.bashrc) = \"\", want a reason")
	}
}
