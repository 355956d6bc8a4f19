package gittools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/jazz-run/jazz/escalation"
	"github.com/jazz-run/jazz/safefile"
	"github.com/jazz-run/jazz/tools"
)

// previewCap bounds the diff text of a preview; the fingerprint covers
// everything all the same.
const previewCap = 64 << 10

// capText cuts a preview's text at previewCap, at a line end.
func capText(s string) string {
	if len(s) <= previewCap {
		return s
	}
	cut := s[:previewCap]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i+1]
	}
	return cut + fmt.Sprintf("[… preview cut at %d of %d bytes]\n", len(cut), len(s))
}

type addArgs struct {
	baseArgs
	Files []string `json:"files"`
	All   bool     `json:"all,omitempty"`
}

// dryRunList runs a command's --dry-run form and returns the paths it
// names (`add 'x'`, `remove 'x'`, `rm 'x'`), with the lines as printed.
func (r *repo) dryRunList(ctx context.Context, cmd string, args ...string) (paths []string, text string, f *tools.Result) {
	res := r.cmd(true).run(ctx, DefaultTimeout, args...)
	if !res.ok() {
		return nil, "", fail(res.failure(cmd, r.dir))
	}
	if res.stdoutTruncated {
		return nil, "", fail(fmt.Sprintf("%s would touch more files than a preview can show (its list is over %d bytes); name fewer files.", cmd, StreamCap))
	}
	for _, l := range lines(res.stdout) {
		if i := strings.IndexByte(l, '\''); i >= 0 && strings.HasSuffix(l, "'") && len(l) > i+1 {
			paths = append(paths, l[i+1:len(l)-1])
		}
	}
	return paths, res.stdout, nil
}

// contentState fingerprints the work-tree content of paths (relative to
// the work tree's root, as dry runs print them) as they are now: a file by
// its bytes, a symbolic link by its target (git stores the link, not what
// it points to), anything else by its type. Read in-process, raw, with
// no filter and without following a link, so a FIFO or a link into /proc
// cannot stall or leak anything.
func (r *repo) contentState(ctx context.Context, paths []string) (string, *tools.Result) {
	states, f := r.pathStates(ctx, paths)
	if f != nil {
		return "", f
	}
	return contentLine(paths, states), nil
}

// pathStates are the states of paths that contentState fingerprints.
func (r *repo) pathStates(ctx context.Context, paths []string) ([]string, *tools.Result) {
	states := make([]string, len(paths))
	for i, p := range paths {
		abs := filepath.Join(r.top, p)
		fi, err := os.Lstat(abs)
		switch {
		case err != nil:
			states[i] = "missing"
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(abs)
			states[i] = linkState(target)
		case fi.Mode().IsRegular():
			f, err := safefile.Open(abs)
			if err != nil {
				states[i] = fmt.Sprintf("unreadable %v", err)
				continue
			}
			fh := sha256.New()
			err = f.Stream(ctx, func(b []byte) error { fh.Write(b); return nil })
			f.Close()
			if err != nil {
				return nil, fail(fmt.Sprintf("read %s for the preview: %v", abs, err))
			}
			states[i] = fileState(fi.Mode(), fh.Sum(nil))
		default:
			states[i] = fi.Mode().Type().String()
		}
	}
	return states, nil
}

// linkState and fileState are one path's state in contentState: a link's
// target, a file's permission bits and the sha256 of its bytes. A twin
// that stages or deletes a path derives them again from what it read.
func linkState(target string) string { return fmt.Sprintf("link %q", target) }

func fileState(mode fs.FileMode, sum []byte) string {
	return fmt.Sprintf("file %o %x", mode.Perm(), sum)
}

// contentLine is the state line of paths whose states are states.
func contentLine(paths, states []string) string {
	h := sha256.New()
	for i, p := range paths {
		fmt.Fprintf(h, "%q %s\n", p, states[i])
	}
	return "content " + hex.EncodeToString(h.Sum(nil))
}

func planAdd(ctx context.Context, r *repo, a *addArgs) (*plan, *tools.Result) {
	dry := []string{"add", "--dry-run"}
	what := "all files"
	if a.All {
		dry = append(dry, "--all")
	} else {
		dry = append(append(dry, "--"), a.Files...)
		what = strings.Join(a.Files, ", ")
	}
	paths, list, f := r.dryRunList(ctx, "git add", dry...)
	if f != nil {
		return nil, f
	}
	if len(paths) == 0 {
		return nil, fail("Nothing to add: " + what + " has no changes to stage.")
	}
	if f := r.namesFit(ctx, "git_add"); f != nil {
		return nil, f
	}
	state, f := r.baseState(ctx)
	if f != nil {
		return nil, f
	}
	content, f := r.contentState(ctx, paths)
	if f != nil {
		return nil, f
	}
	state = append(state, "add "+list, content)
	diff, f := r.text(ctx, DiffTimeout, diffArgs(append([]string{"--stat", "--patch", "--"}, paths...)...)...)
	if f != nil {
		return nil, f
	}
	preview := "Staged by this change (" + plural(len(paths), "path", "paths") + "):\n" + list
	if diff != "" {
		preview += "\nChanges to tracked files being staged:\n" + capText(diff)
	}
	return &plan{message: "Add " + quoted(what) + " to git staging", preview: preview, state: state,
		index: state[1], paths: paths, content: content}, nil
}

