package gittools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jazz-run/jazz/escalation"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
)

// pairDef declares one gated git tool.
type pairDef struct {
	name, desc string
	props      string // JSON object members, for objectSchema
	required   []string
	propose    handler
	execute    handler
}

// baseArgs are the arguments every pair shares; ExpectedState exists only
// in the twins' schemas.
type baseArgs struct {
	Path          string  `json:"path,omitempty"`
	ExpectedState *string `json:"expectedState,omitempty"`
}

func (b *baseArgs) base() *baseArgs { return b }

// pairArgs is a pair's argument struct (embedding baseArgs).
type pairArgs interface{ base() *baseArgs }

// plan is what a propose half found: what to tell the approver, and the
// state the twin must find again.
type plan struct {
	message string // the approval message before "\nDirectory: <dir>"
	after   string // what follows the Directory line (commit's Mode)
	preview string
	// state is the fingerprint's text: one fact per entry.
	state []string
	// facts the twin acts on, found by the same plan function.
	oid, ref, kind string
	// branch is HEAD's branch ("detached" when none) and index and
	// worktree the state lines of the index entries and the tracked
	// files' changes, for a twin that pins them (pinIndex).
	branch, index, worktree string
	// hooks are the hooks the approval covers, as coverHooks read them:
	// the only ones the twin's git runs (pinHooks). remoteHooks are those
	// of remoteGitDir, a repository on this machine a push goes to, whose
	// receive-pack runs them.
	hooks, remoteHooks []hookFile
	remoteGitDir       string
	// paths are the work-tree paths a dry run listed (relative to the
	// top), and content their contentState line, for a twin that
	// stages or removes exactly them.
	paths   []string
	content string
	// states are the paths' own states (pathStates), for a twin that
	// checks each file right before it deletes it.
	states []string
	// done, when set, is the propose half's whole answer: nothing needs
	// approval (a merge that is already up to date).
	done *tools.Result
	// humanOnly, when set, says why only a person may approve the
	// change (messages.ApprovalRequest.HumanOnly): it deletes a file
	// the user made read-only.
	humanOnly string
}

// fingerprint binds the state and who may approve it: a twin whose plan
// now needs a person refuses an approval given by anyone.
func (p *plan) fingerprint() string {
	sum := sha256.Sum256([]byte(strings.Join(p.state, "\n") + "\nperson-only " + strconv.Quote(p.humanOnly)))
	return hex.EncodeToString(sum[:])
}

// planFunc works out what a call of a pair would do, changing nothing.
type planFunc[A pairArgs] func(ctx context.Context, r *repo, a A) (*plan, *tools.Result)

// actFunc does it, after the twin found the planned state unchanged.
type actFunc[A pairArgs] func(ctx context.Context, r *repo, a A, p *plan) tools.Result

// proposeWith is a pair's propose half: decode, open the repository,
// plan, and ask for approval with the twin's arguments and fingerprint.
func proposeWith[T any, A interface {
	*T
	pairArgs
}](name string, planF planFunc[A]) handler {
	return func(ctx context.Context, c *call) tools.Result {
		a := A(new(T))
		if f := c.decode(a); f != nil {
			return *f
		}
		a.base().ExpectedState = nil // only a preview sets it
		r, f := c.open(ctx, a.base().Path, true)
		if f != nil {
			return *f
		}
		p, f := planF(ctx, r, a)
		if f != nil {
			return *f
		}
		if p.done != nil {
			return *p.done
		}
		if f := r.coverHooks(ctx, p); f != nil {
			return *f
		}
		state := p.fingerprint()
		a.base().ExpectedState = &state
		// The twin runs where the preview looked, whatever the agent's
		// working directory is by then.
		a.base().Path = argPath(r.dir)
		args, err := json.Marshal(a)
		if err != nil {
			return tools.Fail(fmt.Sprintf("encode %s arguments: %v", name, err))
		}
		return tools.Result{
			Error: approvalError(name),
			Approval: &messages.ApprovalRequest{
				Message:         p.message + "\nDirectory: " + disp(r.dir) + p.after + escalation.Note(p.humanOnly),
				PreviewDiff:     p.preview,
				ExecuteToolName: tools.TwinName(name),
				ExecuteArgs:     args,
				HumanOnly:       p.humanOnly,
			},
		}
	}
}

