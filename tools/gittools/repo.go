package gittools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

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
	environ  func() []string
	box      *sandbox
}

// cmd is how git runs for this repository.
func (r *repo) cmd(readOnly bool) *gitCmd {
	return &gitCmd{dir: r.dir, readOnly: readOnly, environ: r.environ, box: r.box}
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
	r := &repo{dir: dir, highRisk: tools.CurrentPolicy(env) == messages.PolicyHighRisk, environ: o.Environ}
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
		hooks, why := hookRisks(ctx, &gitCmd{dir: r.dir, environ: r.environ, box: r.box}, r.dir, r.top, r.gitDir, r.commonDir)
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

// hookRisks lists the hooks git would run that the repository itself
// holds: the executable files of the hooks directory in effect, when that
// directory lies inside the repository (the default .git/hooks, or a
// relative core.hooksPath such as .githooks). A hooks directory of the
// user's own elsewhere is theirs.
func hookRisks(ctx context.Context, g *gitCmd, dir string, inside ...string) ([]string, string) {
	res := g.run(ctx, DefaultTimeout, "rev-parse", "--git-path", "hooks")
	if !res.ok() {
		return nil, "Refused: cannot find the repository's hooks: " + res.failure("git rev-parse", g.dir)
	}
	hooksDir := absIn(dir, strings.TrimRight(res.stdout, "\n"))
	if real, err := filepath.EvalSymlinks(hooksDir); err == nil {
		hooksDir = real
	} else if os.IsNotExist(err) {
		return nil, ""
	}
	if !slices.ContainsFunc(inside, func(p string) bool { return p != "" && secrets.Within(hooksDir, evalOr(p)) }) {
		return nil, ""
	}
	ents, err := os.ReadDir(hooksDir)
	if err != nil {
		return nil, fmt.Sprintf("Refused: cannot read the hooks directory %s: %v", hooksDir, err)
	}
	var risks []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sample") {
			continue
		}
		fi, err := os.Stat(filepath.Join(hooksDir, e.Name()))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			continue
		}
		risks = append(risks, "hook "+filepath.Join(hooksDir, e.Name()))
	}
	return risks, ""
}

// evalOr is p with symlinks resolved, or p.
func evalOr(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}
