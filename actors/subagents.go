package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/deadline"
	"github.com/jazz-run/jazz/internal/faults"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/personas"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/telemetry"
	"github.com/jazz-run/jazz/tools"
)

// SubagentToolName is the delegation tool.
const SubagentToolName = "spawn_subagent"

// Subagent defaults and limits (subagents.md §2).
const (
	DefaultSubagentTimeout    = 30 * time.Minute
	DefaultSubagentIterations = 30
	// MaxTaskChars bounds a task: a brief, not a document. Bigger material
	// belongs in a file the child can read.
	MaxTaskChars = 100_000
	// MaxNameChars bounds a child's name: a role label, which every
	// approval the child asks for shows the person deciding.
	MaxNameChars = 80
	// DefaultMaxLive is how many sub-agents of one tree may run at once
	// unless Subagents.MaxLive says otherwise. Breadth (calls at once)
	// to the power of depth is otherwise the only bound, and at the
	// deepest allowed nesting that is more agents than any machine holds.
	DefaultMaxLive = 1000
	// stopGrace is how long a child asked to stop may take to hand back
	// what it has (its partial texts and spend) before it is torn down.
	stopGrace = 500 * time.Millisecond
	// childInbox is the starting inbox of a child's supervisor and agent:
	// hollywood's default (1024 slots) is most of an idle child's memory,
	// and an inbox grows when it must.
	childInbox = 16
)

// Fixed texts of spawn_subagent (tool-schemas.md §8, subagents.md §4).
const (
	PartialResultsHeader = "[Sub-agent reached iteration limit. Partial results below]"
	NoContentResult      = "Sub-agent completed but returned no content."
	NoParentContext      = "Sub-agent tool requires parent agent context. This is a bug — please report it."
	nestingLimit         = "Sub-agent nesting limit reached (depth %d of %d). Do this task yourself instead of delegating it further."
	liveLimit            = "Too many sub-agents are running in this run (the limit is %d at once). Wait for the ones you started to finish, or do this task yourself."
	noTimeLeft           = "No time is left for a sub-agent: this agent's own time limit is (nearly) up. Answer with what you have."
)

// SubagentPreamble opens a child's only user message; the task follows.
const SubagentPreamble = "[SUB-AGENT TASK]\n" +
	"You are a sub-agent doing a one-shot job for a parent agent, which sees only your final answer. " +
	"Answer the task below; do not ask questions (nobody will answer them): state the assumptions you make instead. " +
	"Do not search forever: when you have enough, stop and answer. If you cannot finish, return partial results and say why. " +
	"Stay within the task's scope and be concise.\n\n"

// Subagents spawns the children of one agent; it is that agent's
// tools.Spawner (Env.Subagents). The run installs one for the top-level
// agent, and every child gets its own, pointing at itself, so depth and
// the tool ceiling follow the tree.
type Subagents struct {
	// Engine is where the children live.
	Engine *actor.Engine
	// Parent is the config of the agent whose spawn_subagent calls this
	// serves. A child is made from it: same provider, model, caller, gate,
	// events and prices; its Registry is the children's tool ceiling and
	// its Place.Depth the parent's depth.
	Parent Config
	// MaxDepth is maxSubagentDepth (0 = no delegation).
	MaxDepth int
	// MaxIterations is each child's own budget; 0 means 30.
	MaxIterations int
	// Timeout bounds each child; 0 means 30 minutes.
	Timeout time.Duration
	// Spec says what to do when a child fails; the zero Spec means
	// supervisor.DefaultSubagentSpec.
	Spec supervisor.Spec
	// Personas resolves a persona name; nil looks in the parent's
	// JAZZ_HOME, then the built-ins.
	Personas func(name string) (personas.Persona, error)
	// Seq numbers children across the whole tree, so ids are unique in
	// the run; NewSubagents sets it and children share it.
	Seq *atomic.Int64
	// Live counts the tree's sub-agents running now, against MaxLive (0
	// means DefaultMaxLive); NewSubagents sets it and children share it.
	// Without it no child starts.
	Live    *atomic.Int64
	MaxLive int
	// until is when the agent this spawner serves must be done (unix
	// nanoseconds, 0 for no limit): its own run's time limit, set when
	// it starts (attempt). Its children's time limits end no later.
	until *atomic.Int64
	// IDPrefix starts every child id ("subagent" when empty). A worker
	// running a task's agent gives its children the agent's id, so the
	// submitter can tell the task's agents from its own.
	IDPrefix string
	// Runner runs the children somewhere else (a worker pool); nil runs
	// them here, under a supervisor actor on Engine.
	Runner ChildRunner
	// Scope keeps this tree's actor names apart from other trees' on a
	// shared Engine: a child's supervisor actor is named scope/agent id.
	// Agent ids are unique within a tree only (a sequence and a
	// millisecond), so an engine that runs many trees at once (a
	// worker's) gives each its own scope; a run's own engine needs none.
	Scope string
	// Now stamps child ids; nil is time.Now.
	Now func() time.Time
}

