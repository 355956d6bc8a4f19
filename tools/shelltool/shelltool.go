//go:build unix

// Package shelltool is the execute_command tool (shell-safety.md §1,
// tool-schemas.md §5–§6): a propose half that runs the denylist, resolves
// and pins the working directory and asks for approval, and a hidden twin
// that runs the approved command in a child process of its own
// (shellrun): mvdan.cc/sh's interpreter checking every expanded command
// against the denylist at run time, with a sanitized environment, memory
// and CPU limits, capped output, and every process it started ended with
// it.
package shelltool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/jazz-run/jazz/escalation"
	"github.com/jazz-run/jazz/isolate"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/shellguard"
	"github.com/jazz-run/jazz/shellrun"
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
const OutputCap = shellrun.OutputCap

// approvalError is the propose half's E (tool-schemas.md §5).
const approvalError = "Command execution requires explicit user approval for security reasons."

// Options configures the tool.
type Options struct {
	// Environ returns the parent environment the child's is sanitized
	// from; nil means os.Environ.
	Environ func() []string
	// MemoryLimit is each process's data limit in bytes, and
	// ShellMemoryLimit the interpreter's own; 0 means shellrun's defaults.
	MemoryLimit, ShellMemoryLimit int64
	// Isolator finds how commands are kept from jazz's secrets; nil
	// probes this machine.
	Isolator *isolate.Isolator
}

// Args are execute_command's validated arguments; they are also the
// twin's executeArgs, with the description trimmed, the timeout default
// filled in, and the working directory pinned: resolved to its real path
// (WorkingDirectory) and fingerprinted (WorkingDirectoryState) by the
// propose half, so that neither a later `cd` nor a swapped directory or
// symlink moves where an approved command runs.
type Args struct {
	Command          string  `json:"command"`
	Description      string  `json:"description"`
	WorkingDirectory *string `json:"workingDirectory,omitempty"`
	Timeout          int64   `json:"timeout"`
	// WorkingDirectoryState exists only in the twin's arguments.
	WorkingDirectoryState string `json:"workingDirectoryState,omitempty"`
}

