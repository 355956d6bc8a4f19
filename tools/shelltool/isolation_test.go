package shelltool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/isolate"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/shellguard"
	"github.com/jazz-run/jazz/tools"
)

// isolatedFixture is newFixture with a fixed isolation mode and a
// JAZZ_HOME (hidden from every command), with the work directory at dir
// (relative to the fixture's root).
func isolatedFixture(t *testing.T, m isolate.Mode, dir string) *fixture {
	t.Helper()
	f := newFixture(t)
	root := filepath.Dir(f.dir)
	home := filepath.Join(root, "jazzhome")
	if err := os.MkdirAll(filepath.Join(home, "project"), 0o755); err != nil {
		t.Fatal(err)
	}
	parent := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "TMPDIR=" + f.tmp}
	ts := Tools(Options{Environ: func() []string { return parent }, Isolator: isolate.Fixed(m, "no namespaces in this test")})
	f.propose, f.twin = ts[0], ts[1]
	if dir != "" {
		f.dir = filepath.Join(root, dir)
	}
	f.env = &tools.Env{WorkDir: f.dir, Home: root, JazzHome: home, Secrets: secrets.NewSet(nil)}
	return f
}

// TestWorkingDirectoryInsideJazzHome: a command whose working directory
// lies in JAZZ_HOME (hidden from every program jazz starts) is refused up
// front with the reason, not approved and then refused by the runner as
// "changed since it was approved". Where nothing is hidden (no
// isolation), the same proposal is an ordinary approval request.
func TestWorkingDirectoryInsideJazzHome(t *testing.T) {
	for _, dir := range []string{"jazzhome", "jazzhome/project"} {
		f := isolatedFixture(t, isolate.Namespaces, dir)
		res := f.propose.Handler(context.Background(), f.env, args("ls"))
		if res.Success || res.Approval != nil || !strings.Contains(res.Error, "is inside "+f.env.JazzHome) ||
			!strings.Contains(res.Error, "hides from the programs it starts") {
			t.Fatalf("%s: %+v", dir, res)
		}
		// Named through a symlink, or as workingDirectory: the same.
		link := filepath.Join(filepath.Dir(f.env.JazzHome), "link")
		_ = os.Symlink(f.env.JazzHome, link)
		f.env.WorkDir = filepath.Dir(f.env.JazzHome)
		res = f.propose.Handler(context.Background(), f.env, args("ls", "workingDirectory", "link/project"))
		if res.Success || res.Approval != nil || !strings.Contains(res.Error, "is inside") {
			t.Fatalf("through a symlink: %+v", res)
		}
	}
	// The twin says so too, for arguments pinned before the directory was
	// hidden (a home moved over it).
	f := isolatedFixture(t, isolate.Namespaces, "work")
	execArgs, failed := f.approve(t, args("ls"))
	if failed != nil {
		t.Fatalf("outside JAZZ_HOME: %+v", failed)
	}
	f.env.JazzHome = f.dir
	res := f.twin.Handler(judged(t, context.Background(), execArgs, shellguard.ByHuman), f.env, execArgs)
	if res.Success || !strings.Contains(res.Error, "is inside "+f.dir) {
		t.Fatalf("twin: %+v", res)
	}
	// Control: without isolation nothing is hidden there.
	f = isolatedFixture(t, isolate.None, "jazzhome/project")
	if res := f.propose.Handler(context.Background(), f.env, args("ls")); res.Approval == nil {
		t.Fatalf("without isolation: %+v", res)
	}
}

// TestNoIsolationOnlyAPersonApproves: where the machine cannot hide
// jazz's secrets (Mode None), the approval request says so and is
// NotAutomatic, so no allowlist, static pass or classifier approves it;
// and should an automatic judgement reach the twin anyway, the command
// does not run. A person's approval runs it.
func TestNoIsolationOnlyAPersonApproves(t *testing.T) {
	f := isolatedFixture(t, isolate.None, "")
	res := f.propose.Handler(context.Background(), f.env, args("touch made"))
	if res.Approval == nil {
		t.Fatalf("propose: %+v", res)
	}
	if res.Approval.NotAutomatic == "" || !strings.Contains(res.Approval.Message, "can read jazz's own secrets") ||
		!strings.Contains(res.Approval.Message, "no namespaces in this test") {
		t.Fatalf("the request does not keep automatic approvals off: %+v", res.Approval)
	}
	execArgs := res.Approval.ExecuteArgs
	for _, by := range []shellguard.Approver{shellguard.ByStatic, shellguard.ByAllowlist, shellguard.ByClassifier, shellguard.ByPolicy, shellguard.ByTool} {
		res := f.twin.Handler(judged(t, context.Background(), execArgs, by), f.env, execArgs)
		if res.Success || !strings.Contains(res.Error, "runs only when a person approves it") {
			t.Fatalf("approved by %s: %+v", by, res)
		}
		if _, err := os.Stat(filepath.Join(f.dir, "made")); err == nil {
			t.Fatalf("approved by %s, the command ran", by)
		}
	}
	res = f.twin.Handler(judged(t, context.Background(), execArgs, shellguard.ByHuman), f.env, execArgs)
	if !res.Success {
		t.Fatalf("approved by a person: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "made")); err != nil {
		t.Fatal("approved by a person, the command did not run")
	}
	// Control: with isolation the same request is an ordinary one.
	g := isolatedFixture(t, isolate.Namespaces, "")
	if r := g.propose.Handler(context.Background(), g.env, args("touch made")); r.Approval == nil || r.Approval.NotAutomatic != "" {
		t.Fatalf("with isolation: %+v", r)
	}
}