// executeWith is a pair's twin: it plans again and acts only when the
// state is the one the approval was given for.
func executeWith[T any, A interface {
	*T
	pairArgs
}](name string, planF planFunc[A], act actFunc[A]) handler {
	return func(ctx context.Context, c *call) tools.Result {
		a := A(new(T))
		if f := c.decode(a); f != nil {
			return *f
		}
		want := a.base().ExpectedState
		if want == nil {
			return tools.Fail(tools.TwinName(name) + " needs the expectedState of a " + name + " preview; propose the change again.")
		}
		r, f := c.open(ctx, a.base().Path, true)
		if f != nil {
			return *f
		}
		p, f := planF(ctx, r, a)
		if f != nil {
			// The preview could plan it; failing now means it changed.
			return tools.Fail(changedMessage(r) + " (" + f.Error + ")")
		}
		if p.done != nil {
			return tools.Fail(changedMessage(r))
		}
		if f := r.coverHooks(ctx, p); f != nil {
			return tools.Fail(changedMessage(r) + " (" + f.Error + ")")
		}
		if p.fingerprint() != *want {
			return tools.Fail(changedMessage(r))
		}
		d, done, f := r.pinHooks(p.hooks)
		if f != nil {
			return *f
		}
		defer done()
		rd, rdone, f := r.pinHooks(p.remoteHooks)
		if f != nil {
			return *f
		}
		defer rdone()
		r.hooks, r.remoteHooks = d, rd
		defer func() { r.hooks, r.remoteHooks = "", "" }()
		if c.o.hooksPinned != nil {
			c.o.hooksPinned(d, rd)
		}
		return act(ctx, r, a, p)
	}
}

// coverHooks makes the approval cover the hooks a twin's git may run.
// Below high-risk it runs none (gitCmd.hooks); under high-risk they
// are the repository's own, named in the preview and fingerprinted by
// name and content, so a hook added or rewritten after the preview makes
// the twin refuse, and one changed after the twin's check does not run
// (pinHooks).
func (r *repo) coverHooks(ctx context.Context, p *plan) *tools.Result {
	if !r.highRisk {
		return nil
	}
	line, files, f := r.hookSet(ctx, r.dir, "")
	if f != nil {
		return f
	}
	p.state = append(p.state, line)
	p.hooks = files
	if len(files) > 0 {
		p.preview += "\nHooks git may run (the policy is high-risk): " + hookNames(files) + "\n" + copyNote
	}
	if p.remoteGitDir == "" {
		return nil
	}
	// A push to a repository on this machine runs its receive-pack, and
	// with it that repository's hooks.
	line, files, f = r.hookSet(ctx, p.remoteGitDir, p.remoteGitDir)
	if f != nil {
		return f
	}
	p.state = append(p.state, "remote "+line)
	p.remoteHooks = files
	if len(files) > 0 {
		p.preview += "\nHooks the remote's repository (" + disp(p.remoteGitDir) + ") may run: " + hookNames(files) + "\n" + copyNote
	}
	return nil
}

// copyNote tells the approver how approved hooks run (pinHooks).
const copyNote = "(each runs from a private copy of the file as it is now; a file a hook reads beside it is not copied)\n"

// hookNames lists hooks for a preview.
func hookNames(files []hookFile) string {
	names := make([]string, len(files))
	for i, h := range files {
		names[i] = h.name
	}
	return disp(strings.Join(names, ", "))
}

func changedMessage(r *repo) string {
	return "The repository at " + disp(r.top) + " changed since the preview was approved; propose the change again."
}

// approvalError is the propose result's error (tool-schemas.md §5).
func approvalError(name string) string {
	if name == "git_tag" {
		return "Git tag create/delete requires user confirmation."
	}
	return "Git " + strings.TrimPrefix(name, "git_") + " requires user confirmation."
}

