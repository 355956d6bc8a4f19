// Package tools defines what a tool is (name, schema, risk level, timeout,
// handler), how a gated tool is declared as a propose/execute pair, and the
// registry an agent's tool set is drawn from. It runs nothing itself: the
// tool actors invoke handlers and the gate decides on approvals.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
)

// Level is a risk tier: messages.LevelReadOnly … messages.LevelUnknown.
type Level = string

// DefaultTimeout bounds a tool that declares none.
const DefaultTimeout = 3 * time.Minute

// Handler runs one validated call. args is a JSON object that passed the
// tool's schema. A handler reports failures in the Result, never by panic;
// a panic is caught by the tool actor and becomes a failed result anyway.
type Handler func(ctx context.Context, env *Env, args json.RawMessage) Result

// Result is what a handler returns. Value is marshalled to JSON for the
// model; Approval is set by a propose half instead of mutating.
type Result struct {
	Success   bool
	Value     any
	Error     string
	Approval  *messages.ApprovalRequest
	Truncated bool
	// Chdir, set by `cd`, is the agent's working directory from the next
	// batch on.
	Chdir string
}

// JSONAppender is a result value that writes its own JSON: exactly what
// json.Marshal would write for it, without reflection. A tool whose
// results are many and uniform (read_file) gives its value this method;
// a test of the tool's must prove the two encodings equal.
type JSONAppender interface {
	AppendJSON(b []byte) []byte
}

// OK is a successful result.
func OK(v any) Result { return Result{Success: true, Value: v} }

// Fail is a failed result with a message for the model.
func Fail(format string) Result { return Result{Error: format} }

// Tool is one callable tool.
type Tool struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the arguments (type object).
	Schema  json.RawMessage
	Level   Level
	Timeout time.Duration // 0 = DefaultTimeout
	// LongRunning tools without a Timeout run without one.
	LongRunning bool
	// Hidden tools (execute twins) are never offered to the model and
	// cannot be reached by a model's tool call.
	Hidden bool
	// Twin names the hidden execute twin of a propose half.
	Twin string
	// Passthrough tools take their arguments as sent: Schema is shown to
	// the model but never enforced (an MCP server judges its own).
	Passthrough bool
	// Deferral, when set, withholds Schema from the model until
	// search_tools has loaded it: the model sees the name and Summary.
	Deferral *Deferral
	// Narrow, when set, rebuilds the tool for a registry narrowed to the
	// visible tools held (Subset, Without): a tool that serves other tools
	// of its registry (search_tools) must serve only those its holder
	// still holds, or a sub-agent would read what its ceiling withholds.
	Narrow  func(held []*Tool) Tool
	Handler Handler
	// Describe, for a single-phase gated tool, writes the approval
	// message from the validated arguments (what will happen, secrets
	// masked); an error fails the call before anyone is asked. Nil shows
	// the arguments as JSON.
	Describe func(args json.RawMessage) (string, error)
}

// EffectiveTimeout is the limit the tool actor applies; 0 means none.
func (t *Tool) EffectiveTimeout() time.Duration {
	if t.Timeout > 0 {
		return t.Timeout
	}
	if t.LongRunning {
		return 0
	}
	return DefaultTimeout
}

// Gated says whether calls of this tool pass the gate.
func (t *Tool) Gated() bool { return t.Level != messages.LevelReadOnly }

// ApprovalMessage is what the person deciding a single-phase gated call
// is shown of it: Describe's text for the validated args, else the
// arguments as JSON. The tool actor and a runner deciding a worker's call
// build it alike, so a call is told in the same words wherever it runs.
func (t *Tool) ApprovalMessage(args json.RawMessage) (string, error) {
	if t.Describe != nil {
		return t.Describe(args)
	}
	return "About to run " + t.Name + " with arguments: " + string(args), nil
}

// Spec is what the model is told about the tool: for a deferred tool
// whose schema is not loaded yet, its name, Summary and an open object.
func (t *Tool) Spec() messages.ToolSpec {
	if t.Deferral != nil && !t.Deferral.Loaded(t.Name) {
		return messages.ToolSpec{Name: t.Name, Description: Summary(t.Description), Parameters: json.RawMessage(OpenObject)}
	}
	return messages.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Schema}
}

// TwinName is the name of the hidden execute twin of a gated tool.
func TwinName(name string) string { return "execute_" + name }

// Pair declares a gated tool once: the visible propose half and its hidden
// execute twin, which shares the schema, level and timeout. The twin's own
// timeout may differ (execute_command runs up to 15 min).
//
// The twin holds the run's turn to change things (Env.Acts) from its
// first check against what was approved to the end of its act: the
// calls of a batch, and sub-agents, run at once, and another twin acting
// between a twin's check and its act (a write into the index a commit
// was approved for, a HEAD made beside a file being written) changes
// what it acts on unseen. Taking the turn here, where every pair is
// declared, is what makes no twin able to forget it. A twin whose call
// ends while it waits changes nothing and says so.
func Pair(propose Tool, execute Handler, executeTimeout time.Duration) []Tool {
	return pair(propose, oneAtATime(propose.Name, execute), executeTimeout)
}

