package gittools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/tools"
)

func wantChanged(t *testing.T, r tools.Result) {
	t.Helper()
	if r.Success || !strings.Contains(r.Error, "changed since the preview was approved") {
		t.Fatalf("want the twin to refuse a changed repository, got success=%v error=%q", r.Success, r.Error)
	}
}

func TestCommitPreviewsStagedDiffAndPinsIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.repo("r")
	w.env.WorkDir = dir
	writeFile(t, filepath.Join(dir, "README"), "hello\nstaged line\n")
	w.git(dir, "add", "README")

	p := w.propose("git_commit", map[string]any{"message": "Add a line"})
	if p.Error != "Git commit requires user confirmation." {
		t.Errorf("error %q", p.Error)
	}
	if want := "Commit changes with message: \"Add a line\"\nDirectory: " + dir; p.Approval.Message != want {
		t.Errorf("message %q, want %q", p.Approval.Message, want)
	}
	for _, want := range []string{"+staged line", "Author: Tester <tester@example.com>", "after ", "first", "Add a line"} {
		if !strings.Contains(p.Approval.PreviewDiff, want) {
			t.Errorf("preview lacks %q:\n%s", want, p.Approval.PreviewDiff)
		}
	}
	// Something else is staged after the preview: the twin refuses.
	writeFile(t, filepath.Join(dir, "extra"), "sneaked in\n")
	w.git(dir, "add", "extra")
	wantChanged(t, w.approve(p))
	if got := w.git(dir, "log", "-1", "--format=%s"); got != "first" {
		t.Fatalf("a commit was made: %q", got)
	}
	// Proposed again, it commits exactly that.
	p = w.propose("git_commit", map[string]any{"message": "Add a line"})
	res := w.approve(p)
	ok(t, res)
	m := asMap(t, res.Value)
	if m["commitHash"] != w.git(dir, "rev-parse", "HEAD") || m["message"] != "Add a line" {
		t.Errorf("result %v", m)
	}
	if files := w.git(dir, "show", "--name-only", "--format=", "HEAD"); files != "README\nextra" {
		t.Errorf("committed %q", files)
	}
	// Nothing staged: a plain failure, nobody is asked.
	if r := w.call("git_commit", map[string]any{"message": "empty"}); r.Approval != nil || !strings.Contains(r.Error, "Nothing to commit") {
		t.Errorf("empty commit: %+v", r)
	}
	// With all, a change to a tracked file after the preview is refused too.
	writeFile(t, filepath.Join(dir, "README"), "v3\n")
	p = w.propose("git_commit", map[string]any{"message": "all", "all": true})
	if !strings.HasSuffix(p.Approval.Message, "\nMode: all changes") || !strings.Contains(p.Approval.PreviewDiff, "+v3") {
		t.Errorf("all: %q\n%s", p.Approval.Message, p.Approval.PreviewDiff)
	}
	writeFile(t, filepath.Join(dir, "README"), "v4\n")
	wantChanged(t, w.approve(p))
}

func TestTwinNeedsAPreview(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.repo("r")
	w.env.WorkDir = dir
	twin, _ := w.reg.Lookup("execute_git_tag")
	raw, _ := json.Marshal(map[string]any{"create": "v1"})
	r := twin.Handler(t.Context(), w.env, raw)
	if r.Success || !strings.Contains(r.Error, "needs the expectedState") {
		t.Fatalf("%+v", r)
	}
	raw, _ = json.Marshal(map[string]any{"create": "v1", "expectedState": "forged"})
	wantChanged(t, twin.Handler(t.Context(), w.env, raw))
	if tags := w.git(dir, "tag"); tags != "" {
		t.Fatalf("tagged: %q", tags)
	}
}

func TestTwinRunsWhereThePreviewLooked(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.repo("a")
	b := w.repo("b")
	w.env.WorkDir = a
	p := w.propose("git_tag", map[string]any{"create": "v1"})
	w.env.WorkDir = b // a parallel cd
	ok(t, w.approve(p))
	if w.git(a, "tag") != "v1" || w.git(b, "tag") != "" {
		t.Fatal("the tag went to the wrong repository")
	}
}

