package gittools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jazz-run/jazz/tools"
)

// A twin's plan proves the index was what the preview described a moment
// ago; git then reads it again when it acts, and whatever staged
// something in between (an auto-approved command of the same batch, a
// process started earlier) would have it committed under the approval.
// So a twin that commits works on a private copy of the index, made under
// the lock every git honours (<gitdir>/index.lock) and checked against the
// approved entries: what git commits is that copy, whatever happens to the
// repository's index meanwhile, and the lock keeps every other git from
// writing the index until the copy, as the commit left it, takes its place.

// pinnedIndex is a twin's private copy of the index, with the index lock
// held.
type pinnedIndex struct {
	r    *repo
	real string // <gitdir>/index
	lock string // <gitdir>/index.lock, created by pinIndex
	file string // the copy git works on (GIT_INDEX_FILE)
	// extra are further copies to remove on release.
	extra []string
	// locked: the lock is still ours (not yet renamed over real).
	locked bool
}

// pinIndex takes the index lock, copies the index and checks that the
// copy's entries are want (an indexState line). On failure nothing is
// left behind and the repository is as it was.
func (r *repo) pinIndex(ctx context.Context, want string) (*pinnedIndex, *tools.Result) {
	p := &pinnedIndex{r: r, real: filepath.Join(r.gitDir, "index")}
	p.lock = p.real + ".lock"
	lf, err := os.OpenFile(p.lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, fail("Another git process seems to be running in " + disp(r.top) + " (" + disp(p.lock) +
			" exists); nothing was changed. Try again once it has finished.")
	}
	if err != nil {
		return nil, fail(fmt.Sprintf("lock the index of %s: %v; nothing was changed.", disp(r.top), err))
	}
	lf.Close()
	p.locked = true
	data, err := os.ReadFile(p.real)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.release()
		return nil, fail(fmt.Sprintf("read the index of %s: %v; nothing was changed.", disp(r.top), err))
	}
	if p.file, err = p.copyOf(data); err != nil {
		p.release()
		return nil, fail(fmt.Sprintf("copy the index of %s: %v; nothing was changed.", disp(r.top), err))
	}
	got, f := r.hashOfWith(ctx, p.file, "index", DefaultTimeout, "ls-files", "--stage", "-z")
	if f != nil {
		p.release()
		return nil, f
	}
	if got != want {
		p.release()
		return nil, fail(changedMessage(r) + " (the staged changes differ from the preview)")
	}
	return p, nil
}

