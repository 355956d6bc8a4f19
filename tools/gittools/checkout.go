package gittools

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jazz-run/jazz/tools"
)

type checkoutArgs struct {
	baseArgs
	Branch string `json:"branch"`
	Create bool   `json:"create,omitempty"`
	Force  bool   `json:"force,omitempty"`
}

// Kinds of checkout target, in plan.kind.
const (
	targetNew      = "new"      // create: a new branch at HEAD
	targetBranch   = "branch"   // a local branch
	targetTracking = "tracking" // a new local branch tracking the one remote branch of that name
	targetDetached = "detached" // a commit (tag, hash): detached HEAD
)

// planCheckout works out what switching to a.Branch does to the work
// tree: which files change, which local changes are carried over, and
// with force which are discarded and which untracked files overwritten.
// The branch argument names a branch or a commit, never a path: git's
// `checkout <path>` form, which discards a file's changes, is not reached.
func planCheckout(ctx context.Context, r *repo, a *checkoutArgs) (*plan, *tools.Result) {
	if f := refArg("branch", a.Branch); f != nil {
		return nil, f
	}
	_, head, f := r.head(ctx)
	if f != nil {
		return nil, f
	}
	p := &plan{}
	var target string // the commit the work tree becomes
	var b strings.Builder
	switch {
	case a.Create:
		if f := r.branchArg(ctx, a.Branch); f != nil {
			return nil, f
		}
		if oid, f := r.refOid(ctx, "refs/heads/"+a.Branch); f != nil {
			return nil, f
		} else if oid != "" {
			return nil, fail(fmt.Sprintf("A branch named %q already exists (at %s).", a.Branch, r.subject(ctx, oid)))
		}
		p.kind, target = targetNew, head
		fmt.Fprintf(&b, "Creates the branch %s at HEAD (%s) and switches to it.\n", a.Branch, r.subject(ctx, head))
	default:
		oid, f := r.refOid(ctx, "refs/heads/"+a.Branch)
		if f != nil {
			return nil, f
		}
		if oid != "" {
			p.kind, target = targetBranch, oid
			fmt.Fprintf(&b, "Switches to the branch %s at %s.\n", a.Branch, r.subject(ctx, oid))
			break
		}
		remote, roid, f := r.uniqueRemoteBranch(ctx, a.Branch)
		if f != nil {
			return nil, f
		}
		if roid != "" {
			p.kind, p.ref, target = targetTracking, remote, roid
			fmt.Fprintf(&b, "Creates the branch %s tracking %s (at %s) and switches to it.\n", a.Branch, remote, r.subject(ctx, roid))
			break
		}
		coid, f := r.resolve(ctx, a.Branch)
		if f != nil {
			return nil, f
		}
		if coid == "" {
			return nil, fail(fmt.Sprintf("No branch or commit named %q.", a.Branch))
		}
		p.kind, target = targetDetached, coid
		fmt.Fprintf(&b, "Detaches HEAD at %s (%s is not a branch).\n", r.subject(ctx, coid), a.Branch)
	}
	p.oid = target
	state, f := r.baseState(ctx)
	if f != nil {
		return nil, f
	}
	state = append(state, "checkout "+p.kind+" "+a.Branch+" "+p.ref+" "+target, fmt.Sprintf("force %t", a.Force))

	// What the switch itself changes: HEAD's tree against the target's.
	var changing []string
	if head != "unborn" && target != "unborn" && head != target {
		names, f := r.text(ctx, DiffTimeout, diffArgs("--name-status", head, target)...)
		if f != nil {
			return nil, f
		}
		if names != "" {
			b.WriteString("Files the switch changes in the work tree:\n" + capText(names))
		}
		onlyNames, f := r.text(ctx, DiffTimeout, diffArgs("--name-only", head, target)...)
		if f != nil {
			return nil, f
		}
		changing = lines(onlyNames)
	}
	local, f := r.text(ctx, DefaultTimeout, "status", "--porcelain=v1", "--untracked-files=all", "--ignore-submodules=dirty")
	if f != nil {
		return nil, f
	}
	var touched, untracked []string
	for _, l := range lines(local) {
		if len(l) < 4 {
			continue
		}
		path := l[3:]
		if _, to, ok := strings.Cut(path, " -> "); ok {
			path = to
		}
		if strings.HasPrefix(l, "??") {
			untracked = append(untracked, path)
		} else {
			touched = append(touched, path)
		}
	}
	var targetFiles []string
	if len(untracked) > 0 && target != "unborn" {
		list, f := r.text(ctx, DefaultTimeout, "ls-tree", "-r", "--name-only", "--end-of-options", target)
		if f != nil {
			return nil, f
		}
		targetFiles = lines(list)
	}
	collide := intersect(untracked, targetFiles)
	conflicts := intersect(touched, changing)
	switch {
	case a.Force:
		if len(touched) > 0 {
			lost, f := r.text(ctx, DiffTimeout, diffArgs("HEAD")...)
			if f != nil {
				lost = strings.Join(touched, "\n") + "\n"
			}
			b.WriteString("FORCE: these uncommitted changes are discarded:\n" + capText(lost))
		}
		if len(collide) > 0 {
			b.WriteString("FORCE: these untracked files are overwritten by the target's version:\n  " + strings.Join(collide, "\n  ") + "\n")
		}
		if len(touched) == 0 && len(collide) == 0 {
			b.WriteString("No local changes are discarded.\n")
		}
	case len(conflicts) > 0:
		return nil, fail("Checkout would overwrite local changes to: " + strings.Join(conflicts, ", ") +
			". Commit or stash them, or pass force: true to discard them.")
	case len(collide) > 0:
		return nil, fail("Checkout would overwrite untracked files: " + strings.Join(collide, ", ") +
			". Move them away, or pass force: true to overwrite them.")
	case len(touched) > 0:
		b.WriteString("Uncommitted changes carried over unchanged:\n  " + strings.Join(touched, "\n  ") + "\n")
	}
	if len(collide) > 0 {
		// The overwritten untracked files' content is part of the state.
		c, f := r.contentState(ctx, collide)
		if f != nil {
			return nil, f
		}
		state = append(state, c)
	}
	msg := `Checkout branch "` + quoted(a.Branch) + `"`
	if a.Create {
		msg += " (create new branch)"
	}
	if a.Force {
		msg += " (FORCE - discards changes)"
	}
	p.message, p.preview, p.state = msg, b.String(), state
	// The work-tree files the switch rewrites: what changes between the
	// trees, untracked files it overwrites, and with force the local
	// changes it resets.
	rewritten := collide
	if a.Force {
		rewritten = append(append([]string(nil), collide...), touched...)
	}
	if head != "unborn" && target != "unborn" && head != target {
		if p.humanOnly, f = r.personOnlyChanged(ctx, "replaces", []string{head, target}); f != nil {
			return nil, f
		}
	}
	if p.humanOnly == "" {
		p.humanOnly = r.personOnly(rewritten, "replaces")
	}
	return p, nil
}

