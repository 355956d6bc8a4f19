package gittools

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jazz-run/jazz/tools"
)

// NetworkTimeout bounds one fetch or push. The spec's 15 s is git's
// local-operation bound; a push of real history over a real network takes
// longer, and the tool's own timeout still bounds the call.
const NetworkTimeout = 60 * time.Second

// maxListed is how many commits a preview lists before it counts the rest.
const maxListed = 30

// remoteInfo is a configured remote as a push or pull will use it.
type remoteInfo struct {
	name string
	url  string // the URL git will use (push URL for a push), insteadOf applied
	// local is set for a path or file:// URL: the repository there runs
	// its own receive-pack or upload-pack, so it is inspected like ours.
	local string
}

// openRemote checks that name is a configured remote and finds its URL.
func (r *repo) openRemote(ctx context.Context, name string, push bool) (*remoteInfo, *tools.Result) {
	if f := refArg("remote", name); f != nil {
		return nil, f
	}
	res := r.cmd(true).run(ctx, DefaultTimeout, "remote")
	if !res.ok() {
		return nil, fail(res.failure("git remote", r.dir))
	}
	if !slices.Contains(lines(res.stdout), name) {
		return nil, fail(fmt.Sprintf("No remote named %q is configured in %s; git tools push to and pull from configured remotes only (see `git remote -v`).", name, r.top))
	}
	args := []string{"remote", "get-url"}
	if push {
		args = append(args, "--push")
	}
	res = r.cmd(true).run(ctx, DefaultTimeout, append(args, name)...)
	if !res.ok() {
		return nil, fail(res.failure("git remote get-url", r.dir))
	}
	ri := &remoteInfo{name: name, url: strings.TrimSpace(res.stdout)}
	ri.local = localPath(ri.url, r.dir)
	return ri, nil
}

// localPath is the directory a local remote URL names, "" for a network
// URL (scheme://, or scp-like host:path).
func localPath(u, dir string) string {
	if rest, ok := strings.CutPrefix(u, "file://"); ok {
		if p, err := url.PathUnescape(rest); err == nil {
			return filepath.Clean(p)
		}
		return filepath.Clean(rest)
	}
	if strings.Contains(u, "://") {
		return ""
	}
	if i := strings.IndexByte(u, ':'); i >= 0 && !strings.Contains(u[:i], "/") {
		return "" // scp-like ssh
	}
	return absIn(dir, u)
}

// protocols is the transport policy of a network operation: known network
// protocols always, `file` only for a local repository that was inspected,
// nothing else (remote helpers, `ext::`, `fd::`).
func (ri *remoteInfo) protocols(highRisk bool) []string {
	if highRisk {
		// The user allowed the repository's own choices; a local remote
		// still needs `file` allowed, as GIT_PROTOCOL_FROM_USER=0 keeps
		// git's default ("user") from allowing it.
		if ri.local != "" {
			return []string{"protocol.file.allow=always"}
		}
		return nil
	}
	p := []string{"protocol.allow=never", "protocol.https.allow=always", "protocol.http.allow=always",
		"protocol.ssh.allow=always", "protocol.git.allow=always"}
	if ri.local != "" {
		p = append(p, "protocol.file.allow=always")
	}
	return p
}

// checkLocal inspects a local remote's repository as openRepo inspects
// ours: its receive-pack or upload-pack runs there with its hooks and
// configuration.
func (r *repo) checkLocal(ctx context.Context, ri *remoteInfo) *tools.Result {
	if ri.local == "" || r.highRisk {
		return nil
	}
	fi, err := os.Stat(ri.local)
	if err != nil || !fi.IsDir() {
		return fail(fmt.Sprintf("The remote %s is the local path %s, which is not a directory.", ri.name, ri.local))
	}
	gitDir := localGitDir(ri.local)
	// The remote's repository is named explicitly: it may be bare.
	risks, why := configRisks(ctx, &gitCmd{dir: gitDir, gitDir: gitDir, readOnly: true, environ: r.environ, box: r.box})
	if why != "" {
		return fail(why)
	}
	hooks, why := hookRisks(ctx, r.hooksQuery(gitDir, gitDir), gitDir, ri.local, gitDir)
	if why != "" {
		return fail(why)
	}
	if risks = append(risks, hooks...); len(risks) > 0 {
		return fail(hostileMessage("the remote "+ri.name+"'s repository", ri.local, risks))
	}
	return nil
}

// localGitDir is the git directory of the repository at local, a bare
// one or a work tree's.
func localGitDir(local string) string {
	if st, err := os.Stat(filepath.Join(local, ".git")); err == nil && st.IsDir() {
		return filepath.Join(local, ".git")
	}
	return local
}