// AddResult is git_add's result.
type AddResult struct {
	WorkingDirectory string `json:"workingDirectory"`
	AddedFiles       any    `json:"addedFiles"`
	Message          string `json:"message"`
}

// actAdd stages into a pinned copy of the index (pin.go) exactly the
// paths the preview listed, as the twin reads them once (stagePaths),
// and makes the copy the index only when every one was as previewed.
func actAdd(ctx context.Context, r *repo, a *addArgs, p *plan) tools.Result {
	var added any = "all files"
	if !a.All {
		added = a.Files
	}
	pin, f := r.pinIndex(ctx, p.index)
	if f != nil {
		return *f
	}
	defer pin.release()
	if f := pin.stagePaths(ctx, p.paths, p.content); f != nil {
		return *f
	}
	if err := pin.install(); err != nil {
		return tools.Fail(fmt.Sprintf("git add in %s: the index could not be updated: %v; nothing was staged.", disp(r.top), err))
	}
	return tools.OK(AddResult{WorkingDirectory: r.dir, AddedFiles: added, Message: "Files added to staging area"})
}

type rmArgs struct {
	baseArgs
	Files     []string `json:"files"`
	Cached    bool     `json:"cached,omitempty"`
	Recursive bool     `json:"recursive,omitempty"`
	Force     bool     `json:"force,omitempty"`
}

func (a *rmArgs) flags() []string {
	var out []string
	if a.Cached {
		out = append(out, "--cached")
	}
	if a.Recursive {
		out = append(out, "-r")
	}
	if a.Force {
		out = append(out, "-f")
	}
	return out
}

func planRm(ctx context.Context, r *repo, a *rmArgs) (*plan, *tools.Result) {
	dry := append(append(append([]string{"rm", "--dry-run"}, a.flags()...), "--"), a.Files...)
	paths, list, f := r.dryRunList(ctx, "git rm", dry...)
	if f != nil {
		return nil, f
	}
	if f := r.namesFit(ctx, "git_rm"); f != nil {
		return nil, f
	}
	state, f := r.baseState(ctx)
	if f != nil {
		return nil, f
	}
	states, f := r.pathStates(ctx, paths)
	if f != nil {
		return nil, f
	}
	content := contentLine(paths, states)
	state = append(state, "rm "+list, content)
	preview := "Removed from the index (" + plural(len(paths), "path", "paths") + "):\n" + list
	if a.Cached {
		preview += "\nThe files stay in the work tree (index only)."
	} else {
		preview += "\nThe files are deleted from the work tree too."
		lost, f := r.text(ctx, DiffTimeout, diffArgs(append([]string{"HEAD", "--"}, paths...)...)...)
		if f != nil {
			lost, f = r.text(ctx, DiffTimeout, diffArgs(append([]string{"--cached", "--"}, paths...)...)...)
			if f != nil {
				return nil, f
			}
		}
		if lost != "" {
			preview += " Uncommitted changes to them are lost:\n" + capText(lost)
		}
	}
	msg := "Remove " + quoted(strings.Join(a.Files, ", ")) + " from Git tracking"
	var opts []string
	if a.Cached {
		opts = append(opts, "index only")
	}
	if a.Recursive {
		opts = append(opts, "recursive")
	}
	if a.Force {
		opts = append(opts, "force")
	}
	if len(opts) > 0 {
		msg += "\nOptions: " + strings.Join(opts, ", ")
	}
	p := &plan{message: msg, preview: preview, state: state, index: state[1], paths: paths, content: content, states: states}
	if !a.Cached {
		p.humanOnly = r.personOnly(paths, "deletes")
	}
	return p, nil
}

// RmResult is git_rm's result.
type RmResult struct {
	WorkingDirectory string   `json:"workingDirectory"`
	RemovedFiles     []string `json:"removedFiles"`
	Cached           bool     `json:"cached"`
	Recursive        bool     `json:"recursive"`
	Force            bool     `json:"force"`
	Message          string   `json:"message"`
}

