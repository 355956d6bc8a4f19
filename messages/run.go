package messages

import (
	"encoding/json"
	"fmt"
)

// Risk levels of a tool, lowest first.
const (
	LevelReadOnly  = "read-only"
	LevelLowRisk   = "low-risk"
	LevelHighRisk  = "high-risk"
	LevelUnknown   = "unknown"
	PolicyNone     = ""
	PolicyReadOnly = LevelReadOnly
	PolicyLowRisk  = LevelLowRisk
	PolicyHighRisk = LevelHighRisk
)

// RunRequested asks an agent actor to run one bounded loop on a prompt.
type RunRequested struct {
	Place  Place  `json:"place"`
	Trace  Trace  `json:"trace,omitempty"`
	Prompt string `json:"prompt"`
	// History is the prior conversation (system message excluded).
	History []ChatMessage `json:"history,omitempty"`
}

// ModelTurnCompleted reports the end of one model call made by an agent.
type ModelTurnCompleted struct {
	Place     Place       `json:"place"`
	Trace     Trace       `json:"trace,omitempty"`
	Iteration int         `json:"iteration"`
	Message   ChatMessage `json:"message"`
	Usage     Usage       `json:"usage"`
	Model     string      `json:"model,omitempty"`
	// Err is set when the call failed for good (retries exhausted).
	Err string `json:"error,omitempty"`
	// Interrupted is set when the run was cancelled during the call.
	Interrupted bool `json:"interrupted,omitempty"`
}

// ToolCallRequested asks a tool actor to run one call the model asked for.
type ToolCallRequested struct {
	Place     Place    `json:"place"`
	Trace     Trace    `json:"trace,omitempty"`
	Iteration int      `json:"iteration"`
	Call      ToolCall `json:"call"`
	// Cwd is the agent's working directory as the batch started: every
	// call of one batch runs in the same one, whatever a `cd` among them.
	Cwd string `json:"cwd,omitempty"`
}

// ApprovalRequest is what a propose half returns instead of mutating.
type ApprovalRequest struct {
	Message         string          `json:"message"`
	PreviewDiff     string          `json:"previewDiff,omitempty"`
	ExecuteToolName string          `json:"executeToolName"`
	ExecuteArgs     json.RawMessage `json:"executeArgs"`
	// NotAutomatic, set by the propose half, says why no automatic gate
	// step (allowlist, static pass, classifier) may approve the call,
	// from what it found where the call will run (a git repository whose
	// configuration runs programs); only a person or the high-risk
	// policy may.
	NotAutomatic string `json:"notAutomatic,omitempty"`
	// HumanOnly, set by the propose half, says why only a person may
	// approve the call: it changes what decides later calls or runs (a
	// policy, an agent's instructions, git's hooks and config, a shell's
	// startup files). No allowlist, remembered answer or policy does.
	HumanOnly string `json:"humanOnly,omitempty"`
}

// ToolResult is the outcome of one tool call as the handler produced it.
type ToolResult struct {
	Success bool            `json:"success"`
	Result  json.RawMessage `json:"result"`
	Error   string          `json:"error,omitempty"`
	// Approval is set when a propose half asks the gate to run its twin.
	Approval *ApprovalRequest `json:"approval,omitempty"`
	// Truncated is set when the tool cut its output.
	Truncated bool `json:"truncated,omitempty"`
	// Chdir is the directory a `cd` moves the agent to, applied after the
	// batch.
	Chdir string `json:"chdir,omitempty"`
}

// AgentCall is a tool call with the agent of the run tree that made it,
// as a run's envelope lists the calls of the whole tree.
type AgentCall struct {
	ToolCall
	AgentID   string `json:"agentId,omitempty"`
	AgentName string `json:"agentName,omitempty"`
	Depth     int    `json:"depth"`
	// DecidedBy is who approved or declined the call, when it was gated.
	DecidedBy string `json:"decidedBy,omitempty"`
}

// ToolResultReady reports the final result of one call: exactly one per
// ToolCallRequested, whatever happened (timeout, panic, denial).
type ToolResultReady struct {
	Place      Place      `json:"place"`
	Trace      Trace      `json:"trace,omitempty"`
	Call       ToolCall   `json:"call"`
	Result     ToolResult `json:"result"`
	DurationMs int64      `json:"durationMs"`
	// Executed names the tool that finally ran (the twin after approval).
	Executed string `json:"executed,omitempty"`
	// Declined is set when the gate refused the call.
	Declined bool `json:"declined,omitempty"`
	// DecidedBy says who settled a gated call: policy, allowlist, human,
	// remote:<approver>, …; empty when the call was not gated.
	DecidedBy string `json:"decidedBy,omitempty"`
}