// localName is the remote's name when its repository is on this machine.
func (ri *remoteInfo) localName() string {
	if ri.local == "" {
		return ""
	}
	return ri.name
}

// network is the gitCmd of a fetch or push to ri.
func (r *repo) network(ri *remoteInfo) *gitCmd {
	return &gitCmd{dir: r.dir, network: true, protocols: ri.protocols(r.highRisk), environ: r.environ, box: r.box,
		hooks: r.hooks, localRemote: ri.localName(), remoteHooks: r.remoteHooks}
}

// currentBranch is the short name of the branch HEAD is on.
func (r *repo) currentBranch(ctx context.Context) (string, *tools.Result) {
	branch, _, f := r.head(ctx)
	if f != nil {
		return "", f
	}
	if branch == "detached" {
		return "", fail("HEAD is detached (on no branch); name the branch.")
	}
	return strings.TrimPrefix(branch, "refs/heads/"), nil
}

// branchArg checks a branch name given by the model.
func (r *repo) branchArg(ctx context.Context, b string) *tools.Result {
	if f := refArg("branch", b); f != nil {
		return f
	}
	if res := r.cmd(true).run(ctx, DefaultTimeout, "check-ref-format", "--branch", b); !res.ok() {
		return fail(fmt.Sprintf("%q is not a valid branch name", b))
	}
	return nil
}

// upstream is branch's upstream on remote (the short name of
// branch.<b>.merge), "" when it has none there.
func (r *repo) upstream(ctx context.Context, branch, remote string) string {
	get := func(key string) string {
		res := r.cmd(true).run(ctx, DefaultTimeout, "config", "--get", key)
		return strings.TrimSpace(res.stdout)
	}
	if get("branch."+branch+".remote") != remote {
		return ""
	}
	return strings.TrimPrefix(get("branch."+branch+".merge"), "refs/heads/")
}

type pushArgs struct {
	baseArgs
	Remote string `json:"remote,omitempty"`
	Branch string `json:"branch,omitempty"`
	Force  bool   `json:"force,omitempty"`
}

func (a *pushArgs) remote() string {
	if a.Remote == "" {
		return "origin"
	}
	return a.Remote
}

