package gittools

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
)

// withPinSeam rebuilds w's tools so that seam runs inside each twin
// between its read of the hooks (the one whose hash matched the
// approval) and the git that runs them, given the directories of the
// twin's copies (the repository's, a local remote's).
func withPinSeam(w *world, seam func(local, remote string)) {
	w.t.Helper()
	reg, err := tools.NewRegistry(Tools(Options{Environ: func() []string { return w.environ }, hooksPinned: seam})...)
	if err != nil {
		w.t.Fatal(err)
	}
	w.reg = reg
}

// markHook is a hook that appends "<tag> <name>" to marker when it runs.
func markHook(t *testing.T, path, tag, marker string) {
	t.Helper()
	body := "#!/bin/sh\necho '" + tag + " " + filepath.Base(path) + "' >> '" + marker + "'\nexit 0\n"
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestTwinRunsTheApprovedHookBytesOnly: under high-risk, for every twin,
// the hooks directory is changed inside the twin after the read its
// approval was checked against and before git runs: every approved hook
// is rewritten, but the one git runs (the control), which is swapped for
// a symlink to another script, and every hook git knows that was not
// there is added. The evil versions never run, and the approved control
// hook does, from the copy, which is gone afterwards. (One run does all
// three: each is enough to make an evil hook run without the copy.)
func TestTwinRunsTheApprovedHookBytesOnly(t *testing.T) {
	t.Parallel()
	for _, c := range hookCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			setPolicy(w, messages.PolicyHighRisk)
			dir, _ := hookRepo(w, c)
			hooks := filepath.Join(dir, ".git", "hooks")
			marker := filepath.Join(t.TempDir(), "hooks-ran")
			// Every other hook is there when the call is proposed.
			var approved, added []string
			for i, h := range everyHook {
				if h == c.control || i%2 == 0 {
					approved = append(approved, h)
				} else {
					added = append(added, h)
				}
			}
			for _, h := range approved {
				markHook(t, filepath.Join(hooks, h), "approved", marker)
			}
			var copyDir string
			withPinSeam(w, func(d, _ string) {
				copyDir = d
				for _, h := range approved {
					if h != c.control {
						markHook(t, filepath.Join(hooks, h), "evil rewritten", marker)
					}
				}
				for _, h := range added {
					markHook(t, filepath.Join(hooks, h), "evil added", marker)
				}
				evil := filepath.Join(t.TempDir(), c.control)
				markHook(t, evil, "evil linked", marker)
				must(t, os.Remove(filepath.Join(hooks, c.control)))
				must(t, os.Symlink(evil, filepath.Join(hooks, c.control)))
			})
			p := w.propose(c.name, c.args)
			ok(t, w.approve(p))
			ran := hooksRan(marker)
			if strings.Contains(ran, "evil") {
				t.Fatalf("a hook changed after the twin's check ran:\n%s", ran)
			}
			if !strings.Contains("\n"+ran+"\n", "\napproved "+c.control+"\n") {
				t.Fatalf("the approved hook %s did not run; ran:\n%s", c.control, ran)
			}
			if copyDir == "" {
				t.Fatal("the twin made no copy of the approved hooks")
			}
			if _, err := os.Lstat(filepath.Dir(copyDir)); !os.IsNotExist(err) {
				t.Fatalf("the copy of the hooks %s is still there after the call (%v)", copyDir, err)
			}
		})
	}
}

