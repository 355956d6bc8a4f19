package gittools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jazz-run/jazz/escalation"
	"github.com/jazz-run/jazz/gitinert"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/pathres"
)

// repo is the repository one call works in, as git itself found it from
// the call's directory.
type repo struct {
	dir       string // where git runs: the path argument, a file's parent
	top       string // the work tree's root
	gitDir    string
	commonDir string
	// highRisk: the run's policy is high-risk, so the repository's own
	// programs (hooks, drivers, …) may run.
	highRisk bool
	// hooks is the private copy of the approved hooks a twin's git runs
	// (pinHooks); "" while there is none, when git runs no hook.
	// remoteHooks is the same for the receive-pack of a push to a
	// repository on this machine.
	hooks, remoteHooks string
	environ            func() []string
	box                *sandbox
	// guard is the run's secrets guard: a hook is read through it, since
	// its bytes are copied where git and the hooks can read them.
	guard secrets.Guard
	// homes is the user's home directory as written and resolved
	// (escalation.Homes), for judging what a change to the work tree
	// touches.
	homes []string
}

// cmd is how git runs for this repository.
func (r *repo) cmd(readOnly bool) *gitCmd {
	return &gitCmd{dir: r.dir, readOnly: readOnly, environ: r.environ, box: r.box, hooks: r.hooks}
}

// openRepo resolves the call's path and finds its repository, refusing a
// repository jazz's secrets live in, and (unless the policy is high-risk)
// one whose configuration or hooks would make git run programs the
// repository chose. mutating says the operation may run hooks. A non-nil
// Result is the failure to return.
func openRepo(ctx context.Context, env *tools.Env, o Options, pathArg string, mutating bool) (*repo, *tools.Result) {
	fail := func(msg string) (*repo, *tools.Result) {
		r := tools.Fail(msg)
		return nil, &r
	}
	dir := env.Cwd()
	if strings.TrimSpace(pathArg) != "" {
		dir = pathres.Resolve(env.Cwd(), env.Home, pathArg)
	}
	g := guardOf(env)
	if err := g.Check(dir); err != nil {
		return fail(err.Error())
	}
	fi, err := os.Stat(dir)
	if err != nil {
		in := pathArg
		if in == "" {
			in = dir
		}
		return fail("Path not found: " + in)
	}
	if !fi.IsDir() {
		dir = filepath.Dir(dir)
	}
	r := &repo{dir: dir, highRisk: tools.CurrentPolicy(env) == messages.PolicyHighRisk, environ: o.Environ, guard: g,
		homes: escalation.Homes(env.Home)}
	r.box = &sandbox{iso: o.Isolator, hide: env.Secrets.Hidden(env.JazzHome), known: env.Secrets.Redactor(), strict: r.highRisk}
	res := r.cmd(true).run(ctx, DefaultTimeout, "rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir")
	if !res.ok() {
		return fail(res.failure("git rev-parse", dir))
	}
	lines := strings.Split(strings.TrimRight(res.stdout, "\n"), "\n")
	if len(lines) != 3 {
		return fail(fmt.Sprintf("git rev-parse in directory '%s' gave an unexpected answer", dir))
	}
	r.top, r.gitDir, r.commonDir = lines[0], lines[1], absIn(dir, lines[2])
	for _, p := range []string{r.top, r.gitDir, r.commonDir} {
		if err := g.CheckSearch(p); err != nil {
			return fail(err.Error())
		}
	}
	// git reads and writes the whole work tree: one that holds jazz's own
	// secrets (a dotfiles repository at $HOME holding JAZZ_HOME) could
	// stage, commit and push them.
	for _, z := range g.Zones() {
		if secrets.Within(z, r.top) {
			return fail(fmt.Sprintf("Refused: the repository at %s contains %s, where jazz keeps secrets; git tools do not work in it.", r.top, z))
		}
	}
	if r.highRisk {
		return r, nil
	}
	risks, why := configRisks(ctx, r.cmd(true))
	if why != "" {
		return fail(why)
	}
	if mutating {
		hooks, why := hookRisks(ctx, r.hooksQuery(r.dir, ""), r.dir, r.top, r.gitDir, r.commonDir)
		if why != "" {
			return fail(why)
		}
		risks = append(risks, hooks...)
	}
	if len(risks) > 0 {
		return fail(hostileMessage("this repository", r.top, risks))
	}
	return r, nil
}

// hostileMessage is the refusal of a repository that would run its own
// programs.
func hostileMessage(what, where string, risks []string) string {
	const show = 8
	list := risks
	more := ""
	if len(list) > show {
		more = fmt.Sprintf(" and %d more", len(list)-show)
		list = list[:show]
	}
	return fmt.Sprintf("Refused: %s (%s) is configured to make git run programs or reach places of its own choosing: %s%s. "+
		"Git tools do not run in such a repository unless the approval policy is high-risk (--approval-policy high-risk).",
		what, where, strings.Join(list, ", "), more)
}

