package messages

import (
	"encoding/json"
	"time"
)

// Work subjects. A worker pool is a JetStream work-queue stream of tasks
// and, per worker, a namespace only that worker may publish in: the
// server's permissions name the worker's own key (or, on an operator
// cluster, {{subject()}}), so a message on a worker's subject is known to
// come from it.
//
//	jazz.work.<pool>.task                                WorkTask       (runner → stream → one worker)
//	jazz.work.<pool>.w.<worker>.<run>.<task>.claim       WorkClaimed    (worker → runner, stream)
//	jazz.work.<pool>.w.<worker>.<run>.<task>.approval    WorkApproval   (worker → runner, stream)
//	jazz.work.<pool>.w.<worker>.<run>.<task>.result      WorkResult     (worker → runner, stream)
//	jazz.work.<pool>.w.<worker>.<run>.<task>.beat        WorkBeat       (worker → runner)
//	jazz.work.<pool>.w.<worker>.<run>.<task>.event       WorkEvent      (worker → runner)
//	jazz.work.<pool>.w.<worker>.<run>.<task>.ask         WorkApproval   (worker → runner: a re-ask)
//	jazz.work.<pool>.to.<worker>.<task>.decision         WorkDecision   (runner → worker)
//	jazz.work.<pool>.to.<worker>.status                  the worker's micro endpoint
//
// Every token is passed through SubjectToken.
const workRoot = "jazz.work."

// WorkSealHeader carries the seal of a message about a task: an HMAC,
// under the task's Key, of its subject and body. A message about a task
// without a valid one is ignored, whoever the bus says sent it.
const WorkSealHeader = "Jazz-Seal"

// Kinds of the messages a worker publishes about a task (the last token
// of its subject).
const (
	WorkKindClaim    = "claim"
	WorkKindApproval = "approval"
	WorkKindResult   = "result"
	WorkKindBeat     = "beat"
	WorkKindEvent    = "event"
	WorkKindAsk      = "ask"
)

// WorkTaskSubject is where a pool's tasks are queued.
func WorkTaskSubject(pool string) string { return workRoot + SubjectToken(pool) + ".task" }

// WorkerSubject is where worker publishes kind about task of run.
func WorkerSubject(pool, worker, runID, taskID, kind string) string {
	return workRoot + SubjectToken(pool) + ".w." + SubjectToken(worker) + "." + SubjectToken(runID) + "." +
		SubjectToken(taskID) + "." + SubjectToken(kind)
}

// WorkRunWildcard matches everything any worker of pool publishes about
// the tasks of runID.
func WorkRunWildcard(pool, runID string) string {
	return workRoot + SubjectToken(pool) + ".w.*." + SubjectToken(runID) + ".>"
}

// WorkDecisionSubject carries the runner's decisions to worker.
func WorkDecisionSubject(pool, worker, taskID string) string {
	return workRoot + SubjectToken(pool) + ".to." + SubjectToken(worker) + "." + SubjectToken(taskID) + ".decision"
}

// WorkerInbox matches everything sent to worker in pool.
func WorkerInbox(pool, worker string) string {
	return workRoot + SubjectToken(pool) + ".to." + SubjectToken(worker) + ".>"
}

// WorkStatusSubject is a worker's status endpoint.
func WorkStatusSubject(pool, worker string) string {
	return workRoot + SubjectToken(pool) + ".to." + SubjectToken(worker) + ".status"
}

// Kinds of task.
const (
	// TaskSubagent is one spawn_subagent child.
	TaskSubagent = "subagent"
	// TaskRun is a whole run (`jazz run --remote`): the top-level agent.
	TaskRun = "run"
)

