// Package customtools builds the tools declared in customTools
// (tools-and-approval.md §8): a record tool answers a fixed response and
// changes nothing; a command tool runs its argv without a shell in the
// directory jazz started in (never where the model cd'ed), the
// validated arguments as JSON on stdin, with the scrubbed environment of
// the declaring agent's envAllowlist, under a timeout and a 16 KB cap per
// stream, and nothing it starts outlives it (childproc). Command tools are
// high-risk, so the gate stands before every call.
package customtools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jazz-run/jazz/childproc"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/isolate"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/shellguard"
	"github.com/jazz-run/jazz/tools"
)

// OutputCap is the per-stream cap of a command tool.
const OutputCap = 16 << 10

// ExecutorSlack is what the tool's own timeout adds to the command's, so
// the command's timeout (and its message) comes first.
const ExecutorSlack = 5 * time.Second

// Options are the surroundings of a declaration's command tools.
type Options struct {
	// EnvAllowlist is the declaring agent's.
	EnvAllowlist []string
	// Environ is jazz's environment; nil means os.Environ.
	Environ func() []string
	// BaseDir is where a command tool runs and where its relative
	// program path (./scripts/x) is found: the directory jazz started
	// in, never the agent's working directory, which the model moves
	// with cd. What the program is matters as much as where it works: a
	// make, npm or git started in a directory the model chose reads the
	// Makefile, package.json or .git/config it finds there, and a
	// declared `rm -rf build` removes that directory's build. "" means
	// jazz's own working directory.
	BaseDir string
	// NoCgroup is childproc's (tests of the fallback).
	NoCgroup bool
	// Isolator finds how a command tool is kept from jazz's own secrets
	// (childproc.Spec.Hide); nil probes at each start.
	Isolator *isolate.Isolator
}

// Tools builds the tools of decls.
func Tools(decls []config.CustomTool, o Options) []tools.Tool {
	out := make([]tools.Tool, 0, len(decls))
	for _, d := range decls {
		out = append(out, Tool(d, o))
	}
	return out
}

// Tool builds one declared tool.
func Tool(d config.CustomTool, o Options) tools.Tool {
	t := tools.Tool{Name: d.Name, Description: d.Description, Schema: d.Parameters}
	switch d.Handler.Type {
	case config.HandlerRecord:
		resp := d.Handler.Response
		t.Level = messages.LevelReadOnly
		t.Handler = func(context.Context, *tools.Env, json.RawMessage) tools.Result { return tools.OK(resp) }
	case config.HandlerCommand:
		r := &runner{argv: append([]string(nil), d.Handler.Command...), timeout: d.Handler.Timeout, o: o}
		t.Level = messages.LevelHighRisk
		t.Timeout = d.Handler.Timeout + ExecutorSlack
		t.Handler = r.run
		t.Describe = r.describe
	default:
		// Validation admits only the two; anything else fails closed.
		t.Level = messages.LevelHighRisk
		t.Handler = func(context.Context, *tools.Env, json.RawMessage) tools.Result {
			return tools.Fail(fmt.Sprintf("custom tool %s has an unknown handler type %q", d.Name, d.Handler.Type))
		}
	}
	return t
}

type runner struct {
	argv    []string
	timeout time.Duration
	o       Options
}

func (r *runner) environ() []string {
	if r.o.Environ != nil {
		return r.o.Environ()
	}
	return os.Environ()
}

// describe is a command tool's approval: the program and arguments the
// declaration runs, where, and the bytes its stdin gets. The tool's name
// and description are the declaration's words; the argv is what runs, so
// the person decides on that.
func (r *runner) describe(args json.RawMessage) (string, error) {
	dir := r.o.BaseDir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("jazz's working directory is unknown: %w", err)
		}
		dir = wd
	}
	words := make([]string, len(r.argv))
	for i, w := range r.argv {
		words[i] = strconv.QuoteToASCII(w)
	}
	return fmt.Sprintf("Custom tool command: %s\nWorking Directory: %s\nTimeout: %dms\nStdin (the arguments as JSON): %s",
		strings.Join(words, " "), strconv.QuoteToASCII(dir), r.timeout.Milliseconds(), bytes.TrimSpace(args)), nil
}

func (r *runner) run(ctx context.Context, env *tools.Env, args json.RawMessage) tools.Result {
	// The declaration decides where the command runs, as it decides the
	// argv: the model's only say is the arguments, which the person sees.
	dir := r.o.BaseDir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return tools.Fail("Command could not start: jazz's working directory is unknown: " + err.Error())
		}
		dir = wd
	}
	var hide []string
	var known *secrets.Redactor
	if env != nil {
		hide = env.Secrets.Hidden(env.JazzHome)
		known = env.Secrets.Redactor()
	}
	stderr := &capped{limit: OutputCap}
	childEnv := shellguard.SanitizedEnv(r.environ(), r.o.EnvAllowlist, dir, known)
	path, _ := shellguard.LookupEnv(childEnv, "PATH")
	prog, err := childproc.LookPath(r.argv[0], path, dir)
	if err != nil {
		return tools.Fail("Command could not start: " + err.Error())
	}
	argv := append([]string{prog}, r.argv[1:]...)
	p, err := childproc.Start(childproc.Spec{
		Argv:     argv,
		Env:      childEnv,
		Dir:      dir,
		Stderr:   stderr,
		NoCgroup: r.o.NoCgroup,
		Hide:     hide,
		Isolator: r.o.Isolator,
	})
	if err != nil {
		return tools.Fail("Command could not start: " + err.Error())
	}
	stdout := &capped{limit: OutputCap}
	read := make(chan struct{})
	go func() {
		// Past the cap the output is read and dropped, so the command
		// never blocks on a full pipe.
		_, _ = io.Copy(stdout, p.Stdout())
		close(read)
	}()
	go func() {
		// A command that never reads its stdin must not block this.
		_, _ = p.Stdin().Write(append(bytes.TrimSpace(args), '\n'))
		_ = p.Stdin().Close()
	}()
	timer := time.NewTimer(r.timeout)
	defer timer.Stop()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	select {
	case <-p.Done():
	case <-timer.C:
		_ = p.Kill(stopCtx)
		return tools.Fail(fmt.Sprintf("Command timed out after %dms", r.timeout.Milliseconds()))
	case <-ctx.Done():
		_ = p.Kill(stopCtx)
		return tools.Fail("Command cancelled: " + ctx.Err().Error())
	}
	// The tree is gone; what is left in the pipe is read, boundedly.
	select {
	case <-read:
	case <-time.After(2 * time.Second):
	}
	_ = p.Stop(stopCtx, 0)
	<-read
	if code := p.ExitCode(); code != 0 {
		msg := fmt.Sprintf("Command exited with code %d", code)
		if s := strings.TrimSpace(stderr.String()); s != "" {
			msg += ": " + s
		}
		return tools.Fail(msg)
	}
	res := tools.OK(stdout.String())
	res.Truncated = stdout.cut()
	return res
}

// capped keeps the first limit bytes written to it.
type capped struct {
	mu    sync.Mutex
	limit int
	buf   bytes.Buffer
	total int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	c.total += len(p)
	return len(p), nil
}

// String is what was kept, invalid UTF-8 (a cut rune) replaced.
func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.ToValidUTF8(c.buf.String(), "\uFFFD")
}

func (c *capped) cut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total > c.limit
}