// Result is the twin's value.
type Result struct {
	Command          string `json:"command"`
	WorkingDirectory string `json:"workingDirectory"`
	// ExitCode is the command's status; 128+n when a signal ended it
	// (Signal says which), -1 when it was stopped for its memory.
	ExitCode int    `json:"exitCode"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	Success  bool   `json:"success"`
	// Signal names the signal that ended the command (its shell, or the
	// program whose status exitCode is 128+n): not a normal exit.
	Signal string `json:"signal,omitempty"`
	// KilledProcesses counts processes still running when the command
	// ended (background jobs, daemons), which were killed; Notice says so.
	KilledProcesses int    `json:"killedProcesses,omitempty"`
	Notice          string `json:"notice,omitempty"`
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

// twinSchema is the schema plus the property only the propose half
// sets: the fingerprint of the pinned working directory.
const twinSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["command", "description", "workingDirectory", "workingDirectoryState"],
  "properties": {
    "command": {"type": "string", "minLength": 1},
    "description": {"type": "string"},
    "workingDirectory": {"type": "string", "minLength": 1, "description": "The resolved working directory the approval showed."},
    "timeout": {"type": "integer", "minimum": 1, "default": 900000},
    "workingDirectoryState": {"type": "string", "minLength": 1, "description": "Fingerprint of the working directory as the preview saw it; set by the propose step."}
  }
}`

// Tools returns execute_command declared once as a gated pair: the visible
// propose half (3-minute tool timeout) and the hidden twin
// execute_execute_command (15 minutes). Level is unknown: the gate asks the
// classifier.
func Tools(opts Options) []tools.Tool {
	s := &shell{environ: opts.Environ, deny: shellguard.Builtin, memory: opts.MemoryLimit, shellMemory: opts.ShellMemoryLimit,
		runners: &shellrun.Pool{}, isolator: opts.Isolator}
	if s.isolator == nil {
		s.isolator = &isolate.Isolator{}
	}
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
	// Beside: the commands of a batch run at once (Pair, PairBeside).
	pair := tools.PairBeside(propose, s.execute, ExecuteTimeout)
	pair[1].Schema = json.RawMessage(twinSchema)
	return pair
}

type shell struct {
	environ             func() []string
	deny                func() *shellguard.Denylist
	memory, shellMemory int64
	// runners keeps the next command's runner process started.
	runners *shellrun.Pool
	// isolator finds, once, how this machine lets commands be kept from
	// jazz's own secrets.
	isolator *isolate.Isolator
}

// parseArgs applies the checks a JSON Schema cannot say (trimming).
func parseArgs(raw json.RawMessage) (Args, string) {
	var a struct {
		Command               string  `json:"command"`
		Description           string  `json:"description"`
		WorkingDirectory      *string `json:"workingDirectory"`
		Timeout               *int64  `json:"timeout"`
		WorkingDirectoryState string  `json:"workingDirectoryState"`
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
	out := Args{Command: a.Command, Description: desc, WorkingDirectory: a.WorkingDirectory, Timeout: DefaultTimeoutMs,
		WorkingDirectoryState: a.WorkingDirectoryState}
	if a.Timeout != nil {
		if *a.Timeout < 1 {
			return Args{}, "timeout: must be a positive integer number of milliseconds"
		}
		out.Timeout = *a.Timeout
	}
	return out, ""
}

func (s *shell) propose(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	a, bad := parseArgs(raw)
	if bad != "" {
		return tools.Fail(bad)
	}
	if blocked, reason := s.deny().Check(a.Command); blocked {
		return tools.Fail(shellguard.BlockMessage(reason))
	}
	// Resolve and pin the directory now: the approval shows where the
	// command will run, and the twin runs exactly there.
	base := env.Cwd()
	wd, input := base, base
	if a.WorkingDirectory != nil {
		input = *a.WorkingDirectory
		wd = pathres.Resolve(base, env.Home, input)
	}
	real, state, err := shellrun.PinDir(wd)
	if errors.Is(err, fs.ErrNotExist) {
		return tools.Fail(pathres.NotFound(base, input, wd))
	}
	if err != nil {
		return tools.Fail("Working directory " + wd + ": " + err.Error())
	}
	if why := s.unseen(ctx, env, real); why != "" {
		return tools.Fail(why)
	}
	shown := real
	if real != wd {
		shown = fmt.Sprintf("%s (resolved from %s)", real, wd)
	}
	// Each field's later lines are indented: a newline in the model's
	// command or description (or in a directory's name) cannot start a
	// line of its own that reads as another field ("Working Directory:
	// /safe") to a person or to a program that reads the message.
	msg := fmt.Sprintf("Command: %s\nDescription: %s\nWorking Directory: %s\nTimeout: %dms\n\nThis command will be executed on your system. Only approve commands you trust.",
		fieldValue(a.Command), fieldValue(a.Description), fieldValue(shown), a.Timeout)
	// Where it will run, with the environment an automatic approval
	// would give it: a git repository there whose configuration runs
	// programs keeps every automatic step from approving it.
	notAuto := shellguard.RepoProblem(ctx, a.Command, real, s.childEnv(env, real, shellguard.Judgement{By: shellguard.ByStatic}))
	if notAuto != "" {
		msg += "\n\nNot auto-approved: " + notAuto + "."
	}
	// A command that could plant what runs later outside the gate (a git
	// hook or config, an AGENTS.md, jazz's or the agents' config, a home
	// dotfile) is a person's to approve; the runner refuses such a write
	// at run time under any other approval (expansion can hide it here).
	humanOnly := shellguard.HumanOnly(a.Command, real, env.Home)
	if childHome, ok := shellguard.LookupEnv(s.childEnv(env, real, shellguard.Judgement{By: shellguard.ByHuman}), "HOME"); humanOnly == "" && ok && childHome != env.Home {
		humanOnly = shellguard.HumanOnly(a.Command, real, childHome)
	}
	msg += escalation.Note(humanOnly)
	// Where the machine cannot hide jazz's secrets the command runs only
	// if a person approves it (execute checks that too): no automatic
	// step is asked.
	if s.isolator.Mode(ctx) == isolate.None && len(hidden(env)) > 0 {
		msg += "\n\nWarning: this command can read jazz's own secrets (JAZZ_HOME and its key files): " + isolate.Unhidden(s.isolator.Why(ctx)) +
			". It runs only if you approve it; nothing approves it automatically."
		if notAuto == "" {
			notAuto = "it could read jazz's own secrets, which this system cannot hide from it"
		}
	}
	a.WorkingDirectory, a.WorkingDirectoryState = &real, state
	execArgs, err := json.Marshal(a)
	if err != nil {
		return tools.Fail("encode arguments: " + err.Error())
	}
	req := &messages.ApprovalRequest{Message: msg, ExecuteToolName: tools.TwinName(Name), ExecuteArgs: execArgs, NotAutomatic: notAuto, HumanOnly: humanOnly}
	return tools.Result{
		Error:    approvalError,
		Approval: req,
		Value:    approvalView{ApprovalRequired: true, Message: msg, ExecuteToolName: req.ExecuteToolName, ExecuteArgs: execArgs},
	}
}

// childEnv is the environment of a command run in dir under judgement j:
// the sanitized environment, hardened (AutoEnv for an automatic
// approval), with no pager, editor or prompt.
func (s *shell) childEnv(env *tools.Env, dir string, j shellguard.Judgement) []string {
	out := j.ChildEnv(shellguard.SanitizedEnv(s.environ(), env.EnvAllowlist, env.Cwd(), env.Secrets.Redactor()))
	return append(out, "PAGER=cat", "GIT_EDITOR=false", "GIT_TERMINAL_PROMPT=0", "PWD="+dir)
}

// judgementFor is the gate's judgement of the approval that runs this
// twin, from ctx (the tool actor puts it there, never the model). The twin
// runs command only if the judgement names exactly this text; without one
// nothing runs.
func judgementFor(ctx context.Context, command string) (shellguard.Judgement, string) {
	raw := tools.JudgementFrom(ctx)
	var j shellguard.Judgement
	if len(raw) == 0 {
		return j, shellguard.ErrNotJudged.Error() + ": no approval judgement reached this command, so it was not run; propose it again"
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		return j, shellguard.ErrNotJudged.Error() + ": the approval judgement is unreadable (" + err.Error() + "), so the command was not run; propose it again"
	}
	if j.Command != command {
		return j, shellguard.ErrNotJudged.Error() + ": the command differs from the one the gate judged, so it was not run; propose it again"
	}
	return j, ""
}

// hidden are the paths the command must not see: JAZZ_HOME and the run's
// key files.
func hidden(env *tools.Env) []string {
	if env == nil {
		return nil
	}
	return env.Secrets.Hidden(env.JazzHome)
}

// unseen says why a command cannot run in dir: it lies in a path hidden
// from the programs jazz starts (JAZZ_HOME, most likely), so the runner
// would find it empty; "" when it can. Said up front, before an approval
// and in place of the runner's "changed since it was approved".
func (s *shell) unseen(ctx context.Context, env *tools.Env, dir string) string {
	hide := hidden(env)
	if len(hide) == 0 || s.isolator.Mode(ctx) == isolate.None {
		return ""
	}
	if c := isolate.Covering(dir, hide); c != "" {
		return "Not run: " + isolate.InHidden(dir, c) + "."
	}
	return ""
}

// notPinned refuses a twin call without the propose half's pin: only the
// gate runs the twin, with the arguments the propose half produced.
const notPinned = "This execute_command approval carries no pinned working directory; propose the command again."

func (s *shell) execute(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	a, bad := parseArgs(raw)
	if bad != "" {
		return tools.Fail(bad)
	}
	if blocked, reason := s.deny().Check(a.Command); blocked {
		return tools.Fail(shellguard.BlockMessage(reason))
	}
	if a.WorkingDirectory == nil || a.WorkingDirectoryState == "" {
		return tools.Fail(notPinned)
	}
	dir := *a.WorkingDirectory
	judgement, bad := judgementFor(ctx, a.Command)
	if bad != "" {
		return tools.Fail(bad)
	}
	// Checked here for a clear answer, and again by the runner just
	// before it starts.
	if err := shellrun.CheckDir(dir, a.WorkingDirectoryState); err != nil {
		return tools.Fail(err.Error())
	}
	if why := s.unseen(ctx, env, dir); why != "" {
		return tools.Fail(why)
	}
	childEnv := s.childEnv(env, dir, judgement)

	mode := s.isolator.Mode(ctx)
	hide := hidden(env)
	if mode == isolate.None && len(hide) > 0 && judgement.By != shellguard.ByHuman {
		return tools.Fail(fmt.Sprintf("Not run: %s, so this command could read jazz's own secrets; such a command runs only when a person approves it (it was approved by %s).",
			isolate.Unhidden(s.isolator.Why(ctx)), judgement.By))
	}
	out, err := s.runners.Run(ctx, shellrun.Request{
		Command:          a.Command,
		Dir:              dir,
		DirState:         a.WorkingDirectoryState,
		Env:              childEnv,
		Timeout:          time.Duration(a.Timeout) * time.Millisecond,
		MemoryLimit:      s.memory,
		ShellMemoryLimit: s.shellMemory,
		Judgement:        judgement,
		Isolation:        mode,
		Hide:             hide,
		Unhidden:         judgement.By == shellguard.ByHuman,
	})
	res := Result{
		Command:          a.Command,
		WorkingDirectory: dir,
		ExitCode:         out.ExitCode,
		Stdout:           out.Stdout,
		Stderr:           out.Stderr,
		Success:          out.ExitCode == 0 && !out.ShellKilled && !out.MemoryExceeded,
		Signal:           out.Signal,
		KilledProcesses:  out.Killed,
	}
	if out.Killed > 0 {
		res.Notice = fmt.Sprintf("%d process(es) still running when the command ended (background jobs or daemons) were killed: nothing a command starts outlives it.", out.Killed)
	}
	switch {
	case out.Blocked != "":
		return tools.Fail(shellguard.BlockMessage(out.Blocked))
	case out.NotJudged != "":
		return tools.Fail(out.NotJudged + ". The command stopped there.")
	case out.TimedOut:
		return tools.Fail(fmt.Sprintf("Command timed out after %dms", a.Timeout))
	case err != nil:
		return tools.Fail(err.Error())
	case out.MemoryExceeded:
		res.ExitCode = -1
		return tools.Result{Value: res, Truncated: out.Truncated,
			Error: fmt.Sprintf("Command stopped: it exceeded its memory limit of %d MiB, so it was killed before it finished.", out.MemoryLimit>>20)}
	case out.ShellKilled:
		return tools.Result{Value: res, Truncated: out.Truncated,
			Error: fmt.Sprintf("Command killed by signal %s (exit status %d): it did not exit normally.", out.Signal, out.ExitCode)}
	}
	return tools.Result{Success: true, Value: res, Truncated: out.Truncated}
}

// fieldValue is a value of the approval message's "Name: value" lines,
// its continuation lines indented under it.
func fieldValue(s string) string {
	// CRLF first: the Replacer tries its pairs in order at each position.
	return strings.NewReplacer("\r\n", "\n  ", "\n", "\n  ", "\r", "\n  ").Replace(s)
}