// actRm removes exactly the paths the preview listed from a pinned copy
// of the index (pin.go); without cached it first takes each file aside
// and checks that what it took is the previewed content (removeChecked),
// so a file rewritten or put in its place after the check is never
// deleted. The copy becomes the index, and the files taken aside are
// deleted, only when every one was as previewed; otherwise they are put
// back and nothing has changed.
func actRm(ctx context.Context, r *repo, a *rmArgs, p *plan) tools.Result {
	pin, f := r.pinIndex(ctx, p.index)
	if f != nil {
		return *f
	}
	defer pin.release()
	modes, f := pin.entriesOf(ctx, p.paths)
	if f != nil {
		return *f
	}
	entries := make([]indexEntry, len(p.paths))
	for i, path := range p.paths {
		if !a.Cached && slices.Contains(modes[path], "160000") {
			return tools.Fail(fmt.Sprintf("%s is a submodule; git_rm removes a submodule from the index only (cached: true), and its work tree and .gitmodules are left to you. Nothing was changed.", disp(path)))
		}
		entries[i] = indexEntry{mode: "0", oid: nullOid, path: path}
	}
	var taken []*aside
	if !a.Cached {
		var f *tools.Result
		if taken, f = takeAllAside(ctx, r.top, p.paths, p.states); f != nil {
			return *f
		}
	}
	if f := pin.enter(ctx, entries); f != nil {
		return tools.Fail(putBackAll(taken, f.Error))
	}
	if err := pin.install(); err != nil {
		return tools.Fail(putBackAll(taken, fmt.Sprintf("git rm in %s: the index could not be updated: %v; nothing was removed.", disp(r.top), err)))
	}
	if err := deleteTaken(r.top, taken); err != nil {
		return tools.Fail(fmt.Sprintf("Removed %s from the index, but %v.", strings.Join(p.paths, ", "), err))
	}
	return tools.OK(RmResult{WorkingDirectory: r.dir, RemovedFiles: a.Files, Cached: a.Cached, Recursive: a.Recursive,
		Force: a.Force, Message: "Files removed from Git tracking"})
}

type commitArgs struct {
	baseArgs
	Message string `json:"message"`
	All     bool   `json:"all,omitempty"`
}

func planCommit(ctx context.Context, r *repo, a *commitArgs) (*plan, *tools.Result) {
	branch, head, f := r.head(ctx)
	if f != nil {
		return nil, f
	}
	state, f := r.baseState(ctx)
	if f != nil {
		return nil, f
	}
	state = append(state, "message "+a.Message, fmt.Sprintf("all %t", a.All))
	staged, f := r.text(ctx, DiffTimeout, diffArgs("--cached", "--stat", "--patch")...)
	if f != nil {
		return nil, f
	}
	unstaged := ""
	if a.All {
		if unstaged, f = r.text(ctx, DiffTimeout, diffArgs("--stat", "--patch")...); f != nil {
			return nil, f
		}
	}
	if staged == "" && unstaged == "" {
		return nil, fail("Nothing to commit: no changes are staged" + map[bool]string{true: " and no tracked file has changes.", false: ". Stage them with git_add, or pass all: true for tracked files."}[a.All])
	}
	ident := r.cmd(true).run(ctx, DefaultTimeout, "var", "GIT_AUTHOR_IDENT")
	if !ident.ok() {
		return nil, fail(ident.failure("git var", r.dir))
	}
	author := strings.TrimSpace(ident.stdout)
	if i := strings.LastIndexByte(author, '>'); i >= 0 {
		author = author[:i+1] // drop the timestamp
	}
	var b strings.Builder
	on := strings.TrimPrefix(branch, "refs/heads/")
	if branch == "detached" {
		on = "a detached HEAD"
	}
	fmt.Fprintf(&b, "Commit on %s", on)
	if head == "unborn" {
		b.WriteString(" (its first commit)")
	} else {
		fmt.Fprintf(&b, " after %s", r.subject(ctx, head))
	}
	fmt.Fprintf(&b, "\nAuthor: %s\nMessage:\n%s\n", author, indent(a.Message))
	if signing(ctx, r) {
		b.WriteString("The commit is signed (commit.gpgSign is set in your git configuration).\n")
	}
	if staged != "" {
		b.WriteString("\nStaged changes:\n" + capText(staged))
	}
	if unstaged != "" {
		b.WriteString("\nChanges of tracked files staged by all: true:\n" + capText(unstaged))
	}
	p := &plan{message: `Commit changes with message: "` + quoted(a.Message) + `"`, preview: b.String(), state: state,
		branch: branch, oid: head, index: state[1], worktree: state[2]} // baseState: HEAD, index, worktree, untracked
	if a.All {
		p.after = "\nMode: all changes"
	}
	return p, nil
}

