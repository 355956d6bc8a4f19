package gittools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/jazz-run/jazz/gitinert"
	"github.com/jazz-run/jazz/isolate"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/shellguard"
	"github.com/jazz-run/jazz/tools/capbuf"
)

// Limits from tool-schemas.md §1 and shell-safety.md §5.
const (
	// StreamCap is what is kept of each stream of a git child.
	StreamCap = 262144
	// DefaultTimeout bounds one git process; diff and blame get
	// DiffTimeout, merge MergeTimeout.
	DefaultTimeout = 15 * time.Second
	DiffTimeout    = 20 * time.Second
	MergeTimeout   = 30 * time.Second
	// killGrace is how long a git process has after SIGTERM before its
	// pipes are closed and its whole session is killed.
	killGrace = 2 * time.Second
)

// safetyConfig is laid over every repository's configuration, whatever the
// policy: gitinert's overrides (no pager, no file-system monitor, no
// signature verification, no submodule recursion, no `ext::`, no implicit
// bare repository), and plain output for parsing. Command-line
// configuration outranks every file git reads.
func safetyConfig() []string {
	return append(gitinert.Overrides(), "core.quotePath=false", "color.ui=false")
}

// gitCmd is how one tool call runs git: where, with which environment, and
// whether the operation may change the repository.
type gitCmd struct {
	dir string
	// readOnly adds gitinert.ReadOnlyOverrides and GIT_OPTIONAL_LOCKS=0.
	readOnly bool
	// network keeps what a fetch or push needs to authenticate (the ssh
	// agent socket, the user's ssh command), and restricts transports.
	network bool
	// protocols is the -c protocol policy of a network operation.
	protocols []string
	// gitDir, when set, names the repository explicitly (--git-dir), as a
	// bare one must be under safe.bareRepository=explicit.
	gitDir  string
	environ func() []string
	// indexFile, when set, is the index git reads and writes instead of
	// the repository's own (GIT_INDEX_FILE): a twin's pinned copy.
	indexFile string
	// hooks is the directory git runs hooks from: a twin's private copy
	// of the hooks its approval covered (pinHooks), under the high-risk
	// policy. "" runs none at all: a hooks directory git reads when it
	// runs them, rather than the copy of what was checked, runs whatever
	// was planted or rewritten there after the check (hookRisks, hookSet),
	// since the check is not the process that runs git. Read-only
	// operations never run hooks.
	hooks string
	// askHooks leaves the hooks directory as the repository and the user
	// set it, for asking git where it is (hooksQuery: rev-parse, which
	// runs no hook); nothing that may run a hook starts with it.
	askHooks bool
	// localRemote is the name of a remote on this machine a push may
	// start a receive-pack for. git does not pass our configuration on to
	// it, so its hooks are set on its own command line: the private copy
	// remoteHooks of the remote's hooks the approval covered, or none.
	localRemote string
	remoteHooks string
	// box keeps git and what it runs from jazz's secrets; nil runs git
	// as it is (tests of these internals).
	box *sandbox
}

// sandbox is how a repository's git children are isolated (package
// isolate): every one starts in a view where hide is not there.
type sandbox struct {
	iso  *isolate.Isolator
	hide []string
	// known are the run's secrets by value: no variable holding one
	// reaches git or what it runs.
	known *secrets.Redactor
	// strict: the repository's own programs may run (high-risk), so
	// where the machine allows no isolation git is refused rather than
	// let a hook read the secrets. Below high-risk a repository that would
	// run programs is refused already, and git itself reads none of them.
	strict bool
}

// knownSecrets is b's known secrets (none for a nil sandbox).
func (b *sandbox) knownSecrets() *secrets.Redactor {
	if b == nil {
		return nil
	}
	return b.known
}

// wrap puts cmd in the sandbox, or says why git must not run.
func (b *sandbox) wrap(ctx context.Context, cmd *exec.Cmd) error {
	if b == nil || len(b.hide) == 0 {
		return nil
	}
	mode := b.iso.Mode(ctx)
	if mode == isolate.None && b.strict {
		return fmt.Errorf("not run: under the high-risk policy a repository's hooks may run, and %s, so they could read jazz's own secrets", isolate.Unhidden(b.iso.Why(ctx)))
	}
	return isolate.Wrap(cmd, mode, b.hide)
}

// env is the environment of a git child: the parent's minus its secrets
// (by name and by value) and minus every GIT_* variable (GIT_DIR,
// GIT_CONFIG_*, GIT_TRACE_CURL and their kind would redirect git or print
// credentials), with a fixed set of our own: no terminal prompt, no pager,
// no editor, the C locale (messages are parsed), optional locks off for
// read-only operations.
func (g *gitCmd) env() []string {
	parent := g.environ
	if parent == nil {
		parent = os.Environ
	}
	src := parent()
	var out []string
	for _, kv := range shellguard.WithoutSecrets(src, g.box.knownSecrets()) {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "GIT_"), name == "PAGER", name == "EDITOR", name == "VISUAL",
			name == "LC_ALL", name == "LANGUAGE", name == "LANG":
			continue
		}
		out = append(out, kv)
	}
	if g.network {
		// ssh authenticates through the agent; the socket gives no key
		// away, and the approval showed where the push goes.
		for _, name := range []string{"SSH_AUTH_SOCK", "GIT_SSH_COMMAND", "GIT_SSH"} {
			if v, ok := shellguard.LookupEnv(src, name); ok && v != "" {
				out = append(out, name+"="+v)
			}
		}
	}
	out = append(out,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_EDITOR=false",
		"GIT_SEQUENCE_EDITOR=false",
		"GIT_MERGE_AUTOEDIT=no",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"GIT_PROTOCOL_FROM_USER=0",
		"LC_ALL=C",
		"LANG=C",
	)
	if g.readOnly {
		out = append(out, "GIT_OPTIONAL_LOCKS=0")
	}
	if g.indexFile != "" {
		out = append(out, "GIT_INDEX_FILE="+g.indexFile)
	}
	// PATH keeps only absolute directories: a relative entry would let
	// the repository's own `ssh` or helper stand in for the real one.
	return shellguard.HardenEnv(out)
}

