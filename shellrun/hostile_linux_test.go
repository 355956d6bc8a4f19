package shellrun

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/gitinert/hostile"
	"github.com/jazz-run/jazz/shellguard"
)

// TestRunnerRefusesHostileRepositories: an automatically approved git
// command runs only in a repository whose own configuration runs
// nothing, checked where git is about to run (after any cd) with the
// environment it gets; the canary of every hostile repository never
// runs. The same commands approved by a person do run it, so the test
// can fail.
func TestRunnerRefusesHostileRepositories(t *testing.T) {
	if _, err := os.Stat("/usr/bin/git"); err != nil {
		t.Skip("no git")
	}
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + os.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
	for _, mode := range []string{"person", "allowlist"} {
		root := t.TempDir()
		for _, r := range hostile.Repos(t, root) {
			t.Run(mode+"/"+r.Name, func(t *testing.T) {
				real, state, err := PinDir(r.Dir)
				if err != nil {
					t.Fatal(err)
				}
				req := Request{Command: r.Command, Dir: real, DirState: state, Timeout: 30e9}
				if mode == "person" {
					req.Judgement = shellguard.Judgement{By: shellguard.ByHuman}
				} else {
					req.Judgement = shellguard.Judge(r.Command, shellguard.ByAllowlist, []string{"git", "cd"}, "")
				}
				req.Env = req.Judgement.ChildEnv(base)
				out, err := Run(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case mode == "person":
					if r.Fires && !r.Fired() {
						t.Fatalf("approved by a person, %q did not run the canary: %+v", r.Command, out)
					}
				case r.Fired():
					t.Fatalf("auto-approved, %q ran the canary: %+v", r.Command, out)
				case r.Knob != "" && (!strings.HasPrefix(out.NotJudged, "not auto-approved: ") || !strings.Contains(out.NotJudged, "the repository's config runs programs: "+r.Knob)):
					t.Fatalf("refusal %q, want one naming %s", out.NotJudged, r.Knob)
				case r.Knob == "" && out.NotJudged != "":
					t.Fatalf("refused %q, whose repository's configuration is inert: %s", r.Command, out.NotJudged)
				}
			})
		}
	}
}