// copyOf writes data to a new private file beside the index (a split
// index's shared part is found relative to it) and returns its path.
func (p *pinnedIndex) copyOf(data []byte) (string, error) {
	f, err := os.CreateTemp(p.r.gitDir, "jazz-index-*")
	if err != nil {
		return "", err
	}
	p.extra = append(p.extra, f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}

// stageTracked stages the tracked files' changes into the copy, as
// `commit --all` would, and checks that what it staged is exactly the
// change the preview showed (want, a worktreeState line): the diff from
// the copy's tree before to its tree after is the diff of the work tree
// against the index, byte for byte, when the files are as previewed.
func (p *pinnedIndex) stageTracked(ctx context.Context, want string) *tools.Result {
	data, err := os.ReadFile(p.file)
	if err != nil {
		return fail(fmt.Sprintf("read the index copy: %v; nothing was changed.", err))
	}
	staged, err := p.copyOf(data)
	if err != nil {
		return fail(fmt.Sprintf("copy the index of %s: %v; nothing was changed.", disp(p.r.top), err))
	}
	if res := p.r.cmdWith(staged).run(ctx, DefaultTimeout, "add", "--update"); !res.ok() {
		return fail(res.failure("git add --update", p.r.dir))
	}
	before, f := p.r.treeOf(ctx, p.file)
	if f != nil {
		return f
	}
	after, f := p.r.treeOf(ctx, staged)
	if f != nil {
		return f
	}
	got, f := p.r.hashOfWith(ctx, p.file, "worktree", DiffTimeout, "diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", before, after)
	if f != nil {
		return f
	}
	if got != want {
		return fail(changedMessage(p.r) + " (the tracked files' changes differ from the preview)")
	}
	p.file = staged
	return nil
}

// install makes the copy, as git left it, the repository's index: through
// the lock, as git itself commits an index.
func (p *pinnedIndex) install() error {
	data, err := os.ReadFile(p.file)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.lock, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(p.lock, p.real); err != nil {
		return err
	}
	p.locked = false
	return nil
}

// release removes the copies and, unless installed, the lock.
func (p *pinnedIndex) release() {
	for _, f := range p.extra {
		os.Remove(f)
		os.Remove(f + ".lock")
	}
	if p.locked {
		os.Remove(p.lock)
		p.locked = false
	}
}

// cmdWith is how git runs for this repository on the index file index.
func (r *repo) cmdWith(index string) *gitCmd {
	g := r.cmd(false)
	g.indexFile = index
	return g
}

// hashOfWith is hashOf on the index file index.
func (r *repo) hashOfWith(ctx context.Context, index, what string, timeout time.Duration, args ...string) (string, *tools.Result) {
	g := r.cmd(true)
	g.indexFile = index
	res := g.runHashed(ctx, timeout, args...)
	if !res.ok() {
		return "", fail(res.failure("git "+args[0], r.dir))
	}
	return what + " " + res.hash, nil
}

// treeOf writes the tree of the index file index and returns its id.
func (r *repo) treeOf(ctx context.Context, index string) (string, *tools.Result) {
	res := r.cmdWith(index).run(ctx, DefaultTimeout, "write-tree")
	if !res.ok() {
		return "", fail(res.failure("git write-tree", r.dir))
	}
	return strings.TrimSpace(res.stdout), nil
}

// committedBy reads what `git commit` (with core.abbrev=no) reported it
// made: its first line is "[<branch> (root-commit)? <id>] <subject>", the
// branch "detached HEAD" when there was none. A branch name may hold "]"
// but not a space, so the id is the first field that is a whole object
// id followed by "]".
func committedBy(stdout string) (branch, oid string, ok bool) {
	first, _, _ := strings.Cut(stdout, "\n")
	if !strings.HasPrefix(first, "[") {
		return "", "", false
	}
	fields := strings.Fields(first[1:])
	for i, f := range fields {
		id := strings.TrimSuffix(f, "]")
		if id == f || (len(id) != 40 && len(id) != 64) || strings.Trim(id, "0123456789abcdef") != "" {
			continue
		}
		return strings.TrimSuffix(strings.Join(fields[:i], " "), " (root-commit)"), id, true
	}
	return "", "", false
}

// checkCommitted checks that the commit a twin just made (as git commit
// reported it: stdout) went where the preview said: on its branch, right
// after its HEAD. HEAD can be moved or switched between the twin's check
// and git's own reading of it; such a commit is undone, by a
// compare-and-swap of each ref that points at it (nothing else can), and
// refused. HEAD is not read again: whatever it is by now is not what the
// commit did.
func (r *repo) checkCommitted(ctx context.Context, planned *plan, stdout string) (string, *tools.Result) {
	branch, oid, ok := committedBy(stdout)
	if !ok {
		return "", fail(fmt.Sprintf("git commit in %s reported %q, not the commit it made; check git log before committing again.", disp(r.top), firstLine(stdout)))
	}
	parent, f := r.resolve(ctx, oid+"^1")
	if f != nil {
		return "", f
	}
	if parent == "" {
		parent = "unborn"
	}
	want := "detached HEAD"
	if planned.branch != "detached" {
		want = strings.TrimPrefix(planned.branch, "refs/heads/")
	}
	if branch == want && parent == planned.oid {
		return oid, nil
	}
	why := fmt.Sprintf(" (the commit went on %s after %s, not on %s after %s", disp(branch), parent, disp(want), planned.oid)
	refs, f := r.text(ctx, DefaultTimeout, "for-each-ref", "--points-at", oid, "--format=%(refname)")
	if f != nil {
		return "", fail(changedMessage(r) + why + "; the commit " + oid + " could not be undone: " + f.Error + ")")
	}
	targets := lines(refs)
	if branch == "detached HEAD" {
		targets = append(targets, "HEAD")
	}
	for _, ref := range targets {
		args := []string{"update-ref", "--no-deref", "-m", "jazz: undo a commit made after the repository changed", ref, parent, oid}
		if parent == "unborn" {
			args = []string{"update-ref", "--no-deref", "-d", ref, oid}
		}
		if res := r.act(ctx, DefaultTimeout, args...); !res.ok() {
			return "", fail(changedMessage(r) + why + "; the commit " + oid + " could not be undone on " + ref + ": " + res.failure("git update-ref", r.dir) + ")")
		}
	}
	return "", fail(changedMessage(r) + why + "; the commit was undone)")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