// absIn makes a path git printed relative to dir absolute.
func absIn(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// guardOf is the run's secrets guard (JAZZ_HOME, else ~/.jazz; /proc;
// the run's secret files).
func guardOf(env *tools.Env) secrets.Guard {
	home := env.JazzHome
	if home == "" && env.Home != "" {
		home = filepath.Join(env.Home, ".jazz")
	}
	return env.Secrets.Guard(home)
}

// configRisks lists the settings of the repository's own configuration
// (local and worktree scopes; includes not followed, so an include is a
// risk) that are not
// known to be inert (gitinert.Risks). The user's system and global
// configuration are theirs and trusted; command-line values are jazz's
// overrides.
func configRisks(ctx context.Context, g *gitCmd) ([]string, string) {
	res := g.run(ctx, DefaultTimeout, gitinert.ListArgs()...)
	if !res.ok() {
		return nil, "Refused: cannot read the repository's configuration: " + res.failure("git config --list", g.dir)
	}
	if res.stdoutTruncated {
		return nil, fmt.Sprintf("Refused: the repository's configuration is larger than %d bytes; it cannot be checked.", StreamCap)
	}
	if risks := gitinert.Risks(gitinert.Parse(res.stdout)); len(risks) > 0 {
		return risks, ""
	}
	// A status or diff may look into a submodule, where git works with
	// the submodule's own configuration.
	bin, err := exec.LookPath("git")
	if err != nil {
		return nil, "Refused: cannot find git: " + err.Error()
	}
	cfg := safetyConfig()
	if g.readOnly {
		cfg = append(cfg, gitinert.ReadOnlyOverrides()...)
	}
	risks, err := gitinert.SubmoduleRisks(ctx, bin, g.dir, gitinert.WithConfig(g.env(), cfg...))
	if err != nil {
		return nil, "Refused: " + err.Error()
	}
	return risks, ""
}

// hooksQuery is how git is asked where the hooks of the repository at
// dir (explicitly gitDir, when set) are: without NoHooks, which would
// make git answer the null device. It runs rev-parse only, which runs no
// hook.
func (r *repo) hooksQuery(dir, gitDir string) *gitCmd {
	return &gitCmd{dir: dir, gitDir: gitDir, environ: r.environ, box: r.box, askHooks: true}
}

// hooksDir is the hooks directory in effect for g's repository, with
// symlinks resolved; "" when there is none.
func hooksDir(ctx context.Context, g *gitCmd, dir string) (string, string) {
	res := g.run(ctx, DefaultTimeout, "rev-parse", "--git-path", "hooks")
	if !res.ok() {
		return "", "Refused: cannot find the repository's hooks: " + res.failure("git rev-parse", g.dir)
	}
	d := absIn(dir, strings.TrimRight(res.stdout, "\n"))
	real, err := filepath.EvalSymlinks(d)
	if os.IsNotExist(err) {
		return "", ""
	}
	if err != nil {
		return "", fmt.Sprintf("Refused: cannot resolve the hooks directory %s: %v", d, err)
	}
	return real, ""
}

// hooksIn lists the hooks git would run from the directory d: its
// executable files (through a link too) but the samples git installs.
func hooksIn(d string) ([]string, error) {
	ents, err := os.ReadDir(d)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sample") {
			continue
		}
		fi, err := os.Stat(filepath.Join(d, e.Name()))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			continue
		}
		out = append(out, e.Name())
	}
	return out, nil
}

// hookRisks lists the hooks git would run that the repository itself
// holds: the executable files of the hooks directory in effect, when that
// directory lies inside the repository (the default .git/hooks, or a
// relative core.hooksPath such as .githooks). A hooks directory of the
// user's own elsewhere is theirs.
func hookRisks(ctx context.Context, g *gitCmd, dir string, inside ...string) ([]string, string) {
	d, why := hooksDir(ctx, g, dir)
	if d == "" {
		return nil, why
	}
	if !slices.ContainsFunc(inside, func(p string) bool { return p != "" && secrets.Within(d, evalOr(p)) }) {
		return nil, ""
	}
	names, err := hooksIn(d)
	if err != nil {
		return nil, fmt.Sprintf("Refused: cannot read the hooks directory %s: %v", d, err)
	}
	risks := make([]string, 0, len(names))
	for _, n := range names {
		risks = append(risks, "hook "+filepath.Join(d, n))
	}
	return risks, ""
}

// hookSet is, under the high-risk policy, the state line of the hooks
// git may run in the repository at dir (explicitly gitDir, when set):
// the directory in effect, each hook's name and content; and the hooks
// themselves, as read for it. A twin, whose git runs them, refuses when
// they are not the ones its approval was given with, and its git runs
// exactly these bytes (pinHooks), never what the hooks directory holds
// by the time git starts.
func (r *repo) hookSet(ctx context.Context, dir, gitDir string) (string, []hookFile, *tools.Result) {
	d, why := hooksDir(ctx, r.hooksQuery(dir, gitDir), dir)
	if why != "" {
		return "", nil, fail(why)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%q\n", d)
	var names []string
	if d != "" {
		var err error
		if names, err = hooksIn(d); err != nil {
			return "", nil, fail(fmt.Sprintf("read the hooks directory %s: %v", d, err))
		}
	}
	files := make([]hookFile, 0, len(names))
	for _, n := range names {
		body, err := readHook(ctx, r.guard, filepath.Join(d, n))
		if err != nil {
			return "", nil, fail(fmt.Sprintf("read the hook %s: %v", filepath.Join(d, n), err))
		}
		sum := sha256.Sum256(body)
		fmt.Fprintf(h, "%q %s\n", n, hex.EncodeToString(sum[:]))
		files = append(files, hookFile{name: n, body: body})
	}
	return "hooks " + hex.EncodeToString(h.Sum(nil)), files, nil
}

// evalOr is p with symlinks resolved, or p.
func evalOr(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}