func TestAddAndRm(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.repo("r")
	w.env.WorkDir = dir
	writeFile(t, filepath.Join(dir, "new.txt"), "brand new\n")
	writeFile(t, filepath.Join(dir, "README"), "hello\nmore\n")
	p := w.propose("git_add", map[string]any{"files": []string{"new.txt", "README"}})
	if p.Approval.Message != "Add new.txt, README to git staging\nDirectory: "+dir {
		t.Errorf("message %q", p.Approval.Message)
	}
	for _, want := range []string{"add 'new.txt'", "add 'README'", "+more"} {
		if !strings.Contains(p.Approval.PreviewDiff, want) {
			t.Errorf("preview lacks %q:\n%s", want, p.Approval.PreviewDiff)
		}
	}
	// The new file's content changes after the preview: refused.
	writeFile(t, filepath.Join(dir, "new.txt"), "swapped\n")
	wantChanged(t, w.approve(p))
	p = w.propose("git_add", map[string]any{"files": []string{"new.txt", "README"}})
	ok(t, w.approve(p))
	if st := w.git(dir, "status", "--short"); st != "M  README\nA  new.txt" {
		t.Errorf("status %q", st)
	}
	writeFile(t, filepath.Join(dir, "third.txt"), "3\n")
	all := w.propose("git_add", map[string]any{"files": []string{"."}, "all": true})
	if !strings.HasPrefix(all.Approval.Message, "Add all files to git staging") {
		t.Errorf("all: %q", all.Approval.Message)
	}
	w.git(dir, "commit", "-q", "-m", "two")

	writeFile(t, filepath.Join(dir, "README"), "local edit\n")
	if r := w.call("git_rm", map[string]any{"files": []string{"README"}}); r.Approval != nil || !strings.Contains(r.Error, "local modifications") {
		t.Errorf("rm of a modified file without force: %+v", r)
	}
	p = w.propose("git_rm", map[string]any{"files": []string{"README"}, "force": true})
	if !strings.Contains(p.Approval.Message, "Remove README from Git tracking\nOptions: force") ||
		!strings.Contains(p.Approval.PreviewDiff, "rm 'README'") || !strings.Contains(p.Approval.PreviewDiff, "+local edit") {
		t.Errorf("rm preview: %q\n%s", p.Approval.Message, p.Approval.PreviewDiff)
	}
	ok(t, w.approve(p))
	if _, err := os.Stat(filepath.Join(dir, "README")); !os.IsNotExist(err) {
		t.Error("README still there")
	}
}

func TestCheckoutShowsWhatChangesAndWhatIsDiscarded(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.repo("r")
	w.env.WorkDir = dir
	w.git(dir, "checkout", "-q", "-b", "side")
	writeFile(t, filepath.Join(dir, "side.txt"), "s\n")
	writeFile(t, filepath.Join(dir, "README"), "side version\n")
	w.git(dir, "add", ".")
	w.git(dir, "commit", "-q", "-m", "side work")
	w.git(dir, "checkout", "-q", "main")

	// A local change to a file the switch changes: refused without force.
	writeFile(t, filepath.Join(dir, "README"), "my unsaved work\n")
	if r := w.call("git_checkout", map[string]any{"branch": "side"}); r.Approval != nil || !strings.Contains(r.Error, "would overwrite local changes to: README") {
		t.Fatalf("want a refusal, got %+v", r)
	}
	p := w.propose("git_checkout", map[string]any{"branch": "side", "force": true})
	if p.Approval.Message != "Checkout branch \"side\" (FORCE - discards changes)\nDirectory: "+dir {
		t.Errorf("message %q", p.Approval.Message)
	}
	for _, want := range []string{"A\tside.txt", "M\tREADME", "discarded", "+my unsaved work"} {
		if !strings.Contains(p.Approval.PreviewDiff, want) {
			t.Errorf("preview lacks %q:\n%s", want, p.Approval.PreviewDiff)
		}
	}
	// The work being discarded changes after the approval was asked.
	writeFile(t, filepath.Join(dir, "README"), "even more unsaved work\n")
	wantChanged(t, w.approve(p))
	if b, _ := os.ReadFile(filepath.Join(dir, "README")); string(b) != "even more unsaved work\n" {
		t.Fatal("the work tree was touched")
	}
	p = w.propose("git_checkout", map[string]any{"branch": "side", "force": true})
	ok(t, w.approve(p))
	if w.git(dir, "branch", "--show-current") != "side" {
		t.Fatal("not on side")
	}
	// A path is never taken for the branch (`git checkout README`
	// would discard README's changes).
	if r := w.call("git_checkout", map[string]any{"branch": "README"}); r.Approval != nil || !strings.Contains(r.Error, "No branch or commit named") {
		t.Errorf("path as branch: %+v", r)
	}
	p = w.propose("git_checkout", map[string]any{"branch": "topic", "create": true})
	if !strings.Contains(p.Approval.PreviewDiff, "Creates the branch topic at HEAD") {
		t.Errorf("create preview:\n%s", p.Approval.PreviewDiff)
	}
	ok(t, w.approve(p))
	if w.git(dir, "branch", "--show-current") != "topic" {
		t.Fatal("not on topic")
	}
}

