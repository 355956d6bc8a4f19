package shelltool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/shellguard"
	"github.com/jazz-run/jazz/tools"
)

// TestCommandsTakingTheHomeNeedAPerson: with the home directory at
// root/users/u and the workspace beside it, a command that removes,
// moves away or replaces the home or a directory holding it (its dot
// entries go with it, or a tree laid over it brings new ones) is for a
// person only when proposed, and run under the high-risk policy it is
// refused at run time with the whole tree unchanged.
func TestCommandsTakingTheHomeNeedAPerson(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "users", "u")
	f := &fixture{dir: filepath.Join(root, "work"), tmp: filepath.Join(root, "tmp")}
	for _, d := range []string{home + "/.ssh", f.dir + "/x/u", f.tmp, root + "/a/b"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, content := range map[string]string{home + "/.bashrc": "# rc\n", f.dir + "/x/u/.bashrc": "evil\n"} {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "users"), filepath.Join(f.dir, "people")); err != nil {
		t.Fatal(err)
	}
	parent := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + f.tmp}
	ts := Tools(Options{Environ: func() []string { return parent }})
	f.propose, f.twin = ts[0], ts[1]
	f.env = &tools.Env{WorkDir: f.dir, Home: home}

	for _, cmd := range []string{
		"mv ../users gone",
		"mv people/ gone",
		"find ../users -name .bashrc -delete",
		"find ~ -name .bashrc -delete",
		"cd .. && find users -delete",
		"cp -r x/. ../users",
		"cp -r x/u people",
		"d=../users; find $d -delete",
		"for d in ../use*; do mv $d gone; done",
		"env -C " + root + "/a/b cp " + f.dir + "/x/u/.bashrc ../../users/u/.bashrc", // relative to env's own directory
	} {
		res := f.propose.Handler(context.Background(), f.env, args(cmd))
		if res.Approval == nil {
			t.Errorf("%q: no approval request: %+v", cmd, res)
			continue
		}
		if res.Approval.HumanOnly == "" {
			t.Errorf("%q: not human-only when proposed", cmd)
		}
		before := snapshot(t, root, f.tmp)
		out := f.twin.Handler(judged(t, context.Background(), res.Approval.ExecuteArgs, shellguard.ByPolicy), f.env, res.Approval.ExecuteArgs)
		if after := snapshot(t, root, f.tmp); !sameTree(before, after) {
			t.Errorf("%q ran under the high-risk policy and changed the tree: %s", cmd, treeDiff(before, after))
		}
		if out.Success || !strings.Contains(out.Error, "only a person may approve") {
			t.Errorf("%q under the high-risk policy: not refused at run time: %+v", cmd, out)
		}
	}
}
