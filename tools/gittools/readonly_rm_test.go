package gittools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitRmOfAReadOnlyFileNeedsAPerson: git_rm deletes the work-tree
// file, which needs no write permission on the file, so a tracked file
// its owner made read-only (chmod a-w) went on any approval, as rm's did
// (writetools): now only a person approves it, and is told it is
// read-only; removing it from the index only (cached) keeps the file and
// is approved as before; a file made read-only after its preview is a
// change.
func TestGitRmOfAReadOnlyFileNeedsAPerson(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.repo("r")
	w.env.WorkDir = dir
	writeFile(t, filepath.Join(dir, "ro.txt"), "keep\n")
	writeFile(t, filepath.Join(dir, "rw.txt"), "plain\n")
	w.git(dir, "add", "ro.txt", "rw.txt")
	w.git(dir, "commit", "-q", "-m", "two")
	if err := os.Chmod(filepath.Join(dir, "ro.txt"), 0o444); err != nil {
		t.Fatal(err)
	}

	p := w.propose("git_rm", map[string]any{"files": []string{"ro.txt"}})
	if why := p.Approval.HumanOnly; !strings.Contains(why, "read-only") || !strings.Contains(why, "ro.txt") {
		t.Errorf("git_rm of a read-only file: human-only %q", why)
	}
	if !strings.Contains(p.Approval.Message, "read-only") {
		t.Errorf("the message does not say it is read-only: %s", p.Approval.Message)
	}
	if c := w.propose("git_rm", map[string]any{"files": []string{"ro.txt"}, "cached": true}); c.Approval.HumanOnly != "" {
		t.Errorf("git_rm --cached keeps the file, yet: %s", c.Approval.HumanOnly)
	}
	rw := w.propose("git_rm", map[string]any{"files": []string{"rw.txt"}})
	if rw.Approval.HumanOnly != "" {
		t.Errorf("git_rm of a writable file: %s", rw.Approval.HumanOnly)
	}
	if err := os.Chmod(filepath.Join(dir, "rw.txt"), 0o444); err != nil {
		t.Fatal(err)
	}
	wantChanged(t, w.approve(rw))
	if _, err := os.Stat(filepath.Join(dir, "rw.txt")); err != nil {
		t.Errorf("rw.txt went: %v", err)
	}
	// A person's approval still removes it.
	ok(t, w.approve(p))
	if _, err := os.Stat(filepath.Join(dir, "ro.txt")); !os.IsNotExist(err) {
		t.Errorf("ro.txt still there: %v", err)
	}
}

// TestGitCheckoutOverAReadOnlyFileNeedsAPerson: a checkout that rewrites
// a tracked file its owner made read-only is approved by a person only,
// and says so; one that leaves it alone is approved as before.
func TestGitCheckoutOverAReadOnlyFileNeedsAPerson(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.repo("r")
	w.env.WorkDir = dir
	writeFile(t, filepath.Join(dir, "ro.txt"), "one\n")
	writeFile(t, filepath.Join(dir, "other.txt"), "one\n")
	w.git(dir, "add", ".")
	w.git(dir, "commit", "-q", "-m", "one")
	w.git(dir, "branch", "same")
	w.git(dir, "checkout", "-q", "-b", "two")
	writeFile(t, filepath.Join(dir, "ro.txt"), "two\n")
	w.git(dir, "commit", "-q", "-am", "two")
	w.git(dir, "checkout", "-q", "main")
	if err := os.Chmod(filepath.Join(dir, "ro.txt"), 0o444); err != nil {
		t.Fatal(err)
	}
	p := w.propose("git_checkout", map[string]any{"branch": "two"})
	if why := p.Approval.HumanOnly; !strings.Contains(why, "read-only") || !strings.Contains(why, "ro.txt") || !strings.Contains(p.Approval.Message, "read-only") {
		t.Errorf("checkout rewriting a read-only file: human-only %q, message %q", why, p.Approval.Message)
	}
	if q := w.propose("git_checkout", map[string]any{"branch": "same"}); q.Approval.HumanOnly != "" {
		t.Errorf("a checkout that changes no file: %s", q.Approval.HumanOnly)
	}
}

