package gittools

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/messages"
)

// everyHook is each hook git runs on the client or in a repository it
// pushes to.
var everyHook = []string{
	"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit", "prepare-commit-msg",
	"commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push", "pre-receive", "update",
	"proc-receive", "post-receive", "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc",
	"post-rewrite", "sendemail-validate", "fsmonitor-watchman", "p4-changelist", "post-index-change",
}

// plantHooks writes every hook into hooksDir, each appending its name to
// marker when it runs.
func plantHooks(t *testing.T, hooksDir, marker string) {
	t.Helper()
	if err := os.MkdirAll(hooksDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, h := range everyHook {
		body := "#!/bin/sh\necho " + h + " >> '" + marker + "'\ncat >/dev/null 2>&1 </dev/null\nexit 0\n"
		if err := os.WriteFile(filepath.Join(hooksDir, h), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// hookCase is one twin: a repository in which its change does something,
// the call, and a hook its git runs when hooks are on (the control).
type hookCase struct {
	name    string
	args    map[string]any
	setup   func(w *world, dir, remote string)
	control string
}

func hookCases() []hookCase {
	return []hookCase{
		{"git_add", map[string]any{"files": []string{"new.txt"}}, func(w *world, dir, _ string) {
			writeFile(w.t, filepath.Join(dir, "new.txt"), "new\n")
		}, "post-index-change"},
		{"git_rm", map[string]any{"files": []string{"README"}}, nil, "post-index-change"},
		{"git_commit", map[string]any{"message": "m", "all": true}, func(w *world, dir, _ string) {
			writeFile(w.t, filepath.Join(dir, "README"), "changed\n")
		}, "pre-commit"},
		{"git_checkout", map[string]any{"branch": "side"}, nil, "post-checkout"},
		{"git_merge", map[string]any{"branch": "side"}, nil, "post-merge"},
		{"git_tag", map[string]any{"create": "v9"}, nil, "reference-transaction"},
		{"git_push", map[string]any{"branch": "side"}, nil, "pre-push"},
		{"git_pull", map[string]any{"branch": "main"}, func(w *world, dir, remote string) {
			other := filepath.Join(w.home, "other")
			w.git(w.home, "clone", "-q", remote, other)
			w.git(other, "commit", "-q", "--allow-empty", "-m", "theirs")
			w.git(other, "push", "-q", "origin", "main")
			w.git(dir, "fetch", "-q", "origin")
		}, "post-merge"},
	}
}

// hookRepo is a repository with a branch side one commit ahead of main
// and a local bare remote holding main.
func hookRepo(w *world, c hookCase) (dir, remote string) {
	remote = filepath.Join(w.home, "remote.git")
	w.git(w.home, "init", "-q", "--bare", remote)
	dir = w.repo("r")
	w.git(dir, "remote", "add", "origin", remote)
	w.git(dir, "push", "-q", "-u", "origin", "main")
	w.git(dir, "checkout", "-q", "-b", "side")
	writeFile(w.t, filepath.Join(dir, "side.txt"), "side\n")
	w.git(dir, "add", "side.txt")
	w.git(dir, "commit", "-q", "-m", "side work")
	if c.name != "git_push" {
		w.git(dir, "checkout", "-q", "main")
	}
	if c.setup != nil {
		c.setup(w, dir, remote)
	}
	w.env.WorkDir = dir
	return dir, remote
}

func hooksRan(marker string) string {
	b, _ := os.ReadFile(marker)
	return strings.TrimSpace(string(b))
}

// TestHooksPlantedDuringTheTwinNeverRun: for every twin, hooks written
// into the repository and into the local remote a push goes to while the
// twin works (before each git call it makes in turn, after its own check
// found none), as another call of the batch or a program left running
// could, never run: below high-risk no git a twin starts runs hooks.
// Without the rule some step of every twin runs them (the control test
// below shows the hooks are ones these twins run).
func TestHooksPlantedDuringTheTwinNeverRun(t *testing.T) {
	rig := newRaceRig(t)
	for _, c := range hookCases() {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			dir, remote := hookRepo(w, c)
			tmpl := dir + ".tmpl"
			copyRepo(t, dir, tmpl)
			rtmpl := remote + ".tmpl"
			copyRepo(t, remote, rtmpl)
			p := w.propose(c.name, c.args)
			marker := filepath.Join(t.TempDir(), "hooks-ran")
			plant := filepath.Join(t.TempDir(), "plant")
			plantHooks(t, plant, marker)
			attack := "cp -p " + strconv.Quote(plant) + "/* " + strconv.Quote(filepath.Join(dir, ".git", "hooks")) + "/ && cp -p " +
				strconv.Quote(plant) + "/* " + strconv.Quote(filepath.Join(remote, "hooks")) + "/\n"
			// Every fourth step (ninth with -short): the rule is one for
			// every git a twin starts, and a full sweep of eight twins
			// is some 3000 git processes.
			step := 4
			if testing.Short() {
				step = 9
			}
			outcomes := map[string]int{}
			for at := 1; ; at += step {
				for _, d := range [][2]string{{tmpl, dir}, {rtmpl, remote}} {
					copyRepo(t, d[0], d[1])
				}
				rig.arm(at, attack)
				r := w.approve(p)
				calls := rig.disarm()
				if got := hooksRan(marker); got != "" {
					t.Fatalf("hooks planted before git call %d of %d of the twin ran:\n%s", at, calls, got)
				}
				if r.Success {
					outcomes["done"]++
				} else {
					outcomes["refused"]++
				}
				if at > calls {
					if !r.Success {
						t.Fatalf("refused with nothing planted: %q", r.Error)
					}
					break
				}
			}
			t.Logf("outcomes: %v", outcomes)
			if outcomes["done"] < 2 {
				t.Errorf("no step but the last let the twin run with hooks planted: %v", outcomes)
			}
		})
	}
}

// TestTwinRefusesHooksTheApprovalDidNotCover: under high-risk, where the
// repository's hooks may run, the twin refuses hooks added after its
// approval; and the control shows the same twin does run hooks that
// were there when it was approved, so the marker can appear.
func TestTwinRefusesHooksTheApprovalDidNotCover(t *testing.T) {
	t.Parallel()
	for _, c := range hookCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			t.Run("planted after", func(t *testing.T) {
				w := newWorld(t)
				setPolicy(w, messages.PolicyHighRisk)
				dir, _ := hookRepo(w, c)
				marker := filepath.Join(t.TempDir(), "hooks-ran")
				p := w.propose(c.name, c.args)
				plantHooks(t, filepath.Join(dir, ".git", "hooks"), marker)
				r := w.approve(p)
				if r.Success || !strings.Contains(r.Error, "changed since the preview was approved") {
					t.Fatalf("want a refusal over hooks the approval did not cover, got success=%v %q", r.Success, r.Error)
				}
				if got := hooksRan(marker); got != "" {
					t.Fatalf("hooks ran:\n%s", got)
				}
			})
			t.Run("approved (control)", func(t *testing.T) {
				w := newWorld(t)
				setPolicy(w, messages.PolicyHighRisk)
				dir, _ := hookRepo(w, c)
				marker := filepath.Join(t.TempDir(), "hooks-ran")
				plantHooks(t, filepath.Join(dir, ".git", "hooks"), marker)
				p := w.propose(c.name, c.args)
				if !strings.Contains(p.Approval.PreviewDiff, "Hooks git may run") || !strings.Contains(p.Approval.PreviewDiff, c.control) {
					t.Errorf("the preview does not name the hooks:\n%s", p.Approval.PreviewDiff)
				}
				ok(t, w.approve(p))
				if got := hooksRan(marker); !strings.Contains("\n"+got+"\n", "\n"+c.control+"\n") {
					t.Fatalf("the control hook %s did not run with hooks approved; ran:\n%s", c.control, got)
				}
			})
		})
	}
}

// TestLocalRemoteHooksRunForPlainGit is the control of the remote half
// of the sweep: a plain push to the test's remote runs its hooks.
func TestLocalRemoteHooksRunForPlainGit(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir, remote := hookRepo(w, hookCases()[6])
	marker := filepath.Join(t.TempDir(), "hooks-ran")
	plantHooks(t, filepath.Join(remote, "hooks"), marker)
	w.git(dir, "-c", "core.hooksPath=/dev/null", "push", "-q", "origin", "side")
	if !strings.Contains(hooksRan(marker), "pre-receive") {
		t.Fatalf("the remote's hooks do not run for plain git; ran: %q", hooksRan(marker))
	}
}