// WorkTask is one unit of work for a pool: an agent to run, with
// everything it may do and nothing it must not know. It carries no
// credential of the submitter: the worker calls the model with its own
// keys, and the submitter's own secrets are redacted from the text.
type WorkTask struct {
	// TaskID names the task; it is no secret (the cancel and gated
	// records are keyed by it).
	TaskID string `json:"taskId"`
	// Key is the task's own secret, minted for it alone: the submitter
	// and the workers the task is delivered to are the only ones who
	// learn it. Everything said about the task, either way, is sealed
	// with it (WorkSealHeader on messages, Seal on records), because who
	// published on a subject proves nothing: JetStream delivers stored
	// messages, and API replies, to whatever subject a client names.
	Key  string `json:"key"`
	Pool string `json:"pool"`
	Kind string `json:"kind"`
	// Place is the agent the task runs: the run, its id, name and depth.
	Place Place `json:"place"`
	// Trace is the submitter's span (spawn_subagent's): the task's spans
	// nest under it.
	Trace    Trace  `json:"trace,omitempty"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// SystemPrompt is the agent's instructions; a line naming the
	// submitter's working directory names WorkDirMarker instead.
	SystemPrompt string `json:"systemPrompt"`
	// Prompt is the agent's first user message (a child's: the preamble
	// and the task).
	Prompt  string        `json:"prompt"`
	History []ChatMessage `json:"history,omitempty"`
	// Task is a child's brief, shown with its approvals.
	Task string `json:"task,omitempty"`
	// Tools is the tool ceiling: every name the agent may call, twins
	// included. The worker offers only these, whatever it has.
	Tools              []string `json:"tools"`
	MaxIterations      int      `json:"maxIterations"`
	MaxDepth           int      `json:"maxDepth"`
	SubagentIterations int      `json:"subagentIterations,omitempty"`
	SubagentTimeoutMs  int64    `json:"subagentTimeoutMs,omitempty"`
	ReasoningEffort    string   `json:"reasoningEffort,omitempty"`
	Temperature        *float64 `json:"temperature,omitempty"`
	EnvAllowlist       []string `json:"envAllowlist,omitempty"`
	Stream             bool     `json:"stream,omitempty"`
	// TimeoutMs bounds the agent on the worker (the submitter's own
	// timer bounds it too); Expires is when a task nobody started is
	// dropped.
	TimeoutMs int64     `json:"timeoutMs"`
	Expires   time.Time `json:"expires"`
	// Sent is when the submitter queued the task.
	Sent time.Time `json:"sent"`
	// StepCeilingMs bounds each of the agent's model steps, retries and
	// waits included, as the submitter's own steps are bounded; the
	// worker keeps the smaller of it and its own (0: its own).
	StepCeilingMs int64 `json:"stepCeilingMs,omitempty"`
}

// WorkDirMarker stands for the worker's working directory in a task's
// system prompt.
const WorkDirMarker = "{{jazz.workdir}}"

// WorkClaimed says a worker started attempt Attempt of a task.
type WorkClaimed struct {
	TaskID string `json:"taskId"`
	// Worker is the worker's key, as its subject names it.
	Worker  string `json:"worker"`
	Name    string `json:"name,omitempty"`
	Attempt int    `json:"attempt"`
	// LeaseMs is how long the task's message stays with the worker
	// without a heartbeat before JetStream hands it to another.
	LeaseMs int64  `json:"leaseMs"`
	Version string `json:"version,omitempty"`
}

// WorkBeat is a worker's heartbeat for a running task, with what the
// agent has spent so far (for a worker that is lost before its result).
type WorkBeat struct {
	TaskID  string `json:"taskId"`
	Attempt int    `json:"attempt"`
	Usage   Usage  `json:"usage"`
	// UsageUnknown: a response had no usable usage.
	UsageUnknown bool `json:"usageUnknown,omitempty"`
}

// WorkEvent is one event of the task's agents, for the submitter's stream.
type WorkEvent struct {
	TaskID  string          `json:"taskId"`
	Attempt int             `json:"attempt"`
	Event   json.RawMessage `json:"event"`
	Trace   Trace           `json:"trace,omitempty"`
	// Seq numbers the attempt's events from 1: events are core messages
	// and the result comes through the stream, so the runner counts what
	// it heard against WorkResult.Events.
	Seq int `json:"seq,omitempty"`
}

// WorkApproval carries a gated call of the task to the submitter's gate:
// a worker never decides one. Seq numbers the attempt's requests.
type WorkApproval struct {
	TaskID   string           `json:"taskId"`
	Attempt  int              `json:"attempt"`
	Seq      int              `json:"seq"`
	Required ApprovalRequired `json:"required"`
}

// WorkDecision is the submitter's gate's answer to one WorkApproval.
type WorkDecision struct {
	TaskID   string          `json:"taskId"`
	Attempt  int             `json:"attempt"`
	Seq      int             `json:"seq"`
	Decision ApprovalDecided `json:"decision"`
	// Action names the one call the submitter's gate decided (a digest
	// of its agent, tool call id, tool, execute tool and arguments, as
	// the submitter checked them): the worker runs an approved call only
	// when its own pending request has this digest.
	Action string `json:"action,omitempty"`
}

// WorkResult is how an attempt of a task ended.
type WorkResult struct {
	TaskID  string `json:"taskId"`
	Attempt int    `json:"attempt"`
	// Finished is the agent's end: answer, texts, error, transcript.
	Finished RunFinished `json:"finished"`
	// Kind is empty when the agent ended on its own (supervisor
	// failure kinds otherwise: timeout, cancelled, panic, run).
	Kind   string `json:"kind,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Usage is everything the task's agents spent; UsageUnknown says a
	// response reported none (the cost is then a lower bound).
	Usage        Usage `json:"usage"`
	UsageUnknown bool  `json:"usageUnknown,omitempty"`
	// Calls and Declined are every call of the task's agents.
	Calls    []AgentCall `json:"calls,omitempty"`
	Declined []AgentCall `json:"declined,omitempty"`
	// NotRetried: the worker refused a redelivered task because an
	// earlier attempt had started a gated action.
	NotRetried bool `json:"notRetried,omitempty"`
	// Events is how many events the attempt published before its result:
	// the runner waits a moment for any still on their way, so the last
	// events of a run (tool_execution_complete) are not lost behind it.
	Events int `json:"events,omitempty"`
}