// TestHookCopyGoesWhenTheCallIsCancelled: a twin cancelled while its
// git runs an approved hook leaves no copy of the hooks behind, and
// returns within a bound.
func TestHookCopyGoesWhenTheCallIsCancelled(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	setPolicy(w, messages.PolicyHighRisk)
	c := hookCases()[2] // git_commit, whose pre-commit runs first
	dir, _ := hookRepo(w, c)
	started := filepath.Join(t.TempDir(), "started")
	writeFile(t, filepath.Join(dir, ".git", "hooks", "pre-commit"), "#!/bin/sh\ntouch '"+started+"'\nsleep 60\n")
	must(t, os.Chmod(filepath.Join(dir, ".git", "hooks", "pre-commit"), 0o755))
	pinned := make(chan string, 1)
	withPinSeam(w, func(d, _ string) { pinned <- d })
	p := w.propose(c.name, c.args)
	twin, _ := w.reg.Lookup(p.Approval.ExecuteToolName)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan tools.Result, 1)
	go func() { done <- twin.Handler(ctx, w.env, p.Approval.ExecuteArgs) }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the approved hook never started")
		}
	}
	var copyDir string
	select {
	case copyDir = <-pinned:
	default:
		t.Fatal("the hook started, but the twin made no copy of the approved hooks")
	}
	if _, err := os.Stat(filepath.Join(copyDir, "pre-commit")); err != nil {
		t.Fatalf("while the hook runs, its copy is not there: %v", err)
	}
	cancel()
	select {
	case r := <-done:
		if r.Success {
			t.Fatalf("a cancelled commit succeeded: %+v", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the cancelled twin did not return")
	}
	if _, err := os.Lstat(filepath.Dir(copyDir)); !os.IsNotExist(err) {
		t.Fatalf("the copy of the hooks %s is still there after the cancelled call (%v)", copyDir, err)
	}
}

// TestHookSourcingAFileBesideItFailsClosed: husky-style hooks source a
// file next to them that the approval neither showed nor hashed. It is
// not copied, so the hook fails and the commit is not made, and the
// sourced file's code never runs (even when it is rewritten after the
// approval, as here).
func TestHookSourcingAFileBesideItFailsClosed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	setPolicy(w, messages.PolicyHighRisk)
	c := hookCases()[2]
	dir, _ := hookRepo(w, c)
	hooks := filepath.Join(dir, ".git", "hooks")
	marker := filepath.Join(t.TempDir(), "hooks-ran")
	writeFile(t, filepath.Join(hooks, "_", "husky.sh"), "echo sourced >> '"+marker+"'\n")
	writeFile(t, filepath.Join(hooks, "pre-commit"), "#!/bin/sh\n. \"$(dirname \"$0\")/_/husky.sh\"\necho 'approved pre-commit' >> '"+marker+"'\n")
	must(t, os.Chmod(filepath.Join(hooks, "pre-commit"), 0o755))
	head := w.git(dir, "rev-parse", "HEAD")
	p := w.propose(c.name, c.args)
	if !strings.Contains(p.Approval.PreviewDiff, "not copied") {
		t.Errorf("the preview does not say files beside the hooks are not copied:\n%s", p.Approval.PreviewDiff)
	}
	r := w.approve(p)
	if r.Success {
		t.Fatalf("the commit succeeded though its hook could not source its helper: %+v", r)
	}
	if got := hooksRan(marker); got != "" {
		t.Fatalf("hook code ran:\n%s", got)
	}
	if got := w.git(dir, "rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD moved to %s", got)
	}
}

// TestPushRunsOnlyTheRemoteHooksItWasApprovedWith: under high-risk a
// push to a repository on this machine runs that repository's hooks
// (receive-pack's): the preview names them, hooks planted there after
// the preview make the twin refuse, and hooks rewritten, added or
// swapped for a link after the twin's check do not run, while the
// approved ones do.
func TestPushRunsOnlyTheRemoteHooksItWasApprovedWith(t *testing.T) {
	t.Parallel()
	c := hookCases()[6] // git_push
	if c.name != "git_push" {
		t.Fatalf("hookCases()[6] is %s", c.name)
	}
	const control = "pre-receive"
	t.Run("planted after the preview", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		setPolicy(w, messages.PolicyHighRisk)
		_, remote := hookRepo(w, c)
		marker := filepath.Join(t.TempDir(), "hooks-ran")
		p := w.propose(c.name, c.args)
		plantHooks(t, filepath.Join(remote, "hooks"), marker)
		r := w.approve(p)
		if r.Success || !strings.Contains(r.Error, "changed since the preview was approved") {
			t.Fatalf("want a refusal over the remote's hooks the approval did not cover, got success=%v %q", r.Success, r.Error)
		}
		if got := hooksRan(marker); got != "" {
			t.Fatalf("hooks ran:\n%s", got)
		}
	})
	t.Run("changed after the check", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		setPolicy(w, messages.PolicyHighRisk)
		_, remote := hookRepo(w, c)
		hooks := filepath.Join(remote, "hooks")
		marker := filepath.Join(t.TempDir(), "hooks-ran")
		approved := []string{control, "update", "post-receive"}
		for _, h := range approved {
			markHook(t, filepath.Join(hooks, h), "approved", marker)
		}
		var copyDir string
		withPinSeam(w, func(_, d string) {
			copyDir = d
			markHook(t, filepath.Join(hooks, "update"), "evil rewritten", marker)
			for _, h := range []string{"reference-transaction", "post-update", "proc-receive"} {
				markHook(t, filepath.Join(hooks, h), "evil added", marker)
			}
			evil := filepath.Join(t.TempDir(), control)
			markHook(t, evil, "evil linked", marker)
			must(t, os.Remove(filepath.Join(hooks, control)))
			must(t, os.Symlink(evil, filepath.Join(hooks, control)))
		})
		p := w.propose(c.name, c.args)
		if !strings.Contains(p.Approval.PreviewDiff, remote) || !strings.Contains(p.Approval.PreviewDiff, control) {
			t.Errorf("the preview does not name the remote's hooks:\n%s", p.Approval.PreviewDiff)
		}
		ok(t, w.approve(p))
		ran := hooksRan(marker)
		if strings.Contains(ran, "evil") {
			t.Fatalf("a hook of the remote changed after the twin's check ran:\n%s", ran)
		}
		for _, h := range approved {
			if !strings.Contains("\n"+ran+"\n", "\napproved "+h+"\n") {
				t.Fatalf("the approved remote hook %s did not run; ran:\n%s", h, ran)
			}
		}
		if copyDir == "" {
			t.Fatal("the twin made no copy of the remote's approved hooks")
		}
		if _, err := os.Lstat(filepath.Dir(copyDir)); !os.IsNotExist(err) {
			t.Fatalf("the copy of the remote's hooks %s is still there after the call (%v)", copyDir, err)
		}
	})
}