// TestGitMergeOverAReadOnlyFileNeedsAPerson: a merge that rewrites a
// tracked file its owner made read-only is approved by a person only.
func TestGitMergeOverAReadOnlyFileNeedsAPerson(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.repo("r")
	w.env.WorkDir = dir
	writeFile(t, filepath.Join(dir, "ro.txt"), "one\n")
	w.git(dir, "add", ".")
	w.git(dir, "commit", "-q", "-m", "one")
	w.git(dir, "checkout", "-q", "-b", "two")
	writeFile(t, filepath.Join(dir, "ro.txt"), "two\n")
	w.git(dir, "commit", "-q", "-am", "two")
	w.git(dir, "checkout", "-q", "-b", "three", "main")
	writeFile(t, filepath.Join(dir, "new.txt"), "three\n")
	w.git(dir, "add", ".")
	w.git(dir, "commit", "-q", "-m", "three")
	w.git(dir, "checkout", "-q", "main")
	if err := os.Chmod(filepath.Join(dir, "ro.txt"), 0o444); err != nil {
		t.Fatal(err)
	}
	p := w.propose("git_merge", map[string]any{"branch": "two"})
	if why := p.Approval.HumanOnly; !strings.Contains(why, "read-only") || !strings.Contains(why, "ro.txt") {
		t.Errorf("a merge rewriting a read-only file: human-only %q", why)
	}
	if q := w.propose("git_merge", map[string]any{"branch": "three"}); q.Approval.HumanOnly != "" {
		t.Errorf("a merge that leaves it alone: %s", q.Approval.HumanOnly)
	}
}

// TestGitPullOverAReadOnlyFileNeedsAPerson: a pull whose fetched commits
// rewrite a tracked file its owner made read-only is approved by a
// person only; the same pull over a writable file is approved as before.
func TestGitPullOverAReadOnlyFileNeedsAPerson(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bare := filepath.Join(w.home, "remote.git")
	w.git(w.home, "init", "-q", "--bare", bare)
	dir := w.repo("r")
	w.git(dir, "remote", "add", "origin", bare)
	w.git(dir, "push", "-q", "origin", "main")
	w.git(dir, "branch", "-q", "--set-upstream-to=origin/main")
	other := filepath.Join(w.home, "other")
	w.git(w.home, "clone", "-q", bare, other)
	writeFile(t, filepath.Join(other, "README"), "theirs\n")
	w.git(other, "commit", "-q", "-am", "theirs")
	w.git(other, "push", "-q", "origin", "main")
	w.git(dir, "fetch", "-q", "origin")
	w.env.WorkDir = dir
	if p := w.propose("git_pull", map[string]any{}); p.Approval.HumanOnly != "" {
		t.Errorf("a pull over a writable file: %s", p.Approval.HumanOnly)
	}
	if err := os.Chmod(filepath.Join(dir, "README"), 0o444); err != nil {
		t.Fatal(err)
	}
	p := w.propose("git_pull", map[string]any{})
	if why := p.Approval.HumanOnly; !strings.Contains(why, "read-only") || !strings.Contains(why, "README") {
		t.Errorf("a pull rewriting a read-only file: human-only %q", why)
	}
}

// TestGitMergeAbortOverAReadOnlyFileNeedsAPerson: aborting a merge resets
// the files it left changed; one made read-only since is approved by a
// person only.
func TestGitMergeAbortOverAReadOnlyFileNeedsAPerson(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.repo("r")
	w.env.WorkDir = dir
	w.git(dir, "checkout", "-q", "-b", "two")
	writeFile(t, filepath.Join(dir, "README"), "two\n")
	w.git(dir, "commit", "-q", "-am", "two")
	w.git(dir, "checkout", "-q", "main")
	writeFile(t, filepath.Join(dir, "README"), "main\n")
	w.git(dir, "commit", "-q", "-am", "main")
	cmd := exec.Command("git", "merge", "two")
	cmd.Dir, cmd.Env = dir, w.environ
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("the merge did not conflict: %s", out)
	}
	if p := w.propose("git_merge", map[string]any{"branch": "two", "abort": true}); p.Approval.HumanOnly != "" {
		t.Errorf("an abort over writable files: %s", p.Approval.HumanOnly)
	}
	if err := os.Chmod(filepath.Join(dir, "README"), 0o444); err != nil {
		t.Fatal(err)
	}
	p := w.propose("git_merge", map[string]any{"branch": "two", "abort": true})
	if why := p.Approval.HumanOnly; !strings.Contains(why, "read-only") || !strings.Contains(why, "README") {
		t.Errorf("an abort resetting a read-only file: human-only %q", why)
	}
}
