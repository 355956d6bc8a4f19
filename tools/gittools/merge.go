package gittools

import (
	"context"
	"fmt"
	"strings"

	"github.com/jazz-run/jazz/tools"
)

type mergeArgs struct {
	baseArgs
	Branch        string `json:"branch"`
	Message       string `json:"message,omitempty"`
	NoFastForward bool   `json:"noFastForward,omitempty"`
	Squash        bool   `json:"squash,omitempty"`
	Abort         bool   `json:"abort,omitempty"`
	Strategy      string `json:"strategy,omitempty"`
}

func planMerge(ctx context.Context, r *repo, a *mergeArgs) (*plan, *tools.Result) {
	if a.Abort {
		return planMergeAbort(ctx, r)
	}
	if f := refArg("branch", a.Branch); f != nil {
		return nil, f
	}
	_, head, f := r.head(ctx)
	if f != nil {
		return nil, f
	}
	if head == "unborn" {
		return nil, fail("The current branch has no commits yet; there is nothing to merge into.")
	}
	oid, f := r.resolve(ctx, a.Branch)
	if f != nil {
		return nil, f
	}
	if oid == "" {
		return nil, fail(fmt.Sprintf("No branch or commit named %q to merge.", a.Branch))
	}
	if r.isAncestor(ctx, oid, head) {
		res := tools.OK(MergeResult{WorkingDirectory: r.dir, Branch: a.Branch, Merged: false, Message: "Already up to date.",
			Strategy: a.Strategy, NoFastForward: a.NoFastForward, Squash: a.Squash})
		return &plan{done: &res}, nil
	}
	state, f := r.baseState(ctx)
	if f != nil {
		return nil, f
	}
	state = append(state, "merge "+a.Branch+" "+oid, "message "+a.Message,
		fmt.Sprintf("options %t %t %s", a.NoFastForward, a.Squash, a.Strategy))
	var b strings.Builder
	fmt.Fprintf(&b, "Merges %s (%s) into HEAD (%s).\n", a.Branch, r.subject(ctx, oid), r.subject(ctx, head))
	switch {
	case a.Squash:
		b.WriteString("Squash: the changes are staged, no commit is made and the branch is not recorded as merged.\n")
	case r.isAncestor(ctx, head, oid) && !a.NoFastForward:
		b.WriteString("Fast-forward: HEAD moves to the branch's commit; no merge commit is made.\n")
	default:
		b.WriteString("A merge commit is made.\n")
	}
	list, n, f := r.commitList(ctx, maxListed, head+".."+oid)
	if f != nil {
		return nil, f
	}
	fmt.Fprintf(&b, "Incoming: %s\n%s", plural(n, "commit", "commits"), list)
	if stat, f := r.text(ctx, DiffTimeout, diffArgs("--stat", head+"..."+oid)...); f == nil && stat != "" {
		b.WriteString("Files changed by them:\n" + capText(stat))
	}
	if both := r.changedOnBothSides(ctx, head, oid); len(both) > 0 {
		b.WriteString("Changed on both sides (may conflict):\n  " + strings.Join(both, "\n  ") + "\n")
	}
	if local, f := r.text(ctx, DefaultTimeout, "status", "--short", "--untracked-files=no", "--ignore-submodules=dirty"); f == nil && local != "" {
		b.WriteString("Uncommitted local changes (git refuses the merge if it touches them):\n" + capText(local))
	}
	msg := `Merge branch "` + quoted(a.Branch) + `" into current branch`
	var opts []string
	if a.NoFastForward {
		opts = append(opts, "no fast-forward")
	}
	if a.Squash {
		opts = append(opts, "squash")
	}
	if a.Strategy != "" {
		opts = append(opts, "strategy: "+a.Strategy)
	}
	if len(opts) > 0 {
		msg += "\nOptions: " + strings.Join(opts, ", ")
	}
	if a.Message != "" {
		msg += "\nMessage: \"" + quoted(a.Message) + "\""
	}
	why, f := r.personOnlyChanged(ctx, "rewrites", []string{head + "..." + oid})
	if f != nil {
		return nil, f
	}
	return &plan{message: msg, preview: b.String(), state: state, oid: oid, humanOnly: why}, nil
}

func planMergeAbort(ctx context.Context, r *repo) (*plan, *tools.Result) {
	mh, f := r.refOid(ctx, "MERGE_HEAD")
	if f != nil {
		return nil, f
	}
	if mh == "" {
		return nil, fail("There is no merge in progress to abort.")
	}
	state, f := r.baseState(ctx)
	if f != nil {
		return nil, f
	}
	state = append(state, "abort "+mh)
	var b strings.Builder
	fmt.Fprintf(&b, "Aborts the merge of %s: the index and work tree go back to HEAD as it was before the merge.\n", r.subject(ctx, mh))
	if lost, f := r.text(ctx, DiffTimeout, diffArgs("HEAD")...); f == nil && lost != "" {
		b.WriteString("Changes made since the merge began (conflict resolutions included) are discarded:\n" + capText(lost))
	}
	why, f := r.personOnlyChanged(ctx, "resets", []string{"HEAD"})
	if f != nil {
		return nil, f
	}
	return &plan{message: "Abort in-progress merge", preview: b.String(), state: state, kind: "abort", humanOnly: why}, nil
}