// pushPlan adds what the twin pushes to a plan: kind is the destination
// ref, ref the remote-tracking ref's last known object ("" = none).
func planPush(ctx context.Context, r *repo, a *pushArgs) (*plan, *tools.Result) {
	ri, f := r.openRemote(ctx, a.remote(), true)
	if f != nil {
		return nil, f
	}
	branch := a.Branch
	if branch == "" {
		if branch, f = r.currentBranch(ctx); f != nil {
			return nil, f
		}
	}
	if f := r.branchArg(ctx, branch); f != nil {
		return nil, f
	}
	oid, f := r.refOid(ctx, "refs/heads/"+branch)
	if f != nil {
		return nil, f
	}
	if oid == "" {
		return nil, fail(fmt.Sprintf("There is no local branch %q to push.", branch))
	}
	dst := branch
	if a.Branch == "" {
		if up := r.upstream(ctx, branch, ri.name); up != "" {
			dst = up
		}
	}
	tracking := "refs/remotes/" + ri.name + "/" + dst
	known, f := r.refOid(ctx, tracking)
	if f != nil {
		return nil, f
	}
	if f := r.checkLocal(ctx, ri); f != nil {
		return nil, f
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Remote: %s\nURL: %s\nPush: refs/heads/%s (%s) to refs/heads/%s\n", ri.name, redactURLs(ri.url), branch, r.subject(ctx, oid), dst)
	if known == "" {
		fmt.Fprintf(&b, "%s/%s is not known here (never fetched, or a new branch): the remote gets every commit it lacks of:\n", ri.name, dst)
		list, n, f := r.commitList(ctx, maxListed, oid, "--not", "--remotes="+ri.name)
		if f != nil {
			return nil, f
		}
		fmt.Fprintf(&b, "%s commit(s) not on any branch of %s known here:\n%s", fmt.Sprint(n), ri.name, list)
	} else {
		fmt.Fprintf(&b, "As of the last fetch, %s/%s is at %s.\n", ri.name, dst, r.subject(ctx, known))
		list, n, f := r.commitList(ctx, maxListed, known+".."+oid)
		if f != nil {
			return nil, f
		}
		fmt.Fprintf(&b, "The remote receives %s:\n%s", plural(n, "commit", "commits"), list)
		lost, m, f := r.commitList(ctx, maxListed, oid+".."+known)
		if f != nil {
			return nil, f
		}
		switch {
		case m > 0 && a.Force:
			fmt.Fprintf(&b, "FORCE: %s on %s/%s that the local branch lacks are discarded from the remote:\n%s", plural(m, "commit", "commits"), ri.name, dst, lost)
		case m > 0:
			fmt.Fprintf(&b, "Not a fast-forward: %s/%s has %s the local branch lacks, so the remote will refuse this push (pull first, or force).\n", ri.name, dst, plural(m, "commit", "commits"))
		}
	}
	if a.Force {
		fmt.Fprintf(&b, "The force is leased: the remote ref is overwritten only if it is still at %s.\n", orNone(known))
	}
	msg := "Push"
	if a.Force {
		msg += " (FORCE PUSH)"
	}
	target := a.Branch
	if target == "" {
		target = "current branch"
	}
	msg += " to " + quoted(ri.name) + "/" + quoted(target)
	p := &plan{message: msg, preview: b.String(),
		state: []string{"push " + ri.url, "src " + branch + " " + oid, "dst " + dst, "known " + known, fmt.Sprintf("force %t", a.Force)},
		oid:   oid, kind: dst, ref: known}
	if ri.local != "" {
		p.remoteGitDir = localGitDir(ri.local)
	}
	return p, nil
}

func orNone(oid string) string {
	if oid == "" {
		return "nothing (the ref must not exist)"
	}
	return oid
}

// PushResult is git_push's result.
type PushResult struct {
	WorkingDirectory string `json:"workingDirectory"`
	Remote           string `json:"remote"`
	Branch           string `json:"branch"`
	Force            bool   `json:"force"`
	Message          string `json:"message"`
	Output           string `json:"output,omitempty"`
}

func actPush(ctx context.Context, r *repo, a *pushArgs, p *plan) tools.Result {
	ri, f := r.openRemote(ctx, a.remote(), true)
	if f != nil {
		return *f
	}
	// Exactly the previewed commit, to exactly the previewed ref; a force
	// only over what the preview saw there.
	args := []string{"push", "--porcelain", "--no-follow-tags", "--no-recurse-submodules"}
	if a.Force {
		args = append(args, "--force-with-lease=refs/heads/"+p.kind+":"+p.ref)
	}
	args = append(args, "--", ri.name, p.oid+":refs/heads/"+p.kind)
	res := r.network(ri).run(ctx, NetworkTimeout, args...)
	if !res.ok() {
		return tools.Fail(redactURLs(res.failure("git push", r.dir)))
	}
	branch := a.Branch
	if branch == "" {
		branch = "current"
	}
	return tools.OK(PushResult{WorkingDirectory: r.dir, Remote: ri.name, Branch: branch, Force: a.Force,
		Message: "Changes pushed successfully", Output: strings.TrimSpace(redactURLs(res.stdout))})
}

type pullArgs struct {
	baseArgs
	Remote string `json:"remote,omitempty"`
	Branch string `json:"branch,omitempty"`
	Rebase bool   `json:"rebase,omitempty"`
}

func (a *pullArgs) remote() string {
	if a.Remote == "" {
		return "origin"
	}
	return a.Remote
}

// planPull previews a pull from what was last fetched; the twin fetches
// and goes on only if the remote branch is still there.
func planPull(ctx context.Context, r *repo, a *pullArgs) (*plan, *tools.Result) {
	ri, f := r.openRemote(ctx, a.remote(), false)
	if f != nil {
		return nil, f
	}
	_, head, f := r.head(ctx)
	if f != nil {
		return nil, f
	}
	branch := a.Branch
	if branch == "" {
		cur, f := r.currentBranch(ctx)
		if f != nil {
			return nil, f
		}
		if branch = r.upstream(ctx, cur, ri.name); branch == "" {
			return nil, fail(fmt.Sprintf("The branch %s has no upstream branch on %s; name the branch to pull.", cur, ri.name))
		}
	}
	if f := r.branchArg(ctx, branch); f != nil {
		return nil, f
	}
	tracking := "refs/remotes/" + ri.name + "/" + branch
	known, f := r.refOid(ctx, tracking)
	if f != nil {
		return nil, f
	}
	if f := r.checkLocal(ctx, ri); f != nil {
		return nil, f
	}
	state, f := r.baseState(ctx)
	if f != nil {
		return nil, f
	}
	state = append(state, "pull "+ri.url, "branch "+branch, "known "+known, fmt.Sprintf("rebase %t", a.Rebase))
	var b strings.Builder
	fmt.Fprintf(&b, "Remote: %s\nURL: %s\nBranch: %s, %s into the current HEAD (%s)\n", ri.name, redactURLs(ri.url), branch,
		map[bool]string{true: "rebasing the local commits onto it", false: "merged"}[a.Rebase], r.subject(ctx, head))
	if known == "" {
		fmt.Fprintf(&b, "%s/%s has never been fetched, so what it holds is unknown here. The pull fetches it and stops before changing anything; propose it again to see its commits.\n", ri.name, branch)
	} else {
		fmt.Fprintf(&b, "As of the last fetch, %s/%s is at %s.\n", ri.name, branch, r.subject(ctx, known))
		if head != "unborn" {
			list, n, f := r.commitList(ctx, maxListed, head+".."+known)
			if f != nil {
				return nil, f
			}
			fmt.Fprintf(&b, "Incoming: %s\n%s", plural(n, "commit", "commits"), list)
			stat, f := r.text(ctx, DiffTimeout, diffArgs("--stat", head+"..."+known)...)
			if f != nil {
				return nil, f
			}
			if stat != "" {
				b.WriteString("Files changed by them:\n" + capText(stat))
			}
			if a.Rebase {
				mine, m, f := r.commitList(ctx, maxListed, known+".."+head)
				if f != nil {
					return nil, f
				}
				if m > 0 {
					fmt.Fprintf(&b, "Local commits replayed on top (%d):\n%s", m, mine)
				}
			}
		}
		fmt.Fprintf(&b, "The pull fetches first; if %s/%s has moved since this preview, nothing is merged and the pull must be proposed again.\n", ri.name, branch)
	}
	if local, f := r.text(ctx, DefaultTimeout, "status", "--short", "--ignore-submodules=dirty"); f == nil && local != "" {
		b.WriteString("Uncommitted local changes (git refuses the pull if it would overwrite them):\n" + capText(local))
	}
	msg := "Pull"
	if a.Rebase {
		msg += " (with rebase)"
	}
	target := a.Branch
	if target == "" {
		target = "current branch"
	}
	msg += " from " + quoted(ri.name) + "/" + quoted(target)
	why := ""
	if known != "" && head != "unborn" {
		// What the merge brings in, and with rebase the local commits
		// replayed, are the files the pull rewrites.
		diffs := [][]string{{head + "..." + known}}
		if a.Rebase {
			diffs = append(diffs, []string{known + "..." + head})
		}
		if why, f = r.personOnlyChanged(ctx, "rewrites", diffs...); f != nil {
			return nil, f
		}
	}
	return &plan{message: msg, preview: b.String(), state: state, ref: known, kind: branch, humanOnly: why}, nil
}

// PullResult is git_pull's result.
type PullResult struct {
	WorkingDirectory string `json:"workingDirectory"`
	Remote           string `json:"remote"`
	Branch           string `json:"branch"`
	Rebase           bool   `json:"rebase"`
	Message          string `json:"message"`
}

func actPull(ctx context.Context, r *repo, a *pullArgs, p *plan) tools.Result {
	ri, f := r.openRemote(ctx, a.remote(), false)
	if f != nil {
		return *f
	}
	tracking := "refs/remotes/" + ri.name + "/" + p.kind
	res := r.network(ri).run(ctx, NetworkTimeout, "fetch", "--no-recurse-submodules", "--no-write-fetch-head", "--",
		ri.name, "+refs/heads/"+p.kind+":"+tracking)
	if !res.ok() {
		return tools.Fail(redactURLs(res.failure("git fetch", r.dir)))
	}
	now, f := r.refOid(ctx, tracking)
	if f != nil {
		return *f
	}
	if now != p.ref {
		return tools.Fail(fmt.Sprintf("%s/%s moved since the preview (it was %s, it is %s now): it was fetched, nothing was merged. Propose the pull again to see what it brings.",
			ri.name, p.kind, orUnknown(p.ref), now))
	}
	branch := a.Branch
	if branch == "" {
		branch = "current"
	}
	var args []string
	if a.Rebase {
		args = []string{"rebase", "--no-autosquash", "--end-of-options", now}
	} else {
		args = []string{"merge", "--no-edit", "-m", fmt.Sprintf("Merge branch '%s' of %s", p.kind, ri.name), "--end-of-options", now}
	}
	res = r.act(ctx, MergeTimeout, args...)
	if !res.ok() {
		return mergeFailure(r, p.kind, res, "git "+args[0])
	}
	return tools.OK(PullResult{WorkingDirectory: r.dir, Remote: ri.name, Branch: branch, Rebase: a.Rebase, Message: "Changes pulled successfully"})
}

func orUnknown(oid string) string {
	if oid == "" {
		return "never fetched"
	}
	return oid
}
