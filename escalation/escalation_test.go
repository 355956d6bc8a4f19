package escalation

import (
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"testing"
)

// TestPhysical: a `..` after a link climbs out of the link's target, as
// the kernel walks it, so `link/../x` can name a protected place the
// lexical path does not; a missing directory is one `mkdir -p` makes; a loop of
// links is no path at all.
func TestPhysical(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"ws/.git/hooks", "ws/sub"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"ws/hk": ".git/hooks", "ws/abs": filepath.Join(root, "ws/.git"), "ws/l1": "l2", "ws/l2": "l1"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	ws := filepath.Join(root, "ws")
	for in, want := range map[string]string{
		ws + "/hk/pre-commit":    ws + "/.git/hooks/pre-commit",
		ws + "/hk/../config":     ws + "/.git/config",
		ws + "/abs/hooks/x":      ws + "/.git/hooks/x",
		ws + "//sub/./../hk/":    ws + "/.git/hooks",
		ws + "/missing/../hk/x":  ws + "/.git/hooks/x",
		ws + "/sub/../l1/x":      "",
		ws + "/sub/new/deeper/f": ws + "/sub/new/deeper/f",
	} {
		if got := Physical(in); got != want {
			t.Errorf("Physical(%q) = %q, want %q", in, got, want)
		}
	}
	if why := Why(Physical(ws+"/hk/../config"), nil); why == "" {
		t.Error("a config reached through a link's .. is not protected")
	}
	if why := Why(filepath.Clean(ws+"/hk/../config"), nil); why != "" {
		t.Errorf("the lexical path %s is protected: %s", filepath.Clean(ws+"/hk/../config"), why)
	}
}

// TestHomesHoldTheAccountsHome: the shells and programs a user runs
// later get the account's home directory as HOME from their login,
// whatever this process's HOME says (unset under a service, another
// directory under sudo -E or a wrapper), so its dot entries are the
// user's configuration too; $HOME stays first, for reading ~.
func TestHomesHoldTheAccountsHome(t *testing.T) {
	u, err := user.Current()
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		t.Skipf("no account home directory: %v", err)
	}
	other := t.TempDir()
	for _, home := range []string{"", other} {
		homes := Homes(home)
		if !slices.Contains(homes, filepath.Clean(u.HomeDir)) {
			t.Errorf("Homes(%q) = %q, without the account's home %s", home, homes, u.HomeDir)
		}
		if why := Why(filepath.Join(u.HomeDir, ".bashrc"), homes); why == "" {
			t.Errorf("with HOME=%q, the account's ~/.bashrc is not protected", home)
		}
	}
	if homes := Homes(other); homes[0] != filepath.Clean(other) {
		t.Errorf("Homes(%q)[0] = %q, want $HOME first", other, homes[0])
	}
}