// WorkCancel is the durable record that a task must stop: the worker
// running it (or taking it later, or reconnecting) stops attempts below
// Below, or every attempt when Below is 0.
type WorkCancel struct {
	TaskID string `json:"taskId"`
	Reason string `json:"reason"`
	Kind   string `json:"kind,omitempty"`
	Below  int    `json:"below,omitempty"`
	// Seal is the runner's HMAC of the record under the task's Key: a
	// record without a valid one stops nothing.
	Seal string `json:"seal,omitempty"`
}

// WorkGated is the durable record that an attempt of a task started a
// gated action: the runner writes it before it sends the approval, so
// it is kept before any execute twin runs, and a redelivered task with
// one is never run again.
type WorkGated struct {
	TaskID  string    `json:"taskId"`
	Attempt int       `json:"attempt"`
	Worker  string    `json:"worker"`
	Tool    string    `json:"tool"`
	At      time.Time `json:"at"`
	// Seal is the runner's HMAC of the record under the task's Key: only
	// a record with a valid one is the task's.
	Seal string `json:"seal,omitempty"`
}

// WorkerStatus is a worker's load, as `jazz workers` lists it.
type WorkerStatus struct {
	Worker   string `json:"worker"`
	Name     string `json:"name,omitempty"`
	Pool     string `json:"pool"`
	Capacity int    `json:"capacity"`
	Running  int    `json:"running"`
	// Done counts the tasks this worker answered with a result. A
	// delivery it dropped (malformed, expired, cancelled by its runner)
	// or handed back is not one: under load a task's redelivery after
	// its runner finished would otherwise count twice across the pool.
	Done    int64  `json:"done"`
	Version string `json:"version,omitempty"`
}