// argPath writes an absolute path so the twin's path resolution gives it
// back unchanged (it drops the backslash of `\X`).
func argPath(abs string) string { return strings.ReplaceAll(abs, `\`, `\\`) }

// disp is a path or name as a message shows it: quoted with escapes when
// it holds a character that is not printable, so no name can forge a line
// of the approval message.
func disp(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r != ' ' && !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// quoted is a model-given value inside a message's quotes.
func quoted(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// --- facts about the repository, for previews and fingerprints ---

// head is HEAD's state: the branch it is on (or "detached") and its
// commit (or "unborn").
func (r *repo) head(ctx context.Context) (branch, oid string, f *tools.Result) {
	g := r.cmd(true)
	res := g.run(ctx, DefaultTimeout, "symbolic-ref", "-q", "HEAD")
	switch {
	case res.ok():
		branch = strings.TrimSpace(res.stdout)
	case res.exitCode == 1 && res.spawnErr == nil && !res.timedOut:
		branch = "detached"
	default:
		return "", "", fail(res.failure("git symbolic-ref", r.dir))
	}
	oid, f = r.resolve(ctx, "HEAD")
	if f != nil {
		return "", "", f
	}
	if oid == "" {
		oid = "unborn"
	}
	return branch, oid, nil
}

// resolve is the commit rev names, "" when there is none.
func (r *repo) resolve(ctx context.Context, rev string) (string, *tools.Result) {
	res := r.cmd(true).run(ctx, DefaultTimeout, "rev-parse", "-q", "--verify", "--end-of-options", rev+"^{commit}")
	switch {
	case res.ok():
		return strings.TrimSpace(res.stdout), nil
	case res.exitCode == 1 && res.spawnErr == nil && !res.timedOut:
		return "", nil
	}
	return "", fail(res.failure("git rev-parse", r.dir))
}

// refOid is the object a full ref name points at, "" when it does not
// exist.
func (r *repo) refOid(ctx context.Context, ref string) (string, *tools.Result) {
	res := r.cmd(true).run(ctx, DefaultTimeout, "rev-parse", "-q", "--verify", "--end-of-options", ref)
	switch {
	case res.ok():
		return strings.TrimSpace(res.stdout), nil
	case res.exitCode == 1 && res.spawnErr == nil && !res.timedOut:
		return "", nil
	}
	return "", fail(res.failure("git rev-parse", r.dir))
}

// hashOf is the fingerprint of git's whole output for args.
func (r *repo) hashOf(ctx context.Context, what string, timeout time.Duration, args ...string) (string, *tools.Result) {
	res := r.cmd(true).runHashed(ctx, timeout, args...)
	if !res.ok() {
		return "", fail(res.failure("git "+args[0], r.dir))
	}
	return what + " " + res.hash, nil
}

// indexState fingerprints the index entries (mode, object, stage, path),
// not the index file: a refresh by another git changes the file only.
func (r *repo) indexState(ctx context.Context) (string, *tools.Result) {
	return r.hashOf(ctx, "index", DefaultTimeout, "ls-files", "--stage", "-z")
}

// worktreeState fingerprints the tracked files' changes against the index
// (their content, binary included) and the untracked files' names.
func (r *repo) worktreeState(ctx context.Context) ([]string, *tools.Result) {
	d, f := r.hashOf(ctx, "worktree", DiffTimeout, "diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty")
	if f != nil {
		return nil, f
	}
	u, f := r.hashOf(ctx, "untracked", DefaultTimeout, "ls-files", "--others", "--exclude-standard", "-z")
	if f != nil {
		return nil, f
	}
	return []string{d, u}, nil
}

// baseState is HEAD, the index and the work tree: what every change
// except a tag depends on.
func (r *repo) baseState(ctx context.Context) ([]string, *tools.Result) {
	branch, oid, f := r.head(ctx)
	if f != nil {
		return nil, f
	}
	idx, f := r.indexState(ctx)
	if f != nil {
		return nil, f
	}
	wt, f := r.worktreeState(ctx)
	if f != nil {
		return nil, f
	}
	return append([]string{"HEAD " + branch + " " + oid, idx}, wt...), nil
}

// text runs a read-only git command for a preview: its output, or the
// failure to return.
func (r *repo) text(ctx context.Context, timeout time.Duration, args ...string) (string, *tools.Result) {
	res := r.cmd(true).run(ctx, timeout, args...)
	if !res.ok() {
		return "", fail(res.failure("git "+args[0], r.dir))
	}
	out := redactURLs(res.stdout)
	if res.stdoutTruncated {
		out += fmt.Sprintf("[… cut at %d bytes]\n", StreamCap)
	}
	return out, nil
}

// diffArgs is `git diff` as previews show it.
func diffArgs(extra ...string) []string {
	return append([]string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty"}, extra...)
}

// commitList is up to max one-line commits of a log range, with a count
// of the rest. rangeArgs hold object ids and options of ours, never a
// name the model gave.
func (r *repo) commitList(ctx context.Context, max int, rangeArgs ...string) (string, int, *tools.Result) {
	res := r.cmd(true).run(ctx, DefaultTimeout, append([]string{"rev-list", "--count"}, rangeArgs...)...)
	if !res.ok() {
		return "", 0, fail(res.failure("git rev-list", r.dir))
	}
	n, _ := strconv.Atoi(strings.TrimSpace(res.stdout))
	if n == 0 {
		return "", 0, nil
	}
	out, f := r.text(ctx, DefaultTimeout, append([]string{"log", "--no-color", "--no-show-signature", "--format=  %h %s", fmt.Sprintf("--max-count=%d", max)}, rangeArgs...)...)
	if f != nil {
		return "", 0, f
	}
	if n > max {
		out += fmt.Sprintf("  … and %d more\n", n-max)
	}
	return out, n, nil
}

// subject is `<short> <subject>` of a commit.
func (r *repo) subject(ctx context.Context, oid string) string {
	res := r.cmd(true).run(ctx, DefaultTimeout, "log", "--no-color", "--no-show-signature", "-1", "--format=%h %s", "--end-of-options", oid)
	if !res.ok() {
		return oid
	}
	return strings.TrimSpace(redactURLs(res.stdout))
}

// act runs a changing git command for a twin.
func (r *repo) act(ctx context.Context, timeout time.Duration, args ...string) result {
	return r.cmd(false).run(ctx, timeout, args...)
}

func fail(msg string) *tools.Result {
	r := tools.Fail(msg)
	return &r
}

// plural is "1 commit" / "3 commits".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