// TestRemoteHookCopyUnderAnAwkwardTMPDIR: the copy of a local remote's
// hooks reaches its receive-pack through a shell command line, so a
// temporary directory whose name holds a space, a quote and a `$` is
// still one word there: the approved hook runs, from the copy.
func TestRemoteHookCopyUnderAnAwkwardTMPDIR(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), `it's a $HOME; dir`)
	must(t, os.MkdirAll(tmp, 0o700))
	t.Setenv("TMPDIR", tmp)
	w := newWorld(t)
	setPolicy(w, messages.PolicyHighRisk)
	c := hookCases()[6]
	_, remote := hookRepo(w, c)
	marker := filepath.Join(t.TempDir(), "hooks-ran")
	writeFile(t, filepath.Join(remote, "hooks", "pre-receive"), "#!/bin/sh\necho \"approved pre-receive $0\" >> '"+marker+"'\n")
	must(t, os.Chmod(filepath.Join(remote, "hooks", "pre-receive"), 0o755))
	ok(t, w.approve(w.propose(c.name, c.args)))
	want := "approved pre-receive " + filepath.Join(tmp, "jazz-hooks-")
	if got := hooksRan(marker); !strings.HasPrefix(got, want) {
		t.Fatalf("the remote's approved hook did not run from the copy under %q; ran:\n%s", tmp, got)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("the copy is still in %s after the call: %v", tmp, left)
	}
}

// TestHookThatIsASecretIsNotCopied: a twin copies its hooks' bytes where
// the sandboxed git and hooks can read them, so a hook that names a file
// of JAZZ_HOME (a link to it, or a hard link of it) would carry jazz's
// secret out of the sandbox, to be read by another approved hook. Such a
// hook is refused when the call is proposed; nothing is copied or run.
func TestHookThatIsASecretIsNotCopied(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"symlink", "hard link"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			setPolicy(w, messages.PolicyHighRisk)
			c := hookCases()[2]
			dir, _ := hookRepo(w, c)
			secret := filepath.Join(w.env.JazzHome, "key")
			writeFile(t, secret, "SECRET-KEY\n")
			must(t, os.Chmod(secret, 0o700))
			hook := filepath.Join(dir, ".git", "hooks", "post-commit")
			if how == "symlink" {
				must(t, os.Symlink(secret, hook))
			} else {
				must(t, os.Link(secret, hook))
			}
			r := w.call(c.name, c.args)
			if r.Approval != nil || r.Success || !strings.Contains(r.Error, "post-commit") {
				t.Fatalf("want the call refused over the hook that is a secret, got approval=%v success=%v %q", r.Approval != nil, r.Success, r.Error)
			}
			if strings.Contains(r.Error, "SECRET-KEY") {
				t.Fatalf("the refusal shows the secret: %q", r.Error)
			}
		})
	}
}

