package shellguard

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/gitinert/hostile"
)

func TestPlanGit(t *testing.T) {
	cases := []struct {
		cmd  string
		dirs []string // relative to /w; nil: no git
		why  string
	}{
		{"ls && cat f", nil, ""},
		{"git status", []string{"."}, ""},
		{"cd sub && git status", []string{".", "sub"}, ""},
		{"(cd a); cd b; git log", []string{".", "a", "b", "a/b"}, ""},
		{"cd /elsewhere; git diff", []string{".", "/elsewhere"}, ""},
		{"cd; git status", []string{".", "/home/u"}, ""},
		{"cd $d && git status", nil, "computes"},
		{"cd - && git status", nil, "`cd -`"},
		{"for x in 1 2; do cd sub; git status; done", nil, "in a loop"},
		{"for x in 1 2; do cd /abs; git status; done", []string{".", "/abs"}, ""},
		{"pushd sub && git status && popd", []string{".", "sub"}, ""},
		{"cd a b; git status", []string{"."}, ""},
		{"cd sub", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.cmd, func(t *testing.T) {
			p := planGit(tc.cmd, "/w", "/home/u")
			if tc.why != "" {
				if !strings.Contains(p.why, tc.why) {
					t.Fatalf("why = %q, want %q", p.why, tc.why)
				}
				return
			}
			if p.why != "" {
				t.Fatalf("why = %q", p.why)
			}
			var want []string
			for _, d := range tc.dirs {
				if !filepath.IsAbs(d) {
					d = filepath.Join("/w", d)
				}
				want = append(want, d)
			}
			if !slices.Equal(p.dirs, want) && !(want == nil && len(p.progs) == 0) {
				t.Fatalf("dirs = %q, want %q", p.dirs, want)
			}
		})
	}
}

// TestRepoProblem: the propose-time check finds every hostile repository
// a command's git would run in (from the pinned directory, through cd,
// upward, through a .git file, included and worktree configuration, an
// alias it calls) and names the setting; an inert repository, a hook
// kept off by AutoEnv, and commands without git pass.
func TestRepoProblem(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	env := AutoEnv([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"})
	ctx := context.Background()
	root := t.TempDir()
	for _, r := range hostile.Repos(t, root) {
		t.Run(r.Name, func(t *testing.T) {
			why := RepoProblem(ctx, r.Command, r.Dir, env)
			if r.Knob == "" {
				if why != "" {
					t.Fatalf("RepoProblem = %q for an inert configuration", why)
				}
				return
			}
			if !strings.Contains(why, "the repository's config runs programs: "+r.Knob+" (") {
				t.Fatalf("RepoProblem(%q) = %q, want %s named", r.Command, why, r.Knob)
			}
			if r.Fired() {
				t.Fatal("the check ran the canary")
			}
		})
	}
	clean := filepath.Join(root, "fsmonitor", "..", "hook")
	if why := RepoProblem(ctx, "git status && git log -1", clean, env); why != "" {
		t.Fatalf("an inert repository: %q", why)
	}
	// The nested repository is reached only through the cd.
	outer := filepath.Join(root, "nested")
	if why := RepoProblem(ctx, "git status", outer, env); why != "" {
		t.Fatalf("the outer repository of nested: %q", why)
	}
	if why := RepoProblem(ctx, "ls; cd inner", outer, env); why != "" {
		t.Fatalf("no git, yet %q", why)
	}
	// An alias the command does not call is the repository's business.
	if why := RepoProblem(ctx, "git status", filepath.Join(root, "alias"), env); why != "" {
		t.Fatalf("an unused alias: %q", why)
	}
	if why := RepoProblem(ctx, "cd $x; git status", outer, env); !strings.Contains(why, "cannot know") {
		t.Fatalf("a computed cd: %q", why)
	}
}

// TestRepoProblemReadsNoIncludedFile: the check runs before anything is
// approved and outside jazz's isolation, so a repository's include must
// not make git read the file it names (JAZZ_HOME's config, a key file):
// the include itself is the risk named, and nothing of the included
// file, its keys or its values, reaches the answer.
func TestRepoProblemReadsNoIncludedFile(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	env := AutoEnv([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"})
	secret := filepath.Join(root, "secret-home", "keys")
	if err := os.MkdirAll(filepath.Dir(secret), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("[vault]\n\tsealedtoken = sk-never-read-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(root, "repo")
	for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "config", "include.path", secret},
		{"-C", repo, "config", "includeIf.gitdir:" + repo + "/.path", secret}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	why := RepoProblem(context.Background(), "git status", repo, env)
	if !strings.Contains(why, "include.path (") || !strings.Contains(why, "includeif.gitdir:") {
		t.Fatalf("RepoProblem = %q, want the includes named", why)
	}
	if strings.Contains(why, "vault") || strings.Contains(why, "sealedtoken") || strings.Contains(why, "sk-never") {
		t.Fatalf("the included file was read: %q", why)
	}
}