func TestMerge(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.repo("r")
	w.env.WorkDir = dir
	w.git(dir, "checkout", "-q", "-b", "feature")
	writeFile(t, filepath.Join(dir, "f.txt"), "feature\n")
	w.git(dir, "add", ".")
	w.git(dir, "commit", "-q", "-m", "feature commit")
	w.git(dir, "checkout", "-q", "main")

	p := w.propose("git_merge", map[string]any{"branch": "feature", "noFastForward": true, "message": "merge it"})
	if p.Approval.Message != "Merge branch \"feature\" into current branch\nOptions: no fast-forward\nMessage: \"merge it\"\nDirectory: "+dir {
		t.Errorf("message %q", p.Approval.Message)
	}
	if !strings.Contains(p.Approval.PreviewDiff, "feature commit") || !strings.Contains(p.Approval.PreviewDiff, "f.txt") {
		t.Errorf("preview:\n%s", p.Approval.PreviewDiff)
	}
	// The branch moves after the preview: refused.
	w.git(dir, "checkout", "-q", "feature")
	writeFile(t, filepath.Join(dir, "g.txt"), "more\n")
	w.git(dir, "add", ".")
	w.git(dir, "commit", "-q", "-m", "unseen commit")
	w.git(dir, "checkout", "-q", "main")
	wantChanged(t, w.approve(p))
	p = w.propose("git_merge", map[string]any{"branch": "feature", "noFastForward": true, "message": "merge it"})
	res := w.approve(p)
	ok(t, res)
	if got := w.git(dir, "log", "-1", "--format=%p %s"); !strings.HasSuffix(got, " merge it") || len(strings.Fields(got)) != 4 {
		t.Errorf("merge commit %q", got)
	}
	if r := w.call("git_merge", map[string]any{"branch": "feature"}); !r.Success || r.Approval != nil {
		t.Errorf("already merged: %+v", r)
	}

	// A conflict, then an abort.
	w.git(dir, "checkout", "-q", "-b", "c1")
	writeFile(t, filepath.Join(dir, "README"), "one\n")
	w.git(dir, "commit", "-q", "-am", "c1")
	w.git(dir, "checkout", "-q", "-b", "c2", "main")
	writeFile(t, filepath.Join(dir, "README"), "two\n")
	w.git(dir, "commit", "-q", "-am", "c2")
	p = w.propose("git_merge", map[string]any{"branch": "c1"})
	if !strings.Contains(p.Approval.PreviewDiff, "Changed on both sides (may conflict):\n  README") {
		t.Errorf("preview:\n%s", p.Approval.PreviewDiff)
	}
	res = w.approve(p)
	if res.Success || res.Error != "Merge conflicts detected. Please resolve conflicts before continuing." || asMap(t, res.Value)["hasConflicts"] != true {
		t.Fatalf("conflict: %+v", res)
	}
	p = w.propose("git_merge", map[string]any{"branch": "c1", "abort": true})
	if !strings.HasPrefix(p.Approval.Message, "Abort in-progress merge\nDirectory: ") {
		t.Errorf("abort message %q", p.Approval.Message)
	}
	res = w.approve(p)
	ok(t, res)
	if m := asMap(t, res.Value); m["aborted"] != true {
		t.Errorf("abort: %v", m)
	}
}

func TestTagCreateAndDelete(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.repo("r")
	w.env.WorkDir = dir
	if r := w.call("git_tag", map[string]any{}); r.Approval != nil || r.Error != "Invalid operation: must specify either 'create' or 'delete'" {
		t.Errorf("neither: %+v", r)
	}
	if r := w.call("git_tag", map[string]any{"create": "--delete"}); r.Approval != nil || !strings.Contains(r.Error, "must not start with '-'") {
		t.Errorf("option as tag: %+v", r)
	}
	p := w.propose("git_tag", map[string]any{"create": "v1", "message": "release one"})
	if p.Error != "Git tag create/delete requires user confirmation." || !strings.HasPrefix(p.Approval.Message, "Create annotated tag \"v1\"") {
		t.Errorf("%q / %q", p.Error, p.Approval.Message)
	}
	// HEAD moves after the preview: the tag would land elsewhere.
	w.git(dir, "commit", "-q", "--allow-empty", "-m", "later")
	wantChanged(t, w.approve(p))
	p = w.propose("git_tag", map[string]any{"create": "v1", "message": "release one"})
	ok(t, w.approve(p))
	if got := w.git(dir, "tag", "-n1"); !strings.Contains(got, "release one") {
		t.Errorf("tag %q", got)
	}
	d := w.propose("git_tag", map[string]any{"delete": "v1"})
	if !strings.HasPrefix(d.Approval.Message, "Delete tag \"v1\"") || !strings.Contains(d.Approval.PreviewDiff, "later") {
		t.Errorf("delete: %q\n%s", d.Approval.Message, d.Approval.PreviewDiff)
	}
	ok(t, w.approve(d))
	if w.git(dir, "tag") != "" {
		t.Error("tag still there")
	}
}