// TestConfiguredHooksPathIsPinnedToo: the hooks directory a repository's
// own configuration names (core.hooksPath, relative as .githooks or
// absolute elsewhere) is read, shown and copied like .git/hooks, and
// what is rewritten there after the twin's check does not run.
func TestConfiguredHooksPathIsPinnedToo(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"relative", "absolute"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			setPolicy(w, messages.PolicyHighRisk)
			c := hookCases()[2]
			dir, _ := hookRepo(w, c)
			hooks, value := filepath.Join(dir, ".githooks"), ".githooks"
			if where == "absolute" {
				hooks = filepath.Join(t.TempDir(), "shared-hooks")
				value = hooks
			}
			must(t, os.MkdirAll(hooks, 0o755))
			w.git(dir, "config", "core.hooksPath", value)
			marker := filepath.Join(t.TempDir(), "hooks-ran")
			markHook(t, filepath.Join(hooks, "pre-commit"), "approved", marker)
			withPinSeam(w, func(string, string) {
				markHook(t, filepath.Join(hooks, "pre-commit"), "evil", marker)
				markHook(t, filepath.Join(hooks, "commit-msg"), "evil", marker)
			})
			p := w.propose(c.name, c.args)
			if !strings.Contains(p.Approval.PreviewDiff, "pre-commit") {
				t.Errorf("the preview does not name the configured directory's hook:\n%s", p.Approval.PreviewDiff)
			}
			ok(t, w.approve(p))
			if got := hooksRan(marker); got != "approved pre-commit" {
				t.Fatalf("want only the approved pre-commit to run, ran:\n%s", got)
			}
		})
	}
}

// TestHighRiskHooksRacedAtEveryStep races the commit and push twins
// under high-risk at each of their git calls in turn (raceRig): right
// before it, another process overwrites every approved hook, of the
// repository and of the local remote, and adds every other hook git
// knows. Whatever the step, no overwritten or added hook runs: the twin
// refuses (the change came before its check) or runs the approved hooks
// from its copy, and then the control hook is among those that ran.
func TestHighRiskHooksRacedAtEveryStep(t *testing.T) {
	rig := newRaceRig(t)
	for _, c := range []hookCase{hookCases()[2], hookCases()[6]} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			setPolicy(w, messages.PolicyHighRisk)
			dir, remote := hookRepo(w, c)
			marker := filepath.Join(t.TempDir(), "hooks-ran")
			dirs := []string{filepath.Join(dir, ".git", "hooks"), filepath.Join(remote, "hooks")}
			for _, d := range dirs {
				for i, h := range everyHook {
					if i%2 == 0 || h == c.control || h == "pre-receive" {
						markHook(t, filepath.Join(d, h), "approved", marker)
					}
				}
			}
			evil := t.TempDir()
			for _, h := range everyHook {
				markHook(t, filepath.Join(evil, h), "evil", marker)
			}
			tmpl, rtmpl := dir+".tmpl", remote+".tmpl"
			copyRepo(t, dir, tmpl)
			copyRepo(t, remote, rtmpl)
			p := w.propose(c.name, c.args)
			attack := "cp -p " + strconv.Quote(evil) + "/* " + strconv.Quote(dirs[0]) + "/ && cp -p " + strconv.Quote(evil) + "/* " + strconv.Quote(dirs[1]) + "/\n"
			step := 1
			if testing.Short() {
				step = 3
			}
			outcomes := map[string]int{}
			for at := 1; ; at += step {
				for _, d := range [][2]string{{tmpl, dir}, {rtmpl, remote}} {
					copyRepo(t, d[0], d[1])
				}
				must(t, os.RemoveAll(marker))
				rig.arm(at, attack)
				r := w.approve(p)
				calls := rig.disarm()
				ran := hooksRan(marker)
				if strings.Contains(ran, "evil") {
					t.Fatalf("hooks overwritten before git call %d of %d of the twin ran:\n%s", at, calls, ran)
				}
				switch {
				case r.Success && !strings.Contains("\n"+ran+"\n", "\napproved "+c.control+"\n"):
					t.Fatalf("the twin succeeded with the attack at call %d, but the approved %s did not run; ran:\n%s", at, c.control, ran)
				case r.Success:
					outcomes["approved hooks ran"]++
				default:
					outcomes["refused"]++
				}
				if at > calls {
					if !r.Success {
						t.Fatalf("refused with nothing changed: %q", r.Error)
					}
					break
				}
			}
			t.Logf("outcomes: %v", outcomes)
			if outcomes["approved hooks ran"] < 2 || outcomes["refused"] < 1 {
				t.Errorf("the sweep did not reach both sides of the twin's check: %v", outcomes)
			}
		})
	}
}