// ApprovalRequired asks the gate (and through it, whoever answers it) to
// decide on one gated call. It is also what remote approvers receive.
type ApprovalRequired struct {
	Place Place `json:"place"`
	Trace Trace `json:"trace,omitempty"`
	// RequestID names this one question to a person. The gate mints it,
	// unguessable, when it asks (it is empty on the way to the gate), and
	// a decision counts only when it echoes it: the model chooses tool
	// call ids and may repeat them, so they identify nothing.
	RequestID string `json:"requestId,omitempty"`
	// ToolCallID is the model's id of the call, for display and logs.
	ToolCallID      string          `json:"toolCallId"`
	ToolName        string          `json:"toolName"`
	RiskLevel       string          `json:"riskLevel"`
	Message         string          `json:"message"`
	PreviewDiff     string          `json:"previewDiff,omitempty"`
	ExecuteToolName string          `json:"executeToolName"`
	ExecuteArgs     json.RawMessage `json:"executeArgs,omitempty"`
	// Arguments are the call's arguments as the model sent them.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Command is the shell command for execute_command, to key allowlists.
	Command string `json:"command,omitempty"`
	// NotAutomatic is the propose half's reason no automatic step may
	// approve the call (ApprovalRequest.NotAutomatic).
	NotAutomatic string `json:"notAutomatic,omitempty"`
	// HumanOnly is the propose half's reason only a person may approve
	// the call (ApprovalRequest.HumanOnly).
	HumanOnly string `json:"humanOnly,omitempty"`
	// Task is the brief of the sub-agent that made the call (empty for the
	// top-level agent), so the person deciding sees who asks and why;
	// Place names the agent and its depth.
	Task string `json:"task,omitempty"`
	// Persona is the persona the asking sub-agent runs as (empty for the
	// top-level agent): its name is the model's choice and may claim any
	// role, its persona says which tools and instructions it really has.
	Persona string `json:"persona,omitempty"`
	// RememberScope is how far "always" answered on this request reaches
	// (ScopeRun or ScopeAgent); the gate sets it when it asks.
	RememberScope string `json:"rememberScope,omitempty"`
	// Worker is the key of the worker whose machine runs the call, for a
	// call relayed from a remote agent; empty for one of this process.
	// The runner sets it from the subject the request came on, never
	// from what the worker wrote.
	Worker string `json:"worker,omitempty"`
	// CommandKeys are the allowlist keys "always this command" would add
	// for Command (a key covers every later command whose key is it or
	// starts with it and a space: `npm -v` gives "npm", every npm command),
	// so the person sees how far that answer reaches; the gate sets them
	// when it asks.
	CommandKeys []string `json:"commandKeys,omitempty"`
}

// How far an "always" answer reaches.
const (
	// ScopeRun: the whole run tree (a prompt of the top-level agent).
	ScopeRun = "run"
	// ScopeAgent: only the sub-agent whose prompt it answered.
	ScopeAgent = "agent"
)

// Who answered a gate decision.
const (
	DecidedByPolicy    = "policy"
	DecidedByAllowlist = "allowlist"
	DecidedByHuman     = "human"
	DecidedByBridge    = "bridge"
	DecidedByRemote    = "remote"
	DecidedByNobody    = "unattended"
	DecidedByDenylist  = "denylist"
	DecidedByCancel    = "cancelled"
)

// TooLargeToApprove is what the model is told of a call declined because
// its approval request is larger than the bus that would carry it to a
// decider takes (size bytes, at most limit): nobody was shown a cut
// copy, so it is split or left out, never retried as it is.
func TooLargeToApprove(size, limit int64) string {
	return fmt.Sprintf("This call was declined: the change is too large to send for approval (%d bytes, limit %d). "+
		"Split it into smaller changes (several smaller writes or edits) and ask for each; do not retry it as it is.", size, limit)
}

// Remember choices an approver may attach to an approval.
const (
	RememberNone    = ""
	RememberTool    = "tool"
	RememberCommand = "command"
)

// ApprovalDecided is the gate's (or an approver's) answer to one request.
type ApprovalDecided struct {
	Place Place `json:"place"`
	Trace Trace `json:"trace,omitempty"`
	// RequestID must be the RequestID of the ApprovalRequired answered;
	// an approver's decision without it, or with another, is ignored.
	RequestID  string `json:"requestId,omitempty"`
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName,omitempty"`
	Approved   bool   `json:"approved"`
	// Auto is set when policy or an allowlist decided, not a person.
	Auto      bool   `json:"auto"`
	DecidedBy string `json:"decidedBy,omitempty"`
	Note      string `json:"note,omitempty"`
	Remember  string `json:"remember,omitempty"`
	// Judgement is, for an approved execute_command, the gate's record of
	// what it approved and why (a shellguard.Judgement as JSON); the
	// execute twin checks every expanded command against it.
	Judgement json.RawMessage `json:"judgement,omitempty"`
}

// AgentEnded tells the gate that a sub-agent has ended (finished, out of
// time, cancelled, its worker lost): nobody waits for an answer to its
// approval requests any more, so none is put to a person, and one being
// asked is withdrawn. The runtime sends it with the id it gave the child;
// it only ever declines.
type AgentEnded struct {
	AgentID string `json:"agentId"`
}