// TestPushAndPull against a bare repository on disk (a local remote is
// inspected like the repository itself: its hooks would run).
func TestPushAndPull(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bare := filepath.Join(w.home, "remote.git")
	w.git(w.home, "init", "-q", "--bare", bare)
	dir := w.repo("r")
	w.git(dir, "remote", "add", "origin", bare)
	w.env.WorkDir = dir

	p := w.propose("git_push", map[string]any{"branch": "main"})
	if p.Approval.Message != "Push to origin/main\nDirectory: "+dir {
		t.Errorf("message %q", p.Approval.Message)
	}
	for _, want := range []string{"URL: " + bare, "Push: refs/heads/main", "first", "not known here"} {
		if !strings.Contains(p.Approval.PreviewDiff, want) {
			t.Errorf("preview lacks %q:\n%s", want, p.Approval.PreviewDiff)
		}
	}
	// A commit after the preview is not pushed: the twin refuses.
	w.git(dir, "commit", "-q", "--allow-empty", "-m", "unseen")
	wantChanged(t, w.approve(p))
	p = w.propose("git_push", map[string]any{"branch": "main"})
	ok(t, w.approve(p))
	if got := w.git(bare, "log", "-1", "--format=%s", "main"); got != "unseen" {
		t.Fatalf("remote has %q", got)
	}

	// Another clone pushes; a force push leased on the old state fails.
	other := filepath.Join(w.home, "other")
	w.git(w.home, "clone", "-q", bare, other)
	w.git(other, "commit", "-q", "--allow-empty", "-m", "theirs")
	w.git(other, "push", "-q", "origin", "main")
	w.git(dir, "commit", "-q", "--amend", "--allow-empty", "-m", "rewritten")
	fp := w.propose("git_push", map[string]any{"branch": "main", "force": true})
	if !strings.Contains(fp.Approval.Message, "(FORCE PUSH)") || !strings.Contains(fp.Approval.PreviewDiff, "FORCE:") {
		t.Errorf("force preview: %q\n%s", fp.Approval.Message, fp.Approval.PreviewDiff)
	}
	if r := w.approve(fp); r.Success {
		t.Fatal("a force push overwrote a remote commit the preview never showed")
	}
	if got := w.git(bare, "log", "-1", "--format=%s", "main"); got != "theirs" {
		t.Fatalf("remote has %q", got)
	}

	// Pull: first fetch so the preview knows the commits.
	w.git(dir, "reset", "-q", "--hard", "origin/main")
	w.git(dir, "branch", "-q", "--set-upstream-to=origin/main")
	w.git(dir, "fetch", "-q", "origin")
	if r := w.propose("git_pull", map[string]any{}); !strings.Contains(r.Approval.PreviewDiff, "Incoming: 1 commit") || !strings.Contains(r.Approval.PreviewDiff, "theirs") {
		t.Errorf("pull preview:\n%s", r.Approval.PreviewDiff)
	}
	pl := w.propose("git_pull", map[string]any{})
	// The remote moves after the preview: fetched, nothing merged.
	w.git(other, "commit", "-q", "--allow-empty", "-m", "theirs again")
	w.git(other, "push", "-q", "origin", "main")
	r := w.approve(pl)
	if r.Success || !strings.Contains(r.Error, "moved since the preview") {
		t.Fatalf("want a refusal after the remote moved, got %+v", r)
	}
	if got := w.git(dir, "log", "-1", "--format=%s"); got != "unseen" {
		t.Fatalf("merged anyway: HEAD is %q", got)
	}
	pl = w.propose("git_pull", map[string]any{})
	ok(t, w.approve(pl))
	if got := w.git(dir, "log", "-1", "--format=%s"); got != "theirs again" {
		t.Fatalf("HEAD is %q", got)
	}

	// A remote that is not configured is refused; so is a local remote
	// whose repository has hooks of its own.
	if r := w.call("git_push", map[string]any{"remote": "https://attacker.example/x.git"}); r.Approval != nil || !strings.Contains(r.Error, "No remote named") {
		t.Errorf("URL as remote: %+v", r)
	}
	prog, marker := canary(t, t.TempDir())
	hook(t, bare, "hooks/pre-receive", prog)
	if r := w.call("git_push", map[string]any{}); r.Approval != nil || !strings.Contains(r.Error, "pre-receive") {
		t.Errorf("hooked remote: %+v", r)
	}
	if ran(marker) {
		t.Fatal("the remote's hook ran")
	}
}