// PairBeside is Pair for a twin that does not take the turn: one whose
// act is a program's whole run, which other calls of its batch run
// beside by design (execute_command: a batch's commands run at once, up
// to 15 minutes each, and one holding the turn would stall every other
// twin of the run for as long). What it checks before it runs must not
// depend on what another twin may change meanwhile.
func PairBeside(propose Tool, execute Handler, executeTimeout time.Duration) []Tool {
	return pair(propose, execute, executeTimeout)
}

// oneAtATime runs execute holding env.Acts.
func oneAtATime(name string, execute Handler) Handler {
	return func(ctx context.Context, env *Env, args json.RawMessage) Result {
		release, err := env.Acts.Take(ctx)
		if err != nil {
			reason := "the call was cancelled"
			if errors.Is(err, context.DeadlineExceeded) {
				reason = "the tool's time limit was reached"
			}
			return Fail(name + " stopped because " + reason + " while another change of this run was being made. Nothing was changed.")
		}
		defer release()
		return execute(ctx, env, args)
	}
}

func pair(propose Tool, execute Handler, executeTimeout time.Duration) []Tool {
	twin := propose
	twin.Name = TwinName(propose.Name)
	twin.Hidden = true
	twin.Twin = ""
	twin.Handler = execute
	if executeTimeout > 0 {
		twin.Timeout = executeTimeout
	}
	propose.Twin = twin.Name
	return []Tool{propose, twin}
}

// Env is what a handler may know about where it runs. The call actor
// gives each call its own copy, so a handler may read it freely.
type Env struct {
	AgentID   string
	AgentName string
	// Depth is the agent's depth in the run tree (0 at the top) and Task
	// the brief a sub-agent was spawned with: a question it asks says both.
	Depth          int
	Task           string
	ConversationID string
	// Timezone is the run's IANA timezone (--timezone); "" is UTC.
	Timezone string
	JazzHome string
	Home     string
	// EnvAllowlist un-hides secret-looking variables for child processes.
	EnvAllowlist []string
	// Secrets are the run's own secrets: every tool result is redacted
	// with them, and the read tools refuse the files holding them. nil
	// knows no values; JAZZ_HOME and /proc are refused all the same.
	Secrets *secrets.Set
	// WorkDir is the agent's working directory when the call's batch
	// started. The agent owns it: a handler never changes it, a `cd`
	// returns Result.Chdir and the agent applies it after the batch, so
	// the calls of one batch all see the same directory.
	WorkDir string
	// Asker reaches whoever can answer a question in this run; nil when
	// nobody can (the ask tools are then not offered).
	Asker Asker
	// Subagents spawns this agent's children for spawn_subagent; nil
	// where delegation is not wired (the tool then refuses).
	Subagents Spawner
	// Policy reports the run's approval policy as it is now, for tools
	// that act on it themselves (git refuses a hostile repository below
	// high-risk); nil reads as no policy.
	Policy PolicyFunc
	// Context is the calling agent's own context window, for the session
	// tools (context_info, summarize_context); nil where none is wired.
	Context ContextWindow
	// Acts is the run tree's turn to change files: every execute twin
	// Pair declares holds it from its checks to its act (Turn). One per
	// run, shared with every sub-agent; nil holds nothing back.
	Acts *Turn
}

// ContextWindow is what the session tools may know about, and do to, the
// history of the agent that calls them.
type ContextWindow interface {
	// Usage is the estimated size of the agent's next request and its
	// budget, in tokens (budget 0 when unknown).
	Usage() (used, budget int)
	// Compact summarizes the older part of the history now, as automatic
	// compaction would.
	Compact(ctx context.Context) (Compaction, error)
}

// Compaction is what ContextWindow.Compact did.
type Compaction struct {
	// Empty: there is no history beyond the system prompt.
	Empty bool
	// Nothing: nothing lies between the system prompt and the recent part.
	Nothing bool
	// Before and After count the history's messages; Summarized the
	// messages the summary replaced.
	Before, After, Summarized int
}

// Cwd is the working directory the call runs in.
func (e *Env) Cwd() string { return e.WorkDir }

// Asker puts a question to a person (a terminal, a bridge, a remote
// process) and waits for the answer or ctx; an empty answer means none.
type Asker interface {
	// task is the asking sub-agent's brief ("" at the top), shown with
	// the question.
	Ask(ctx context.Context, place messages.Place, task, question string, suggestions []messages.Suggestion) (string, error)
}

// Spawner runs one spawn_subagent call to its end: args as the model sent
// them, cwd the calling agent's working directory. Every failure is a
// failed Result, never a panic or an error.
type Spawner interface {
	Spawn(ctx context.Context, cwd string, args json.RawMessage) Result
}
