// Package shelltool is the execute_command tool (shell-safety.md §1,
// tool-schemas.md §5–§6): a propose half that runs the denylist and asks
// for approval, and a hidden twin that runs the approved command through
// mvdan.cc/sh's interpreter, checking every expanded command against the
// denylist at run time, with a sanitized environment, capped output and
// process-group kills so that no child outlives the call.
package shelltool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/shellguard"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/pathres"
)

// Name is the visible tool; its hidden twin is tools.TwinName(Name).
const Name = "execute_command"

// DefaultTimeoutMs is the command timeout when the call gives none.
const DefaultTimeoutMs = 900_000

// ExecuteTimeout bounds the twin as a tool call (the command's own timeout
// may ask for more; the twin stops at this).
const ExecuteTimeout = 15 * time.Minute

// OutputCap is the per-stream byte cap of stdout and stderr.
const OutputCap = 262_144

// approvalError is the propose half's E (tool-schemas.md §5).
const approvalError = "Command execution requires explicit user approval for security reasons."

// Options configures the tool.
type Options struct {
	// Environ returns the parent environment the child's is sanitized
	// from; nil means os.Environ.
	Environ func() []string
}

// Args are execute_command's validated arguments; they are also the
// twin's executeArgs, with the description trimmed and the timeout
// default filled in.
type Args struct {
	Command          string  `json:"command"`
	Description      string  `json:"description"`
	WorkingDirectory *string `json:"workingDirectory,omitempty"`
	Timeout          int64   `json:"timeout"`
}

// Result is the twin's success value.
type Result struct {
	Command          string `json:"command"`
	WorkingDirectory string `json:"workingDirectory"`
	ExitCode         int    `json:"exitCode"`
	Stdout           string `json:"stdout"`
	Stderr           string `json:"stderr"`
	Success          bool   `json:"success"`
}

// approvalView is the propose half's result value, as the model sees it.
type approvalView struct {
	ApprovalRequired bool            `json:"approvalRequired"`
	Message          string          `json:"message"`
	ExecuteToolName  string          `json:"executeToolName"`
	ExecuteArgs      json.RawMessage `json:"executeArgs"`
}

const schema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["command", "description"],
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "The shell command to run (bash syntax)."},
    "description": {"type": "string", "description": "A short, non-empty description of what the command does and why, shown to the user who approves it."},
    "workingDirectory": {"type": "string", "description": "Directory to run in, relative to the current directory or absolute. Defaults to the current directory."},
    "timeout": {"type": "integer", "minimum": 1, "default": 900000, "description": "Timeout in milliseconds (default 900000)."}
  }
}`

const description = "Run a shell command and return its exit code, stdout and stderr. " +
	"Every command needs the user's approval; some commands are blocked outright by a safety denylist. " +
	"The command runs non-interactively with empty stdin and a sanitized environment; each output stream is capped at 262144 bytes."

// Tools returns execute_command declared once as a gated pair: the visible
// propose half (3-minute tool timeout) and the hidden twin
// execute_execute_command (15 minutes). Level is unknown: the gate asks the
// classifier.
func Tools(opts Options) []tools.Tool {
	s := &shell{environ: opts.Environ, deny: shellguard.Builtin}
	if s.environ == nil {
		s.environ = os.Environ
	}
	propose := tools.Tool{
		Name:        Name,
		Description: description,
		Schema:      json.RawMessage(schema),
		Level:       messages.LevelUnknown,
		Timeout:     tools.DefaultTimeout,
		Handler:     s.propose,
	}
	return tools.Pair(propose, s.execute, ExecuteTimeout)
}

type shell struct {
	environ func() []string
	deny    func() *shellguard.Denylist
}

// parseArgs applies the checks a JSON Schema cannot say (trimming).
func parseArgs(raw json.RawMessage) (Args, string) {
	var a struct {
		Command          string  `json:"command"`
		Description      string  `json:"description"`
		WorkingDirectory *string `json:"workingDirectory"`
		Timeout          *int64  `json:"timeout"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return Args{}, "Invalid arguments: " + err.Error()
	}
	if strings.TrimSpace(a.Command) == "" {
		return Args{}, "Command cannot be empty"
	}
	desc := strings.TrimSpace(a.Description)
	if desc == "" {
		return Args{}, "description: description cannot be empty"
	}
	out := Args{Command: a.Command, Description: desc, WorkingDirectory: a.WorkingDirectory, Timeout: DefaultTimeoutMs}
	if a.Timeout != nil {
		if *a.Timeout < 1 {
			return Args{}, "timeout: must be a positive integer number of milliseconds"
		}
		out.Timeout = *a.Timeout
	}
	return out, ""
}

func (s *shell) propose(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	a, bad := parseArgs(raw)
	if bad != "" {
		return tools.Fail(bad)
	}
	if blocked, reason := s.deny().Check(a.Command); blocked {
		return tools.Fail(shellguard.BlockMessage(reason))
	}
	wd := env.Cwd()
	if a.WorkingDirectory != nil {
		wd = *a.WorkingDirectory
	}
	msg := fmt.Sprintf("Command: %s\nDescription: %s\nWorking Directory: %s\nTimeout: %dms\n\nThis command will be executed on your system. Only approve commands you trust.",
		a.Command, a.Description, wd, a.Timeout)
	execArgs, err := json.Marshal(a)
	if err != nil {
		return tools.Fail("encode arguments: " + err.Error())
	}
	req := &messages.ApprovalRequest{Message: msg, ExecuteToolName: tools.TwinName(Name), ExecuteArgs: execArgs}
	return tools.Result{
		Error:    approvalError,
		Approval: req,
		Value:    approvalView{ApprovalRequired: true, Message: msg, ExecuteToolName: req.ExecuteToolName, ExecuteArgs: execArgs},
	}
}

func (s *shell) execute(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	a, bad := parseArgs(raw)
	if bad != "" {
		return tools.Fail(bad)
	}
	if blocked, reason := s.deny().Check(a.Command); blocked {
		return tools.Fail(shellguard.BlockMessage(reason))
	}
	dir := env.Cwd()
	if a.WorkingDirectory != nil {
		abs := pathres.Resolve(env.Cwd(), env.Home, *a.WorkingDirectory)
		st, err := os.Stat(abs)
		if err != nil {
			return tools.Fail(pathres.NotFound(env.Cwd(), *a.WorkingDirectory, abs))
		}
		if !st.IsDir() {
			return tools.Fail("Not a directory: " + abs)
		}
		dir = abs
	}
	childEnv := shellguard.SanitizedEnv(s.environ(), env.EnvAllowlist, env.Cwd())
	childEnv = append(childEnv, "PAGER=cat", "GIT_EDITOR=false", "GIT_TERMINAL_PROMPT=0", "PWD="+dir)

	out, err := Run(ctx, RunRequest{
		Command: a.Command,
		Dir:     dir,
		Env:     childEnv,
		Timeout: time.Duration(a.Timeout) * time.Millisecond,
		Deny:    s.deny(),
	})
	switch {
	case out.Blocked != "":
		return tools.Fail(shellguard.BlockMessage(out.Blocked))
	case out.TimedOut:
		return tools.Fail(fmt.Sprintf("Command timed out after %dms", a.Timeout))
	case err != nil:
		return tools.Fail(err.Error())
	}
	return tools.Result{
		Success: true,
		Value: Result{
			Command:          a.Command,
			WorkingDirectory: dir,
			ExitCode:         out.ExitCode,
			Stdout:           out.Stdout,
			Stderr:           out.Stderr,
			Success:          out.ExitCode == 0,
		},
		Truncated: out.Truncated,
	}
}