// argv is git's command line for args.
func (g *gitCmd) argv(args []string) []string {
	out := []string{"--no-pager"}
	if g.gitDir != "" {
		out = append(out, "--git-dir="+g.gitDir)
	}
	cfg := safetyConfig()
	if g.readOnly {
		cfg = append(cfg, gitinert.ReadOnlyOverrides()...)
	}
	switch {
	case g.readOnly || g.askHooks:
	case g.hooks != "":
		cfg = append(cfg, "core.hooksPath="+g.hooks)
	default:
		cfg = append(cfg, gitinert.NoHooks())
	}
	if g.network {
		cfg = append(cfg, g.protocols...)
		switch {
		case g.localRemote == "":
		case g.remoteHooks != "":
			cfg = append(cfg, "remote."+g.localRemote+".receivepack=git -c core.hooksPath="+shellQuote(g.remoteHooks)+" receive-pack")
		default:
			cfg = append(cfg, "remote."+g.localRemote+".receivepack="+gitinert.ReceivePackNoHooks())
		}
	}
	for _, c := range cfg {
		out = append(out, "-c", c)
	}
	return append(out, args...)
}

// result is one finished git process.
type result struct {
	stdout, stderr    string
	stdoutTruncated   bool
	stderrTruncated   bool
	exitCode          int
	timedOut          bool
	spawnErr          error
	timeout           time.Duration
	hash              string // hex sha256 of the whole stdout, when hashed
	cancelledByCaller bool
}

// ok says whether git ran and exited 0.
func (r result) ok() bool {
	return r.spawnErr == nil && !r.timedOut && !r.cancelledByCaller && r.exitCode == 0
}

// failure is the spec's error text for a git process that did not
// succeed: the spawn error or timeout, else stderr, else the exit code.
func (r result) failure(cmd, dir string) string {
	switch {
	case r.timedOut:
		return fmt.Sprintf("Failed to execute %s in directory '%s': Git command timed out after %dms", cmd, dir, r.timeout.Milliseconds())
	case r.cancelledByCaller:
		return fmt.Sprintf("Failed to execute %s in directory '%s': the call was cancelled", cmd, dir)
	case r.spawnErr != nil:
		return fmt.Sprintf("Failed to execute %s in directory '%s': %v", cmd, dir, r.spawnErr)
	}
	if s := strings.TrimSpace(r.stderr); s != "" {
		return s
	}
	return fmt.Sprintf("%s failed with exit code %d", cmd, r.exitCode)
}

// run runs git with args and waits, within timeout.
func (g *gitCmd) run(ctx context.Context, timeout time.Duration, args ...string) result {
	return g.exec(ctx, timeout, nil, nil, args)
}

// runHashed runs git and hashes its whole stdout (kept capped as usual):
// a fingerprint must cover all of it, not the first StreamCap bytes.
func (g *gitCmd) runHashed(ctx context.Context, timeout time.Duration, args ...string) result {
	return g.exec(ctx, timeout, nil, sha256.New(), args)
}

// runInput runs git with stdin.
func (g *gitCmd) runInput(ctx context.Context, timeout time.Duration, stdin string, args ...string) result {
	return g.exec(ctx, timeout, strings.NewReader(stdin), nil, args)
}

func (g *gitCmd) exec(ctx context.Context, timeout time.Duration, stdin io.Reader, h hash.Hash, args []string) result {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "git", g.argv(args)...)
	cmd.Dir = g.dir
	cmd.Env = g.env()
	cmd.Stdin = stdin // nil is the null device
	out := &capbuf.Buffer{Limit: StreamCap, Hash: h}
	errb := &capbuf.Buffer{Limit: StreamCap}
	cmd.Stdout, cmd.Stderr = out, errb
	// Its own session: no controlling terminal for ssh or a credential
	// helper to prompt on, and one group to stop with everything it
	// started (hooks, helpers).
	cmd.SysProcAttr = sessionAttr()
	cmd.Cancel = func() error { return terminateGroup(cmd.Process) }
	cmd.WaitDelay = killGrace
	if err := g.box.wrap(cctx, cmd); err != nil {
		return result{spawnErr: err, timeout: timeout}
	}
	err := cmd.Run()
	if cmd.Process != nil {
		killGroup(cmd.Process)
	}
	r := result{stdout: out.Text(), stderr: errb.Text(), stdoutTruncated: out.Truncated(), stderrTruncated: errb.Truncated(), timeout: timeout}
	if h != nil {
		r.hash = hex.EncodeToString(h.Sum(nil))
	}
	var exit *exec.ExitError
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		r.timedOut = true
	case ctx.Err() != nil:
		r.cancelledByCaller = true
	case errors.As(err, &exit):
		r.exitCode = exit.ExitCode()
	case err != nil:
		r.spawnErr = err
	}
	return r
}

// hiddenPaths is what b's sandbox covers (nothing for a nil sandbox).
func (b *sandbox) hiddenPaths() []string {
	if b == nil {
		return nil
	}
	return b.hide
}

// shellQuote is s as one word of a POSIX shell: git runs a receive-pack
// command through the shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