// PolicyChanged sets the run's approval policy; queued calls see it.
type PolicyChanged struct {
	Place  Place  `json:"place"`
	Policy string `json:"policy"`
}

// Suggestion is one offered answer to a question.
type Suggestion struct {
	Value       string `json:"value"`
	Label       string `json:"label,omitempty"`
	Description string `json:"description,omitempty"`
}

// UserInputRequired asks whoever is reachable a question.
type UserInputRequired struct {
	Place       Place        `json:"place"`
	Trace       Trace        `json:"trace,omitempty"`
	RequestID   string       `json:"requestId"`
	Question    string       `json:"question"`
	Suggestions []Suggestion `json:"suggestions"`
	AllowCustom bool         `json:"allowCustom"`
	// Task is the brief of the sub-agent asking (empty for the top-level
	// agent); Place names the agent and its depth.
	Task string `json:"task,omitempty"`
}

// UserInputAnswered carries the answer; an empty Response means no answer.
type UserInputAnswered struct {
	Place     Place  `json:"place"`
	RequestID string `json:"requestId"`
	Response  string `json:"response"`
}

// RunFinished is the terminal fact of a run (or a subagent's run).
type RunFinished struct {
	Place     Place   `json:"place"`
	Trace     Trace   `json:"trace,omitempty"`
	OK        bool    `json:"ok"`
	Answer    string  `json:"answer,omitempty"`
	Error     string  `json:"error,omitempty"`
	CostUSD   float64 `json:"costUSD"`
	CostKnown bool    `json:"costKnown"`
	Usage     Usage   `json:"tokenUsage"`
	// ToolCalls lists every call of the agent's subtree, children's too.
	ToolCalls []AgentCall `json:"toolCalls"`
	// Declined lists the subtree's calls the gate refused.
	Declined []AgentCall `json:"declined,omitempty"`
	// Transcript is the final conversation (system message included).
	Transcript []ChatMessage `json:"transcript,omitempty"`
	// Texts are the assistant texts written along the way (for partial results).
	Texts      []string `json:"texts,omitempty"`
	Iterations int      `json:"iterations"`
	// StopReason is why the run ended (Stop*): what the envelope's
	// stopReason and the run_end event say.
	StopReason string `json:"stopReason,omitempty"`
}

// Why a run ended: the envelope's stopReason and run_end's. Every part of
// the runtime that ends a run names its reason with one of these.
const (
	// StopCompleted: the model gave its final answer.
	StopCompleted = "completed"
	// StopMaxIterations: the iteration cap ended the loop; the answer is
	// what the model had written by then. Still ok (exit 0) unless the
	// caller counts it as a failure (--fail-on-max-iterations).
	StopMaxIterations = "max_iterations"
	// StopDeclined: the run finished, but the gate declined at least one
	// call, so the answer may say what could not be done.
	StopDeclined = "declined"
	// StopTimeout: --timeout (or the caller's deadline) stopped the run.
	StopTimeout = "timeout"
	// StopInterrupted: a signal, Ctrl-C, or the caller stopped the run.
	// Not a failure of the run itself: no error event is sent for it.
	StopInterrupted = "interrupted"
	// StopError: the run failed (a model error, a crash, a bad option).
	StopError = "error"
)

// StopReasonOf is the stop reason of a run that ended as f, stopped for
// cause (Cause*, empty when it ended on its own): a stop names its cause;
// a run that ended on its own keeps the reason its agent gave
// (max_iterations), else says whether the gate declined anything.
func StopReasonOf(f RunFinished, cause string) string {
	switch cause {
	case CauseTimeout:
		return StopTimeout
	case CauseCancelled:
		return StopInterrupted
	case CauseCrash:
		return StopError
	}
	switch {
	case !f.OK:
		return StopError
	case f.StopReason != "":
		return f.StopReason
	case len(f.Declined) > 0:
		return StopDeclined
	}
	return StopCompleted
}

// ActorFailed reports that an actor panicked; the recover middleware sends
// it to the parent instead of letting the engine restart or crash, and a
// supervisor that escalates passes it up to the run's root.
type ActorFailed struct {
	Place  Place  `json:"place"`
	Actor  string `json:"actor"`
	Reason string `json:"reason"`
	// Role says what crashed (Role*), for the run's error message.
	Role string `json:"role,omitempty"`
}

// The parts of a run tree that can crash, as ActorFailed.Role names them.
const (
	RoleGate     = "gate"
	RoleAgent    = "agent"
	RoleCall     = "call"
	RoleSubagent = "subagent"
	RoleSink     = "sink"
)

// CancelRun asks a run tree to stop.
type CancelRun struct {
	Place  Place  `json:"place"`
	Reason string `json:"reason"`
	// Cause is why (Cause*), for the run's error event; empty means
	// CauseCancelled.
	Cause string `json:"cause,omitempty"`
}

// Why a run was stopped before it finished.
const (
	CauseCancelled = "cancelled" // a signal, or the caller
	CauseTimeout   = "timeout"   // --timeout
	CauseCrash     = "crash"     // something in the run tree crashed
)
