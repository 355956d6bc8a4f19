package shelltool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/shellguard"
)

// TestGitInitOutsideDotGitNeedsAPerson: a git init or clone that makes
// its HEAD in a directory the command chooses (--bare, --git-dir,
// GIT_DIR) keeps the config it finds there, so a config laid first makes
// a repository whose pager or fsmonitor runs on the next git command; and
// a template the command chooses (an abbreviated --template, or the
// environment's GIT_TEMPLATE_DIR) plants hooks in a new .git. Each is a
// person's when proposed, and under the high-risk policy it is refused at
// run time before git makes anything.
func TestGitInitOutsideDotGitNeedsAPerson(t *testing.T) {
	f := newFixture(t)
	if err := os.MkdirAll(filepath.Join(f.dir, "tpl", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "tpl", "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plant := `mkdir -p d && printf '[core]\n\tpager = evil\n' > d/config && `
	for cmd, made := range map[string]string{
		plant + "git init -q --bare d":                    "d/HEAD",
		plant + "git init -q --ba d":                      "d/HEAD",
		plant + "git --git-dir=d init -q":                 "d/HEAD",
		plant + "export GIT_DIR=d; git init -q":           "d/HEAD",
		plant + "GIT_DIR=d git init -q":                   "d/HEAD",
		plant + "env GIT_DIR=d git init -q":               "d/HEAD",
		plant + "cd d && git init -q --bare":              "d/HEAD",
		"git init -q --templ=tpl n":                       "n",
		"GIT_TEMPLATE_DIR=$PWD/tpl git init -q n":         "n",
		"export GIT_TEMPLATE_DIR=$PWD/tpl; git init -q n": "n",
		"export XDG_CONFIG_HOME=$PWD/x; git init -q n":    "n",
		"export GIT_CONFIG_PARAMETERS=x; git init -q n":   "n",
	} {
		for _, p := range []string{"d", "n"} {
			if err := os.RemoveAll(filepath.Join(f.dir, p)); err != nil {
				t.Fatal(err)
			}
		}
		res := f.propose.Handler(context.Background(), f.env, args(cmd))
		if res.Approval == nil {
			t.Errorf("%q: no approval request: %+v", cmd, res)
			continue
		}
		if res.Approval.HumanOnly == "" {
			t.Errorf("%q: not human-only when proposed", cmd)
		}
		out := f.twin.Handler(judged(t, context.Background(), res.Approval.ExecuteArgs, shellguard.ByPolicy), f.env, res.Approval.ExecuteArgs)
		if _, err := os.Lstat(filepath.Join(f.dir, made)); err == nil {
			t.Errorf("%q ran under the high-risk policy and made %s", cmd, made)
		}
		if out.Success || !strings.Contains(out.Error, "only a person may approve") {
			t.Errorf("%q under the high-risk policy: not refused at run time: %+v", cmd, out)
		}
	}
}