// signing says whether commits are signed here (the user's own setting:
// a repository setting it is refused before this is asked).
func signing(ctx context.Context, r *repo) bool {
	res := r.cmd(true).run(ctx, DefaultTimeout, "config", "--type=bool", "--get", "commit.gpgsign")
	return res.ok() && strings.TrimSpace(res.stdout) == "true"
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// CommitResult is git_commit's result.
type CommitResult struct {
	WorkingDirectory string `json:"workingDirectory"`
	Message          string `json:"message"`
	CommitHash       string `json:"commitHash"`
}

// actCommit commits a pinned copy of the index (pin.go): with all, the
// tracked files' changes are staged into the copy first and checked to be
// the previewed ones. The commit is then checked to sit on the previewed
// branch, right after the previewed HEAD, and only then does the copy
// become the index.
func actCommit(ctx context.Context, r *repo, a *commitArgs, p *plan) tools.Result {
	pin, f := r.pinIndex(ctx, p.index)
	if f != nil {
		return *f
	}
	defer pin.release()
	if a.All {
		if f := pin.stageTracked(ctx, p.worktree); f != nil {
			return *f
		}
	}
	res := r.cmdWith(pin.file).run(ctx, DefaultTimeout, "-c", "core.abbrev=no", "commit", "-m", a.Message)
	if !res.ok() {
		return tools.Fail(res.failure("git commit", r.dir))
	}
	hash, f := r.checkCommitted(ctx, p, res.stdout)
	if f != nil {
		return *f
	}
	if err := pin.install(); err != nil {
		return tools.Fail(fmt.Sprintf("Committed %s, but the index could not be updated (%v): git status may show the committed changes as staged.", hash, err))
	}
	return tools.OK(CommitResult{WorkingDirectory: r.dir, Message: a.Message, CommitHash: hash})
}

// readOnlyIn says why a change that deletes or replaces paths (relative
// to top) in the work tree needs a person: one of them, or the directory
// it is in, was made read-only by its owner (escalation.ReadOnly); ""
// when none was. git unlinks a file to delete or rewrite it, which needs
// no write permission on the file, so without this any approval deleted
// or replaced a file its owner had protected. verb says what the change
// does to them.
func readOnlyIn(top string, paths []string, verb string) string {
	for _, p := range paths {
		abs := filepath.Join(top, p)
		for _, c := range []string{abs, filepath.Dir(abs)} {
			if fi, err := os.Lstat(c); err == nil && escalation.ReadOnly(fi) {
				what := "which is read-only"
				if c != abs {
					what = "in " + disp(c) + ", a read-only directory"
				}
				return fmt.Sprintf("it %s %s, %s (mode %04o)", verb, disp(abs), what, uint32(fi.Mode().Perm()))
			}
		}
	}
	return ""
}

// personOnly says why only a person may approve a change that deletes
// or rewrites paths (relative to the work tree's root), or "": one of
// them configures later calls or runs (escalation.Why: an AGENTS.md,
// .jazz, .agents, a directory git takes for a repository's own, the home
// directory's dotfiles), as the file tools judge a write of it, or one
// is read-only (readOnlyIn). A checkout, merge or pull writes what a
// branch holds, which the model or a remote chose: without this, an
// automatic approval of one put an AGENTS.md into every later agent's
// prompt, or a HEAD and config with core.fsmonitor where the person's
// next git command runs it.
func (r *repo) personOnly(paths []string, verb string) string {
	for _, p := range paths {
		if why := escalation.Why(filepath.Join(r.top, unquoteName(p)), r.homes); why != "" {
			return why
		}
	}
	unq := make([]string, len(paths))
	for i, p := range paths {
		unq[i] = unquoteName(p)
	}
	return readOnlyIn(r.top, unq, verb)
}

// unquoteName is a path as git printed it (core.quotePath=false still
// C-quotes a name holding a control character) made the name again.
func unquoteName(p string) string {
	if strings.HasPrefix(p, `"`) {
		if s, err := strconv.Unquote(p); err == nil {
			return s
		}
	}
	return p
}

// personOnlyChanged is personOnly of the files git diff lists for each
// of diffs (a range, or options and a commit, of ours, never a name the
// model gave): the work-tree files a checkout, merge, pull or abort
// writes or removes.
func (r *repo) personOnlyChanged(ctx context.Context, verb string, diffs ...[]string) (string, *tools.Result) {
	var paths []string
	for _, d := range diffs {
		// -z: names exactly as they are, not quoted.
		res := r.cmd(true).run(ctx, DiffTimeout, diffArgs(append([]string{"--name-only", "-z"}, d...)...)...)
		if !res.ok() {
			return "", fail(res.failure("git diff", r.dir))
		}
		if res.stdoutTruncated {
			// The names past the cut cannot be judged: a person is
			// asked rather than any of them let through unseen.
			return fmt.Sprintf("it %s more files than can be judged one by one (git's list of them passed %d bytes)", verb, StreamCap), nil
		}
		for _, n := range strings.Split(res.stdout, "\x00") {
			if n != "" {
				paths = append(paths, n)
			}
		}
	}
	return r.personOnly(paths, verb), nil
}
