package shelltool

import (
	"context"
	"os"
	"os/exec"
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
// homeBesideWork is a fixture whose workspace (root/work) lies beside
// the home directory (root/users/u, with dot entries), holding a tree
// laid out as a copy of the home's parent (x/u/.bashrc) and a link to
// the home's parent (people).
func homeBesideWork(t *testing.T) (f *fixture, root, home string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home = filepath.Join(root, "users", "u")
	f = &fixture{dir: filepath.Join(root, "work"), tmp: filepath.Join(root, "tmp")}
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
	return f, root, home
}

func TestCommandsTakingTheHomeNeedAPerson(t *testing.T) {
	f, root, _ := homeBesideWork(t)
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
		needsAPerson(t, f, root, cmd)
	}
}

// needsAPerson: cmd is for a person only when proposed, and run under
// the high-risk policy it is refused at run time with the tree under
// root (but TMPDIR) unchanged.
func needsAPerson(t *testing.T, f *fixture, root, cmd string) {
	t.Helper()
	res := f.propose.Handler(context.Background(), f.env, args(cmd))
	if res.Approval == nil {
		t.Errorf("%q: no approval request: %+v", cmd, res)
		return
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

// TestProgramsRunInTheHomeNeedAPerson: a program that writes relative to
// its working directory writes there whatever it names, so one run in
// the home directory or a directory holding it (an archive extracted, a
// tree copied to `.`) plants dot entries without naming any: the
// directory it runs in is judged as a directory it names, however the
// command got there (cd, pushd, a subshell, a link, `..`, the call's own
// workingDirectory), when proposed and at run time.
func TestProgramsRunInTheHomeNeedAPerson(t *testing.T) {
	f, root, home := homeBesideWork(t)
	// dots.tar holds a .bashrc, users.tar a u/.bashrc (x/u/.bashrc's
	// content, not the home's).
	for name, entry := range map[string]string{"dots.tar": "u/.bashrc", "users.tar": "u/.bashrc"} {
		top := filepath.Join(f.dir, "x")
		if name == "dots.tar" {
			top, entry = filepath.Join(top, "u"), ".bashrc"
		}
		cmd := exec.Command("tar", "-cf", filepath.Join(f.dir, name), "-C", top, entry)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v: %s", name, err, out)
		}
	}
	for _, cmd := range []string{
		"cd ~ && tar -xf " + f.dir + "/dots.tar",
		"cd .. && cd users && tar -xf ../work/users.tar",
		"cd people && tar -xf ../users.tar", // the link's target, as the kernel takes it
		"pushd ~ && tar -xf " + f.dir + "/dots.tar",
		"(cd ~; tar -xf " + f.dir + "/dots.tar)",
		"cd ~ && cp -r " + f.dir + "/x/u/. .",
		"cd ../users && cp -r ../work/x/. .",
	} {
		needsAPerson(t, f, root, cmd)
	}
	// The call's own workingDirectory.
	res := f.propose.Handler(context.Background(), f.env, args("tar -xf "+f.dir+"/dots.tar", "workingDirectory", home))
	if res.Approval == nil || res.Approval.HumanOnly == "" {
		t.Errorf("tar -xf in workingDirectory %s: not human-only: %+v", home, res)
	}
	// Elsewhere it is an ordinary write.
	res = f.propose.Handler(context.Background(), f.env, args("cd x && tar -xf ../dots.tar"))
	if res.Approval == nil || res.Approval.HumanOnly != "" {
		t.Errorf("tar -xf in the workspace: %+v", res)
	}
}