// isAncestor says whether a is an ancestor of b (or the same commit).
func (r *repo) isAncestor(ctx context.Context, a, b string) bool {
	return r.cmd(true).run(ctx, DefaultTimeout, "merge-base", "--is-ancestor", "--end-of-options", a, b).ok()
}

// changedOnBothSides lists the files both head and other changed since
// their merge base: where a merge may conflict.
func (r *repo) changedOnBothSides(ctx context.Context, head, other string) []string {
	res := r.cmd(true).run(ctx, DefaultTimeout, "merge-base", "--end-of-options", head, other)
	if !res.ok() {
		return nil
	}
	base := strings.TrimSpace(res.stdout)
	ours, f := r.text(ctx, DiffTimeout, diffArgs("--name-only", base, head)...)
	if f != nil {
		return nil
	}
	theirs, f := r.text(ctx, DiffTimeout, diffArgs("--name-only", base, other)...)
	if f != nil {
		return nil
	}
	return intersect(lines(ours), lines(theirs))
}

// MergeResult is git_merge's result.
type MergeResult struct {
	WorkingDirectory string `json:"workingDirectory"`
	Branch           string `json:"branch,omitempty"`
	Merged           bool   `json:"merged"`
	MergeCommitHash  string `json:"mergeCommitHash,omitempty"`
	Message          string `json:"message"`
	Strategy         string `json:"strategy,omitempty"`
	NoFastForward    bool   `json:"noFastForward"`
	Squash           bool   `json:"squash"`
}

// AbortResult is git_merge's result with abort.
type AbortResult struct {
	WorkingDirectory string `json:"workingDirectory"`
	Aborted          bool   `json:"aborted"`
	Message          string `json:"message"`
}

// ConflictResult is git_merge's (and git_pull's) result when the merge
// stopped.
type ConflictResult struct {
	WorkingDirectory string `json:"workingDirectory"`
	Branch           string `json:"branch"`
	HasConflicts     bool   `json:"hasConflicts"`
	Error            string `json:"error"`
}

func actMerge(ctx context.Context, r *repo, a *mergeArgs, p *plan) tools.Result {
	if p.kind == "abort" {
		if res := r.act(ctx, MergeTimeout, "merge", "--abort"); !res.ok() {
			return tools.Fail(res.failure("git merge --abort", r.dir))
		}
		return tools.OK(AbortResult{WorkingDirectory: r.dir, Aborted: true, Message: "Merge aborted successfully"})
	}
	args := []string{"merge", "--no-edit"}
	switch {
	case a.Message != "":
		args = append(args, "-m", a.Message)
	case !a.Squash:
		// The previewed commit is merged by its id; the message names the
		// branch as `git merge <branch>` would.
		args = append(args, "-m", fmt.Sprintf("Merge branch '%s'", a.Branch))
	}
	if a.NoFastForward {
		args = append(args, "--no-ff")
	}
	if a.Squash {
		args = append(args, "--squash")
	}
	if a.Strategy != "" {
		args = append(args, "--strategy="+a.Strategy)
	}
	args = append(args, "--end-of-options", p.oid)
	res := r.act(ctx, MergeTimeout, args...)
	if !res.ok() {
		return mergeFailure(r, a.Branch, res, "git merge")
	}
	hash, _ := r.resolve(ctx, "HEAD")
	return tools.OK(MergeResult{WorkingDirectory: r.dir, Branch: a.Branch, Merged: true, MergeCommitHash: hash,
		Message: strings.TrimSpace(res.stdout), Strategy: a.Strategy, NoFastForward: a.NoFastForward, Squash: a.Squash})
}

// mergeFailure is the result of a merge (or rebase) that stopped: git
// reports conflicts on stdout.
func mergeFailure(r *repo, branch string, res result, cmd string) tools.Result {
	msg := res.failure(cmd, r.dir)
	conflict := strings.Contains(res.stdout+res.stderr, "conflict") || strings.Contains(res.stdout+res.stderr, "CONFLICT")
	if conflict {
		msg = "Merge conflicts detected. Please resolve conflicts before continuing."
	}
	return tools.Result{Error: msg, Value: ConflictResult{WorkingDirectory: r.dir, Branch: branch, HasConflicts: conflict, Error: msg}}
}