// ChildRunner runs one child to its end and reports how it ended; every
// failure is an outcome, never a panic. The child's ctx is the
// spawn_subagent call's: cancelling it stops the child.
type ChildRunner interface {
	RunChild(ctx context.Context, c ChildRun) ChildOutcome
}

// ChildRun is one child, ready to run: Config is its config as a local
// child's (place, tool set, prompts, budget, ledger node, gate, events).
type ChildRun struct {
	Config Config
	// Engine is where the parent lives (its gate among it).
	Engine *actor.Engine
	// Prompt is the child's first message: the preamble and the task.
	Prompt string
	// History is conversation before Prompt (a whole run sent to a
	// worker); a child has none.
	History []messages.ChatMessage
	// Trace is the child's subagent span.
	Trace messages.Trace
	// Timeout bounds the child; MaxDepth and SubagentIterations are the
	// tree's limits for the child's own children.
	Timeout            time.Duration
	MaxDepth           int
	SubagentIterations int
	SubagentTimeout    time.Duration
	// Spec says what to do when the child fails.
	Spec supervisor.Spec
}

// ChildOutcome is how a child ended.
type ChildOutcome struct {
	Finished messages.RunFinished
	// Kind is empty when the child finished on its own and OK.
	Kind   supervisor.FailureKind
	Reason string
}

// NewSubagents is the spawner of a run's top-level agent, with a fresh
// child counter; set the optional fields (Timeout, Spec, Personas) on the
// result before the run starts.
func NewSubagents(engine *actor.Engine, parent Config, maxDepth, maxIterations int) *Subagents {
	return &Subagents{Engine: engine, Parent: parent, MaxDepth: maxDepth, MaxIterations: maxIterations, Seq: new(atomic.Int64),
		Live: new(atomic.Int64)}
}

// SubagentTool is spawn_subagent. It is low-risk, so it passes the gate
// like any other gated call; it is long-running, and the spawner applies
// the child's own time limit instead of the generic tool timeout.
func SubagentTool() tools.Tool {
	return tools.Tool{
		Name: SubagentToolName,
		Description: "Delegate a self-contained task to a sub-agent with a fresh context: it never sees this conversation, " +
			"only the task, and returns only its final answer. Write the task as a complete brief, including the shape of the " +
			"answer you want. Several calls in one turn run in parallel. persona: default, coder or researcher (or a custom one).",
		Schema:      json.RawMessage(subagentSchema),
		Level:       messages.LevelLowRisk,
		LongRunning: true,
		Handler:     spawnSubagent,
	}
}

const subagentSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["task"],
  "properties": {
    "task": {"type": "string", "description": "The full brief, including the expected output shape. The sub-agent sees nothing else."},
    "name": {"type": "string", "description": "A role label, e.g. \"API reviewer\". Default: Sub-Agent (<persona>)."},
    "persona": {"type": "string", "description": "default, coder, researcher, or a custom persona. Default: default."},
    "reasoningEffort": {"type": "string", "enum": ["disable", "low", "medium", "high"], "description": "Omitted: the parent's."}
  }
}`

type subagentArgs struct {
	Task            string `json:"task"`
	Name            string `json:"name"`
	Persona         string `json:"persona"`
	ReasoningEffort string `json:"reasoningEffort"`
}

func spawnSubagent(ctx context.Context, env *tools.Env, args json.RawMessage) tools.Result {
	if env == nil || env.Subagents == nil {
		return tools.Fail(NoParentContext)
	}
	return env.Subagents.Spawn(ctx, env.Cwd(), args)
}

// Spawn runs one child for a spawn_subagent call and blocks until it ends:
// with its answer, its failure, its time limit, or ctx (the parent's call,
// so cancelling the parent cascades). The child starts in cwd, the
// calling agent's directory. Bad input is a failed result and no child;
// every failure is a result, never a panic or an error, and a crash is
// also escalated to the run's root (DefaultSubagentSpec).
func (s *Subagents) Spawn(ctx context.Context, cwd string, raw json.RawMessage) tools.Result {
	if s.Engine == nil || s.Seq == nil || s.Live == nil {
		return tools.Fail(NoParentContext)
	}
	var a subagentArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return tools.Fail("Invalid spawn_subagent arguments: " + err.Error())
	}
	task := strings.TrimSpace(a.Task)
	if task == "" {
		return tools.Fail("The task is empty. Give the sub-agent a complete brief: what to do and what to return.")
	}
	if n := utf8.RuneCountInString(task); n > MaxTaskChars {
		return tools.Fail(fmt.Sprintf("The task is %d characters long; the limit is %d. Put the material in a file and give the sub-agent its path and a short brief instead.", n, MaxTaskChars))
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(a.Name)); n > MaxNameChars {
		return tools.Fail(fmt.Sprintf("The name is %d characters long; the limit is %d. A name is a short role label; put the details in the task.", n, MaxNameChars))
	}
	if s.MaxDepth < 0 || s.MaxDepth > config.MaxSubagentDepthLimit {
		return tools.Fail(fmt.Sprintf("Sub-agents are misconfigured: maxSubagentDepth is %d, but it must be between 0 and %d. Do this task yourself.", s.MaxDepth, config.MaxSubagentDepthLimit))
	}
	depth := s.Parent.Place.Depth
	if depth >= s.MaxDepth {
		return tools.Fail(fmt.Sprintf(nestingLimit, depth, s.MaxDepth))
	}
	lookup := s.Personas
	if lookup == nil {
		home := ""
		if s.Parent.Env != nil {
			home = s.Parent.Env.JazzHome
		}
		lookup = func(name string) (personas.Persona, error) { return personas.Lookup(ctx, home, name) }
	}
	p, err := lookup(a.Persona)
	if err == nil {
		err = p.Validate()
	}
	if err != nil {
		return tools.Fail(fmt.Sprintf("Cannot start the sub-agent: %v.", err))
	}
	spec := s.Spec
	if spec == (supervisor.Spec{}) {
		spec = supervisor.DefaultSubagentSpec()
	}
	if err := spec.Validate(); err != nil {
		return tools.Fail(fmt.Sprintf("Cannot start the sub-agent: %v.", err))
	}

	timeout := s.timeout()
	if u := s.untilNanos(); u != 0 {
		// A child never outlives its parent: its limit ends with the
		// parent's, here and, through the task, on a worker.
		left := time.Until(time.Unix(0, u))
		if left < time.Millisecond {
			return tools.Fail(noTimeLeft)
		}
		timeout = min(timeout, left)
	}
	maxLive := s.MaxLive
	if maxLive <= 0 {
		maxLive = DefaultMaxLive
	}
	if s.Live.Add(1) > int64(maxLive) {
		s.Live.Add(-1)
		return tools.Fail(fmt.Sprintf(liveLimit, maxLive))
	}
	defer s.Live.Add(-1)

	cfg, name := s.childConfig(a, p, cwd)
	start := time.Now()
	em := s.Parent.Events
	em.Emit(messages.Event{Type: messages.EventSubagentStart, Place: cfg.Place, Trace: nil,
		Task: TaskPreview(task), Persona: p.Name})
	// ctx is the spawn_subagent call's: the child's span nests under it,
	// and the child's run under that, through RunRequested.Trace.
	sctx, span := cfg.Telemetry.StartSubagent(ctx, telemetry.SubagentInfo{
		AgentID: cfg.Place.AgentID, AgentName: name, ConversationID: cfg.Env.ConversationID,
		Depth: cfg.Place.Depth, Model: cfg.Model})
	// This handler only waits on its child, which marks its own work busy
	// on the run's deadline: its own mark must not keep the clock running
	// through the child's waits for a person.
	idle := deadline.Idle(ctx)
	run := ChildRun{Config: cfg, Engine: s.Engine, Prompt: SubagentPreamble + task, Trace: telemetry.Inject(sctx),
		Timeout: timeout, MaxDepth: s.MaxDepth, SubagentIterations: s.MaxIterations, SubagentTimeout: s.timeout(), Spec: spec}
	var o ChildOutcome
	if s.Runner != nil {
		o = s.Runner.RunChild(sctx, run)
	} else {
		o = s.RunLocal(ctx, run)
	}
	if cfg.Gate != nil && s.Engine != nil {
		// Whatever ended it, nothing waits for its approvals now: the
		// gate declines them and withdraws the one it may be asking.
		s.Engine.Send(cfg.Gate, messages.AgentEnded{AgentID: cfg.Place.AgentID})
	}
	idle()
	span.End(subagentRunResult(o))
	dur := time.Since(start).Milliseconds()
	res := subagentResult(name, o)
	em.Emit(messages.Event{Type: messages.EventSubagentComplete, Place: cfg.Place,
		Persona: p.Name, Success: messages.Ptr(res.Success), DurationMs: &dur})
	return res
}

// childConfig derives a child's config from the parent's: a new id, one
// level deeper, the persona's tools within the parent's, its own budget,
// working directory (starting at cwd) and spawner.
func (s *Subagents) childConfig(a subagentArgs, p personas.Persona, cwd string) (Config, string) {
	clock := s.Now
	if clock == nil {
		clock = time.Now
	}
	n, now := s.Seq.Add(1), clock().UnixMilli()
	prefix := s.IDPrefix
	if prefix == "" {
		prefix = "subagent"
	}
	id := fmt.Sprintf("%s-%d-%d", prefix, n, now)
	name := strings.TrimSpace(a.Name)
	if name == "" {
		name = fmt.Sprintf("Sub-Agent (%s)", p.Name)
	}
	cfg := s.Parent
	cfg.Place = messages.Place{RunID: s.Parent.Place.RunID, AgentID: id, AgentName: name, Depth: s.Parent.Place.Depth + 1,
		ParentAgentID: s.Parent.Place.AgentID}
	// The child's spend and calls go into the tree's account at once, so
	// the parent's totals (and the run's envelope) hold them whatever
	// becomes of this call.
	cfg.Ledger = s.Parent.Ledger.Child(cfg.Place)
	if p.SystemPrompt != "" {
		cfg.SystemPrompt = strings.TrimRight(cfg.SystemPrompt, "\n") + "\n\n" + p.SystemPrompt
	}
	cfg.Registry = ChildRegistry(s.Parent.Registry, p)
	cfg.Task = strings.TrimSpace(a.Task)
	cfg.Persona = p.Name
	cfg.MaxIterations = s.MaxIterations
	if cfg.MaxIterations <= 0 {
		cfg.MaxIterations = DefaultSubagentIterations
	}
	// Never a bigger budget than the parent's own (an agent runs at
	// least one iteration, whatever its config says).
	cfg.MaxIterations = min(cfg.MaxIterations, max(s.Parent.MaxIterations, 1))
	cfg.Stream = false // children run internally: no live text
	if a.ReasoningEffort != "" {
		cfg.ReasoningEffort = a.ReasoningEffort
	}
	if warn := s.Parent.Warn; warn != nil {
		cfg.Warn = func(msg string) { warn(name + ": " + msg) }
	}
	// The child owns its own directory: its cd never moves its parent.
	env := &tools.Env{AgentID: id, AgentName: name, Depth: cfg.Place.Depth, Task: cfg.Task,
		ConversationID: fmt.Sprintf("%s-conv-%d-%d", prefix, n, now), WorkDir: cwd}
	if pe := s.Parent.Env; pe != nil {
		env.JazzHome, env.Home, env.EnvAllowlist, env.Secrets = pe.JazzHome, pe.Home, pe.EnvAllowlist, pe.Secrets
		env.Timezone = pe.Timezone
		env.Asker = pe.Asker // run-scoped: one numbering of questions
		env.Policy = pe.Policy
		env.Acts = pe.Acts // run-scoped: one turn to change files
		if cwd == "" {
			env.WorkDir = pe.WorkDir
		}
	}
	cfg.Env = env
	child := *s
	child.Parent = cfg
	child.until = new(atomic.Int64) // the child's own limit, set when it starts
	env.Subagents = &child
	return cfg, name
}

// ChildRegistry is a child's tool set: the ceiling's tools the persona
// allows (all of them when it lists none), less every pair a deny entry
// names by either half, twins included (personas.Matches: case, space,
// patterns and MCP categories are read as a person means them). It only
// ever keeps names the ceiling holds, so a child can never gain a tool
// its parent lacks; a persona whose entries cannot be read (Validate)
// gets no tools at all, since its denies cannot be honoured.
func ChildRegistry(ceiling *tools.Registry, p personas.Persona) *tools.Registry {
	if ceiling == nil || p.Validate() != nil {
		r, _ := tools.NewRegistry()
		return r
	}
	if p.Tools == nil && len(p.Deny) == 0 {
		return ceiling
	}
	keep := make([]string, 0, len(ceiling.Names()))
	for _, t := range ceiling.Visible() {
		if !p.Allows(t.Name) || p.Denies(t.Name) || (t.Twin != "" && p.Denies(t.Twin)) {
			continue
		}
		keep = append(keep, t.Name)
	}
	return ceiling.Subset(keep)
}

// TaskPreview is the task as subagent_start shows it: over 80 characters,
// "..." and its last 77.
func TaskPreview(task string) string {
	r := []rune(task)
	if len(r) <= 80 {
		return task
	}
	return "..." + string(r[len(r)-77:])
}

// untilNanos is s.until's value, 0 when it has none.
func (s *Subagents) untilNanos() int64 {
	if s.until == nil {
		return 0
	}
	return s.until.Load()
}

// envSpawner is the agent's own spawner, when env holds one of ours.
func envSpawner(env *tools.Env) (*Subagents, bool) {
	if env == nil {
		return nil, false
	}
	own, ok := env.Subagents.(*Subagents)
	return own, ok && own != nil
}

func (s *Subagents) timeout() time.Duration {
	if s.Timeout <= 0 {
		return DefaultSubagentTimeout
	}
	return s.Timeout
}

// RunLocal runs the child here, under a small supervisor actor on
// s.Engine, and waits for its outcome, its time limit or ctx. Whatever
// happens, the supervisor (and with it the child and the child's calls)
// is gone when it returns.
func (s *Subagents) RunLocal(ctx context.Context, c ChildRun) ChildOutcome {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultSubagentTimeout
	}
	spec := c.Spec
	if spec == (supervisor.Spec{}) {
		spec = supervisor.DefaultSubagentSpec()
	}
	restarts := 0
	for {
		o := s.attempt(ctx, c, spec, timeout)
		if o.Kind != supervisor.FailTimeout {
			return o
		}
		if supervisor.Decide(spec, supervisor.ChildFailure{Kind: o.Kind, Restarts: restarts, Reason: o.Reason}) != supervisor.Restart {
			return o
		}
		restarts++
	}
}

func (s *Subagents) attempt(ctx context.Context, run ChildRun, spec supervisor.Spec, timeout time.Duration) ChildOutcome {
	cfg := run.Config
	childCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg.Ctx = childCtx
	if own, ok := envSpawner(cfg.Env); ok {
		// What this attempt's children may have left, at most. Written
		// before the child exists, so before any Spawn of its reads it.
		if own.until == nil {
			own.until = new(atomic.Int64)
		}
		own.until.Store(time.Now().Add(timeout).UnixNano())
	}
	done := make(chan ChildOutcome, 1)
	deliver := func(o ChildOutcome) {
		select {
		case done <- o:
		default:
		}
	}
	report := func(rc *actor.Context, f supervisor.Failure) {
		reason := "its supervisor crashed: " + f.Reason
		if cfg.Root != nil {
			rc.Send(cfg.Root, messages.ActorFailed{Place: cfg.Place, Actor: f.Actor, Role: messages.RoleSubagent,
				Reason: fmt.Sprintf("Sub-agent %s crashed: %s", cfg.Place.AgentName, reason)})
		}
		deliver(ChildOutcome{Finished: messages.RunFinished{Place: cfg.Place}, Kind: supervisor.FailPanic, Reason: reason})
	}
	// The engine refuses a name it already has, and then starts nothing
	// and hands back the holder's PID: made says whether this spawn made
	// the supervisor (the producer runs inside Spawn), and only then is
	// the PID this child's to wait on and stop.
	var made atomic.Bool
	name := cfg.Place.AgentID
	if s.Scope != "" {
		name = s.Scope + "/" + name
	}
	sup := s.Engine.Spawn(func() actor.Receiver {
		made.Store(true)
		return &childSupervisor{spec: spec, cfg: cfg, prompt: run.Prompt, history: run.History, trace: run.Trace, deliver: deliver}
	}, "subagent", actor.WithID(name), actor.WithMiddleware(supervisor.Recover(cfg.Place, report)),
		actor.WithInboxSize(childInbox))
	if !made.Load() {
		reason := fmt.Sprintf("it could not start: the actor name %s is already taken on this engine", sup.ID)
		return ChildOutcome{Finished: messages.RunFinished{Place: cfg.Place, Error: reason}, Kind: supervisor.FailRun, Reason: reason}
	}
	defer func() {
		cancel()
		select {
		case <-s.Engine.Poison(sup).Done():
		case <-time.After(2 * time.Second):
		}
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var kind supervisor.FailureKind
	var reason string
	select {
	case o := <-done:
		return o
	case <-timer.C:
		kind, reason = supervisor.FailTimeout, fmt.Sprintf("timed out after %s", timeout)
	case <-ctx.Done():
		kind, reason = supervisor.FailCancelled, "stopped: the run is stopping"
	}
	// Ask the child for what it has so far, briefly, then tear it down.
	s.Engine.Send(sup, stopChild{kind: kind, reason: reason})
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case o := <-done:
		o.Kind, o.Reason = kind, reason
		return o
	case <-grace.C:
		return ChildOutcome{Finished: messages.RunFinished{Place: cfg.Place}, Kind: kind, Reason: reason}
	}
}

// subagentResult is what the parent's model reads, plus the child's spend.
func subagentResult(name string, o ChildOutcome) tools.Result {
	f := o.Finished
	text := answerText(f)
	if o.Kind == "" && f.OK {
		return tools.Result{Success: true, Value: text}
	}
	var msg string
	switch o.Kind {
	case supervisor.FailPanic:
		msg = fmt.Sprintf("Sub-agent %s crashed (%s). Do the task yourself or delegate a narrower one.", name, o.Reason)
	case supervisor.FailTimeout:
		msg = fmt.Sprintf("Sub-agent %s %s.", name, o.Reason)
	case supervisor.FailCancelled:
		msg = fmt.Sprintf("Sub-agent %s was %s.", name, o.Reason)
	default:
		msg = fmt.Sprintf("Sub-agent %s failed: %s", name, f.Error)
	}
	r := tools.Result{Error: msg}
	// What the child wrote before it failed; the iteration-limit header
	// would be wrong here.
	if parts := nonEmpty(f.Texts); len(parts) > 0 {
		r.Value = strings.Join(parts, "\n\n")
	}
	return r
}

// subagentRunResult is how a child ended, for its span.
func subagentRunResult(o ChildOutcome) telemetry.RunResult {
	f := o.Finished
	r := telemetry.RunResult{Iterations: f.Iterations, Usage: f.Usage, CostUSD: f.CostUSD}
	switch {
	case o.Kind == "" && f.OK:
		r.Outcome = telemetry.OutcomeCompleted
	case o.Kind == supervisor.FailCancelled:
		r.Outcome, r.Err = telemetry.OutcomeCancelled, o.Reason
	case o.Kind == supervisor.FailTimeout:
		r.Outcome, r.Err = "timeout", o.Reason
	default:
		r.Outcome, r.Err = telemetry.OutcomeFailed, firstNonEmptyString(f.Error, o.Reason, "sub-agent failed")
	}
	return r
}

func firstNonEmptyString(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// answerText is the child's answer, else its partial texts, else the
// fixed no-content text (subagents.md §4).
func answerText(f messages.RunFinished) string {
	if strings.TrimSpace(f.Answer) != "" {
		return f.Answer
	}
	if len(f.Texts) > 0 {
		return PartialResultsHeader + "\n\n" + strings.Join(f.Texts, "\n\n")
	}
	return NoContentResult
}

func nonEmpty(texts []string) []string {
	out := make([]string, 0, len(texts))
	for _, t := range texts {
		if strings.TrimSpace(t) != "" {
			out = append(out, t)
		}
	}
	return out
}

// stopChild asks a child supervisor to stop its child and report.
type stopChild struct {
	kind   supervisor.FailureKind
	reason string
}

// childSupervisor runs one child agent and executes supervisor.Decide on
// its failures: restart it in place, or report. It hands exactly one
// outcome to the spawn call waiting on deliver.
type childSupervisor struct {
	spec     supervisor.Spec
	cfg      Config
	prompt   string
	history  []messages.ChatMessage
	trace    messages.Trace // the subagent span's context, for the child's run
	deliver  func(ChildOutcome)
	agent    *actor.PID
	restarts int
	stopping bool
	done     bool
}

// Receive starts the child, and takes its end or its failure.
func (s *childSupervisor) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		s.start(c)
	case messages.RunFinished:
		if s.done || !s.fromAgent(c) {
			return
		}
		if m.OK || s.stopping {
			s.finish(ChildOutcome{Finished: m})
			return
		}
		s.failed(c, supervisor.FailRun, m.Error, m)
	case messages.ActorFailed:
		if s.done {
			return
		}
		if m.Role == messages.RoleCall || m.Role == messages.RoleSubagent {
			// Escalated from below the child (it reports crashes to the
			// root, which is us for nobody); pass it on.
			s.escalate(c, m)
			return
		}
		if !s.fromAgent(c) {
			return
		}
		s.failed(c, supervisor.FailPanic, m.Reason, messages.RunFinished{Place: s.cfg.Place, Error: m.Reason})
	case stopChild:
		s.stopping = true
		if s.agent == nil {
			s.finish(ChildOutcome{Finished: messages.RunFinished{Place: s.cfg.Place}, Kind: m.kind, Reason: m.reason})
			return
		}
		c.Send(s.agent, messages.CancelRun{Place: s.cfg.Place, Reason: m.reason})
	}
}

func (s *childSupervisor) start(c *actor.Context) {
	producer := faults.Wrap[messages.RunRequested](New(s.cfg), s.cfg.Faults, s.cfg.Faults != nil && s.cfg.Faults.Subagent, "sub-agent")
	s.agent = c.SpawnChild(producer, "agent", actor.WithID(fmt.Sprintf("a%d", s.restarts)),
		actor.WithMiddleware(supervisor.Recover(s.cfg.Place, nil)), actor.WithInboxSize(childInbox))
	c.Send(s.agent, messages.RunRequested{Place: s.cfg.Place, Trace: s.trace.Clone(), Prompt: s.prompt, History: s.history})
}

// fromAgent drops messages from a child already replaced by a restart.
func (s *childSupervisor) fromAgent(c *actor.Context) bool {
	sender := c.Sender()
	return sender == nil || s.agent == nil || sender.ID == s.agent.ID
}

func (s *childSupervisor) failed(c *actor.Context, kind supervisor.FailureKind, reason string, fin messages.RunFinished) {
	switch supervisor.Decide(s.spec, supervisor.ChildFailure{Kind: kind, Restarts: s.restarts, Reason: reason}) {
	case supervisor.Restart:
		// The old child is left to this supervisor's own stop: poisoning
		// it here could race that stop (see Recover). Restarts are bounded.
		s.restarts++
		s.start(c)
	case supervisor.Escalate:
		s.escalate(c, messages.ActorFailed{Place: s.cfg.Place, Actor: c.PID().String(),
			Reason: fmt.Sprintf("Sub-agent %s crashed: %s", s.cfg.Place.AgentName, reason), Role: messages.RoleSubagent})
		s.finish(ChildOutcome{Finished: fin, Kind: kind, Reason: reason})
	default:
		s.finish(ChildOutcome{Finished: fin, Kind: kind, Reason: reason})
	}
}

// escalate passes a crash to the run's root, which fails the run.
func (s *childSupervisor) escalate(c *actor.Context, f messages.ActorFailed) {
	if s.cfg.Root != nil {
		c.Send(s.cfg.Root, f)
	}
}

func (s *childSupervisor) finish(o ChildOutcome) {
	s.done = true
	s.deliver(o)
}