// uniqueRemoteBranch is the one remote-tracking branch named b (as git's
// checkout guesses it), with its commit; none when zero or several.
func (r *repo) uniqueRemoteBranch(ctx context.Context, b string) (string, string, *tools.Result) {
	out, f := r.text(ctx, DefaultTimeout, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/remotes/*/"+b)
	if f != nil {
		return "", "", f
	}
	var found [][]string
	for _, l := range lines(out) {
		if name, oid, ok := strings.Cut(l, " "); ok && strings.HasSuffix(name, "/"+b) {
			found = append(found, []string{name, oid})
		}
	}
	if len(found) != 1 {
		return "", "", nil
	}
	return found[0][0], found[0][1], nil
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// CheckoutResult is git_checkout's result.
type CheckoutResult struct {
	WorkingDirectory string `json:"workingDirectory"`
	Branch           string `json:"branch"`
	Created          bool   `json:"created"`
	Force            bool   `json:"force"`
	Message          string `json:"message"`
}

func actCheckout(ctx context.Context, r *repo, a *checkoutArgs, p *plan) tools.Result {
	args := []string{"checkout"}
	if a.Force {
		args = append(args, "-f")
	}
	switch p.kind {
	case targetNew:
		args = append(args, "-b", a.Branch)
		if p.oid != "unborn" {
			// At the previewed HEAD, not wherever HEAD is by now.
			args = append(args, p.oid, "--")
		}
	case targetBranch:
		return r.checkoutPinned(ctx, a, p)
	case targetTracking:
		// At the previewed commit of the remote branch, which can move
		// meanwhile (a fetch); the upstream is then set by name.
		args = append(args, "-b", a.Branch, p.oid, "--")
		if res := r.act(ctx, DefaultTimeout, args...); !res.ok() {
			return tools.Fail(res.failure("git checkout", r.dir))
		}
		if res := r.act(ctx, DefaultTimeout, "branch", "--set-upstream-to="+p.ref, a.Branch); !res.ok() {
			return tools.Fail("Switched to the new branch " + a.Branch + " at " + p.oid + ", but its upstream could not be set to " + p.ref + ": " + res.failure("git branch", r.dir))
		}
		return tools.OK(CheckoutResult{WorkingDirectory: r.dir, Branch: a.Branch, Created: true, Force: a.Force, Message: "Switched to branch: " + a.Branch})
	case targetDetached:
		args = append(args, "--detach", p.oid, "--")
	}
	if res := r.act(ctx, DefaultTimeout, args...); !res.ok() {
		return tools.Fail(res.failure("git checkout", r.dir))
	}
	return tools.OK(CheckoutResult{WorkingDirectory: r.dir, Branch: a.Branch, Created: p.kind == targetNew || p.kind == targetTracking,
		Force: a.Force, Message: "Switched to branch: " + a.Branch})
}

// checkoutPinned switches to a local branch as previewed: the branch can
// move between the twin's check and git's own reading of it, and
// `git checkout <branch>` would then write the files of a commit nobody
// approved. So the work tree is switched to the previewed commit itself
// (detached), HEAD is then attached to the branch, and the branch is
// checked to be still there; when it is not, HEAD is left detached at the
// previewed commit and the twin refuses.
func (r *repo) checkoutPinned(ctx context.Context, a *checkoutArgs, p *plan) tools.Result {
	args := []string{"checkout"}
	if a.Force {
		args = append(args, "-f")
	}
	if res := r.act(ctx, DefaultTimeout, append(args, "--detach", p.oid, "--")...); !res.ok() {
		return tools.Fail(res.failure("git checkout", r.dir))
	}
	ref := "refs/heads/" + a.Branch
	if res := r.act(ctx, DefaultTimeout, "symbolic-ref", "-m", "checkout: moving from "+p.oid+" to "+a.Branch, "HEAD", ref); !res.ok() {
		return tools.Fail(res.failure("git symbolic-ref", r.dir))
	}
	now, f := r.refOid(ctx, ref)
	if f != nil {
		return *f
	}
	if now != p.oid {
		detach := r.act(ctx, DefaultTimeout, "update-ref", "--no-deref", "-m", "jazz: the branch moved during the switch", "HEAD", p.oid)
		left := "HEAD is left detached at the previewed commit " + p.oid
		if !detach.ok() {
			left = "HEAD could not be detached at the previewed commit " + p.oid + " (" + detach.failure("git update-ref", r.dir) + ")"
		}
		return tools.Fail(fmt.Sprintf("%s (the branch %s moved to %s during the switch; the work tree holds the previewed commit, and %s)", changedMessage(r), a.Branch, now, left))
	}
	return tools.OK(CheckoutResult{WorkingDirectory: r.dir, Branch: a.Branch, Force: a.Force, Message: "Switched to branch: " + a.Branch})
}
