// Package actors holds the agent actor: one bounded loop of asking the
// model, running the tool calls it asked for (each in its own call actor,
// at most ten at once), feeding the results back, until a final answer or
// the iteration cap. Subagents are the same actor one level down.
package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/deadline"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/internal/faults"
	"github.com/jazz-run/jazz/ledger"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/telemetry"
	"github.com/jazz-run/jazz/toolactors"
	"github.com/jazz-run/jazz/tools"
)

// MaxConcurrentCalls is how many tool calls of one iteration run at once
// unless Config.MaxConcurrentCalls says otherwise.
const MaxConcurrentCalls = 10

// ModelCaller makes one model call, retries included.
type ModelCaller func(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error)

// Pricer turns usage into dollars; known is false without pricing.
type Pricer func(u messages.Usage) (cost float64, known bool)

// Config is everything an agent actor is started with.
type Config struct {
	Place           messages.Place
	Provider        string
	Model           string
	SystemPrompt    string
	Call            ModelCaller
	Registry        *tools.Registry
	Env             *tools.Env
	Gate            *actor.PID
	Events          *events.Emitter
	MaxIterations   int
	Stream          bool
	ReasoningEffort string
	Temperature     *float64
	Price           Pricer
	// Deadline is the run's budget (--timeout): model calls and tool
	// handlers mark themselves busy on it; nil counts nothing.
	Deadline *deadline.Deadline
	// Task is the brief a sub-agent was spawned with (empty at the top):
	// every approval it asks for says it, with its name and depth.
	Task string
	// Persona is the persona a sub-agent was spawned as (empty at the
	// top): its approvals say it, beside its model-chosen name.
	Persona string
	// Ledger is this agent's node of the run tree's account (usage, calls,
	// declines); nil makes the agent the root of its own, priced by Price.
	Ledger *ledger.Ledger
	// MaxConcurrentCalls caps the calls of one iteration running at once
	// (subagents included); 0 means the default, MaxConcurrentCalls.
	MaxConcurrentCalls int
	// Warn prints a notice on the run's diagnostics stream.
	Warn func(msg string)
	// CallPrice prices one model call for its span and the cost metric,
	// off the actor's goroutine (a panic in it costs the span its price,
	// nothing else); nil leaves per-call cost out.
	CallPrice Pricer
	// Telemetry traces iterations, model requests and tool calls under the
	// span RunRequested.Trace carries; nil traces nothing.
	Telemetry *telemetry.Telemetry
	// Root is the run's root actor, told of every crash below this agent
	// (a call actor, a subagent) so the whole run fails; nil sends them to
	// the agent's parent.
	Root *actor.PID
	// Ctx is the run's lifetime; the agent derives its own from it.
	Ctx context.Context
	// Faults injects crashes (call actors, subagents) for the fault
	// tests; nil in real runs.
	Faults *faults.Plan
	// Context manages the history's size (context.go); nil lets it grow
	// until the provider refuses it.
	Context *ContextConfig
}

// modelDone brings a model call's outcome back into the actor.
type modelDone struct {
	iteration int
	resp      provider.Response
	err       error
	// refused says why the response's usage was not counted.
	refused error
	// partial is the text streamed before a call that failed (an
	// interrupted run keeps it as its answer).
	partial string
}

// Agent is the agent actor.
type Agent struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	parent *actor.PID

	history   []messages.ChatMessage
	iteration int
	texts     []string
	// ledger is where the agent records what it spends and calls, as it
	// happens (cfg.Ledger, or a root of its own).
	ledger *ledger.Ledger
	// warnedUsage: the notice about refused usage is given once.
	warnedUsage bool

	// cwd is the agent's working directory: each call gets it in its
	// request, and a `cd` moves it once its batch is done.
	cwd string

	// tool phase of the current iteration
	batch    []messages.ToolCall
	results  map[string]messages.ToolResultReady
	nextCall int
	running  map[string]*callWorker // call id → the call actor running it

	// workers are the agent's call actors, idle or running a call: its
	// children, spawned as a batch needs them (at most the concurrency
	// cap) and kept for the run, so a call costs a message, not an
	// actor. One that crashed is dropped from here (and left, a
	// tombstone, until the agent stops).
	workers []*callWorker
	// spawned counts the call actors ever spawned, naming each.
	spawned  int
	window   []string
	meltdown bool // store MeltdownMessage after this batch's results
	finished bool
	trace    messages.Trace

	// modelBusy: a model call is in flight (its modelDone is awaited).
	modelBusy bool
	// stopping is why the run is being stopped (CancelRun, a crash):
	// nothing new starts, and the agent finishes, failed, once its model
	// call and its running calls have handed back what they have.
	stopping string
	partial  string

	// spanCtx carries the run's (or subagent's) span and ids; iterCtx and
	// iterSpan are the current iteration's, under it.
	spanCtx  context.Context
	iterCtx  context.Context
	iterSpan telemetry.Span

	// cx is the context window's state, nil without context management.
	cx *window
}

// callWorker is one of the agent's call actors.
type callWorker struct {
	pid *actor.PID
	// name is pid.String(), as a crash report names its actor.
	name string
	// call is the id of the call it runs; empty while idle.
	call string
}

// New is the Producer of an agent actor.
func New(cfg Config) actor.Producer {
	return func() actor.Receiver { return &Agent{cfg: cfg} }
}

// Receive drives the loop.
func (a *Agent) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		base := a.cfg.Ctx
		if base == nil {
			base = context.Background()
		}
		a.ctx, a.cancel = context.WithCancel(base)
		a.ledger = a.cfg.Ledger
		if a.ledger == nil {
			a.ledger = ledger.New(a.cfg.Place, ledger.Pricer(a.cfg.Price))
		}
		if a.cfg.Env != nil {
			a.cwd = a.cfg.Env.WorkDir
		}
		a.startWindow(c)
	case messages.RunRequested:
		a.parent = c.Sender()
		if a.parent == nil {
			a.parent = c.Parent()
		}
		// The request may come from outside (a remote task): only its
		// trace context, bounded, rides on the run's messages.
		a.trace = telemetry.Clean(m.Trace)
		a.spanCtx = telemetry.WithIDs(telemetry.Extract(a.ctx, m.Trace), telemetry.IDs{
			RunID: a.cfg.Place.RunID, AgentID: a.cfg.Place.AgentID, AgentName: a.cfg.Place.AgentName, ConversationID: a.conversationID()})
		if a.cfg.SystemPrompt != "" {
			a.history = append(a.history, messages.ChatMessage{Role: messages.RoleSystem, Content: a.cfg.SystemPrompt})
		}
		a.history = append(a.history, m.History...)
		a.history = append(a.history, messages.ChatMessage{Role: messages.RoleUser, Content: m.Prompt})
		a.startTurn(c)
	case modelDone:
		a.modelDone(c, m)
	case compactDone:
		a.compactDone(c, m)
	case compactApplied:
		a.compactApplied(m)
	case messages.ToolResultReady:
		a.toolDone(c, m)
	case messages.ActorFailed:
		a.childFailed(c, m)
	case messages.CancelRun:
		a.stop(c, m.Reason)
	case actor.Stopped:
		if a.cancel != nil {
			a.cancel()
		}
		// Stopped before it finished: end the open span so it is exported.
		a.iterSpan.End("stopped before the iteration finished")
		a.iterSpan = telemetry.Span{}
	}
}

func (a *Agent) startTurn(c *actor.Context) {
	if a.finished || a.stopping != "" {
		return
	}
	max := a.cfg.MaxIterations
	if max < 1 {
		max = 1
	}
	if a.iteration >= max {
		a.warn(fmt.Sprintf("iteration limit reached (%d)", max))
		a.finish(c, messages.RunFinished{OK: true, StopReason: messages.StopMaxIterations})
		return
	}
	a.iteration++
	a.iterSpan.End("")
	a.iterCtx, a.iterSpan = a.cfg.Telemetry.StartIteration(a.spanCtx, a.iteration)
	if a.beforeRequest(c) {
		return // compacting: compactDone sends the request
	}
	a.request(c)
}

// request sends this iteration's model call.
func (a *Agent) request(c *actor.Context) {
	a.trim() // never send a request over the window
	max := max(a.cfg.MaxIterations, 1)
	specs := make([]messages.ToolSpec, 0)
	if a.cfg.Registry != nil {
		for _, t := range a.cfg.Registry.Visible() {
			specs = append(specs, t.Spec())
		}
	}
	msgs := a.history
	pressure := Pressure(a.iteration, max)
	if cp := a.contextPressure(specs); cp != "" {
		pressure = strings.TrimSuffix(cp+"\n"+pressure, "\n") // one message, the context line first
	}
	if pressure != "" {
		// Ephemeral: sent with this one request, never stored.
		msgs = append(append([]messages.ChatMessage(nil), a.history...), messages.ChatMessage{Role: messages.RoleUser, Content: pressure})
	}
	a.measured(msgs)
	req := provider.Request{
		Model:           a.cfg.Model,
		Messages:        msgs,
		Tools:           specs,
		Stream:          a.cfg.Stream,
		ReasoningEffort: a.cfg.ReasoningEffort,
		Temperature:     a.cfg.Temperature,
	}
	engine, self, iter := c.Engine(), c.PID(), a.iteration
	ctx := a.iterCtx
	call := a.cfg.Call
	em := a.cfg.Events
	place := a.cfg.Place
	prov := a.cfg.Provider
	trace := a.trace
	tel, price := a.cfg.Telemetry, a.cfg.CallPrice
	led, dl := a.ledger, a.cfg.Deadline
	a.modelBusy = true
	supervisor.Go(func() {
		defer dl.Busy()() // the model call counts against --timeout, waits or not
		// The chat span's ctx reaches the caller, so retries nest under it.
		cctx, chat := tel.StartChat(ctx, telemetry.ChatInfo{System: prov, Model: req.Model, Iteration: iter})
		resp, partial, err := callModel(cctx, call, req, em, place, prov, trace)
		chat.End(chatResult(resp, err, price))
		var refused error
		if err == nil {
			// Recorded here, not in the actor: spend counts even when the
			// run is being stopped and this answer is never read.
			refused = led.RecordUsage(resp.Usage, resp.UsageReported)
		}
		engine.Send(self, modelDone{iteration: iter, resp: resp, err: err, refused: refused, partial: partial})
	}, func(reason string) {
		engine.Send(self, modelDone{iteration: iter, err: fmt.Errorf("model call crashed: %s", reason)})
	})
}

// chatResult is a model call's outcome for its span.
func chatResult(resp provider.Response, err error, price Pricer) telemetry.ChatResult {
	if err != nil {
		return telemetry.ChatResult{Err: err.Error()}
	}
	r := telemetry.ChatResult{ResponseModel: resp.Model, Usage: resp.Usage}
	if price != nil {
		func() {
			defer func() { _ = recover() }() // telemetry never fails a run
			r.CostUSD, _ = price(resp.Usage)
		}()
	}
	return r
}

// conversationID is the agent's conversation, when its env names one.
func (a *Agent) conversationID() string {
	if a.cfg.Env == nil {
		return ""
	}
	return a.cfg.Env.ConversationID
}

// callModel runs one model call and emits its stream events. When the call
// fails, partial is the text streamed before it did.
func callModel(ctx context.Context, call ModelCaller, req provider.Request, em *events.Emitter, place messages.Place, prov string, trace messages.Trace) (resp provider.Response, partial string, err error) {
	start := time.Now()
	em.Emit(messages.Event{Type: messages.EventStreamStart, Place: place, Trace: trace, Provider: prov, Model: req.Model, Timestamp: start.UnixMilli()})
	var text, reasoning strings.Builder
	textSeq, thinkSeq := 0, 0
	var firstToken time.Duration
	onDelta := func(d provider.Delta) {
		if firstToken == 0 {
			firstToken = time.Since(start)
		}
		if d.Reasoning != "" {
			if thinkSeq == 0 {
				em.Emit(messages.Event{Type: messages.EventThinkingStart, Place: place, Trace: trace, Provider: prov})
			}
			reasoning.WriteString(d.Reasoning)
			em.Emit(messages.Event{Type: messages.EventThinkingChunk, Place: place, Trace: trace, Content: d.Reasoning, Sequence: messages.Ptr(thinkSeq)})
			thinkSeq++
		}
		if d.Text != "" {
			if textSeq == 0 {
				em.Emit(messages.Event{Type: messages.EventTextStart, Place: place, Trace: trace})
			}
			text.WriteString(d.Text)
			em.Emit(messages.Event{Type: messages.EventTextChunk, Place: place, Trace: trace, Delta: d.Text, Accumulated: text.String(), Sequence: messages.Ptr(textSeq)})
			textSeq++
		}
	}
	var cb func(provider.Delta)
	if req.Stream {
		cb = onDelta
	}
	resp, err = call(ctx, req, cb)
	if err != nil {
		return resp, text.String(), err
	}
	if thinkSeq > 0 {
		em.Emit(messages.Event{Type: messages.EventThinkingComplete, Place: place, Trace: trace})
	}
	u := resp.Usage
	em.Emit(messages.Event{Type: messages.EventUsageUpdate, Place: place, Trace: trace, Usage: &u})
	total := time.Since(start).Milliseconds()
	body := &messages.EventResponse{ID: resp.ID, Model: resp.Model, Content: resp.Message.Content, Reasoning: resp.Message.Reasoning, Usage: &u}
	if body.Model == "" {
		body.Model = req.Model
	}
	for _, tc := range resp.Message.ToolCalls {
		body.ToolCalls = append(body.ToolCalls, messages.EventToolCallBody{ID: tc.ID, Type: "function", Function: messages.EventFunctionBody{Name: tc.Name, Arguments: tc.Arguments}})
	}
	metrics := &messages.EventMetrics{FirstTokenLatencyMs: firstToken.Milliseconds(), TotalTokens: u.TotalTokens}
	if secs := time.Since(start).Seconds(); secs > 0 && u.CompletionTokens > 0 {
		metrics.TokensPerSecond = float64(u.CompletionTokens) / secs
	}
	em.Emit(messages.Event{Type: messages.EventComplete, Place: place, Trace: trace, Response: body, TotalDurationMs: &total, Metrics: metrics})
	return resp, "", nil
}

func (a *Agent) modelDone(c *actor.Context, m modelDone) {
	if a.finished || m.iteration != a.iteration {
		return
	}
	a.modelBusy = false
	if a.stopping != "" {
		// Interrupted: what was streamed so far is the partial answer.
		if m.err != nil {
			a.partial = m.partial
		} else {
			a.partial = m.resp.Message.Content
		}
		a.stopped(c)
		return
	}
	if m.err != nil {
		if a.ctx.Err() != nil {
			return // cancelled from above: the run's stop reports it
		}
		// The run's one recoverable:false error event is sent where the
		// run's outcome is known (app), whatever made it fail.
		a.fail(c, m.err.Error())
		return
	}
	resp := m.resp
	a.calibrate(m)
	if m.refused != nil && !a.warnedUsage && a.priced() {
		a.warnedUsage = true
		a.warn(fmt.Sprintf("%v; the run's cost is unknown", m.refused))
	}
	msg := resp.Message
	msg.Role = messages.RoleAssistant
	msg.ToolCalls = UniqueCallIDs(msg.ToolCalls) // before anything is matched by id
	a.history = append(a.history, msg)
	a.trim() // rung 4, once the answer is in
	if strings.TrimSpace(msg.Content) != "" {
		a.texts = append(a.texts, msg.Content)
	}
	if len(msg.ToolCalls) == 0 {
		answer := msg.Content // untrimmed: " " stays " " (headless-run.md §3)
		if strings.TrimSpace(answer) == "" && strings.TrimSpace(msg.Reasoning) != "" {
			answer = msg.Reasoning
		}
		if strings.TrimSpace(answer) == "" {
			a.warn("model returned an empty response")
		}
		a.succeed(c, answer)
		return
	}
	a.toolPhase(c, msg.ToolCalls)
}

func (a *Agent) toolPhase(c *actor.Context, calls []messages.ToolCall) {
	a.ledger.RecordCalls(calls)
	for _, tc := range calls {
		a.window = append(a.window, tc.Name+":"+tc.Arguments)
	}
	if len(a.window) > meltdownWindow {
		a.window = a.window[len(a.window)-meltdownWindow:]
	}
	// Detected before the batch runs, but stored after its results: a
	// user message between tool_calls and their results is a history
	// OpenAI-compatible APIs reject.
	a.meltdown = Meltdown(a.window)
	if a.meltdown {
		a.window = nil
	}
	if a.cfg.Events.Active() {
		a.emitBatch(calls)
	}
	a.batch = calls
	a.batchStarted()
	a.results = make(map[string]messages.ToolResultReady, len(calls))
	a.running = map[string]*callWorker{}
	a.nextCall = 0
	a.dispatch(c)
}

// emitBatch says what the model asked for: tools_detected opens the
// batch, then one tool_call per call as the model emitted it
// (headless-run.md §10 ordering). Only called when someone can hear it.
func (a *Agent) emitBatch(calls []messages.ToolCall) {
	names := make([]string, 0, len(calls))
	var gated []string
	for _, tc := range calls {
		names = append(names, tc.Name)
		if t, ok := a.cfg.Registry.Lookup(tc.Name); ok && !t.Hidden && t.Gated() {
			gated = append(gated, tc.Name)
		}
	}
	a.cfg.Events.Emit(messages.Event{Type: messages.EventToolsDetected, Place: a.cfg.Place, Trace: a.trace,
		ToolNames: names, ToolsRequiringAppr: nonNil(gated)})
	for i, tc := range calls {
		a.cfg.Events.Emit(messages.Event{Type: messages.EventToolCall, Place: a.cfg.Place, Trace: a.trace, Sequence: messages.Ptr(i),
			ToolCall: &messages.EventToolCallBody{ID: tc.ID, Type: "function", Function: messages.EventFunctionBody{Name: tc.Name, Arguments: tc.Arguments}}})
	}
}

// dispatch hands calls to call actors until the cap is reached or none is
// left.
func (a *Agent) dispatch(c *actor.Context) {
	limit := a.cfg.MaxConcurrentCalls
	if limit <= 0 {
		limit = MaxConcurrentCalls
	}
	for a.stopping == "" && len(a.running) < limit && a.nextCall < len(a.batch) {
		tc := a.batch[a.nextCall]
		a.nextCall++
		place := a.cfg.Place
		place.ToolCallID = tc.ID
		w := a.idleWorker(c)
		w.call = tc.ID
		a.running[tc.ID] = w
		// The iteration's trace context, so the call's span nests under it;
		// the agent's directory now, which a cd in this batch changes only
		// for the next one.
		c.Send(w.pid, messages.ToolCallRequested{Place: place, Trace: telemetry.Inject(a.iterCtx), Iteration: a.iteration, Call: tc, Cwd: a.cwd})
	}
}

// idleWorker is a call actor with no call: an idle one, or a new child.
// Every call of the agent's run is given the same Deps, so any idle actor
// will do. Children never stop themselves, so the agent's own stop (the
// root's teardown) stops them and waits for them; a crashed one is left
// as it is until then: poisoning a child its parent may poison again at
// the same moment hangs hollywood's stop.
func (a *Agent) idleWorker(c *actor.Context) *callWorker {
	for _, w := range a.workers {
		if w.call == "" {
			return w
		}
	}
	deps := toolactors.Deps{Registry: a.cfg.Registry, Env: a.cfg.Env, Gate: a.cfg.Gate, Events: a.cfg.Events, Ctx: a.ctx, Telemetry: a.cfg.Telemetry,
		Task: a.cfg.Task, Persona: a.cfg.Persona, Deadline: a.cfg.Deadline}
	self, place := c.PID(), a.cfg.Place
	report := func(rc *actor.Context, f supervisor.Failure) {
		// The agent knows which call the actor ran (childFailed).
		rc.Send(self, messages.ActorFailed{Place: place, Actor: f.Actor, Reason: f.Reason, Role: messages.RoleCall})
	}
	producer := faults.Wrap[messages.ToolCallRequested](toolactors.New(deps), a.cfg.Faults, a.cfg.Faults != nil && a.cfg.Faults.Call, "tool call actor")
	a.spawned++
	pid := c.SpawnChild(producer, "call", actor.WithID(strconv.Itoa(a.spawned)),
		actor.WithMiddleware(supervisor.Recover(place, report)), actor.WithInboxSize(16))
	w := &callWorker{pid: pid, name: pid.String()}
	a.workers = append(a.workers, w)
	return w
}

func (a *Agent) toolDone(c *actor.Context, m messages.ToolResultReady) {
	if a.finished || a.results == nil {
		return
	}
	if _, dup := a.results[m.Call.ID]; dup {
		return
	}
	a.results[m.Call.ID] = m
	if m.Declined {
		a.ledger.RecordDeclined(m.Call)
	}
	if m.DecidedBy != "" {
		a.ledger.MarkDecided(m.Call.ID, m.DecidedBy)
	}
	if w := a.running[m.Call.ID]; w != nil {
		w.call = ""
		delete(a.running, m.Call.ID)
	}
	if a.stopping != "" {
		a.stopped(c)
		return
	}
	if len(a.results) < len(a.batch) {
		a.dispatch(c)
		return
	}
	a.endToolPhase(c)
}

// childFailed handles a call actor's crash as CallSpec says: a crash is a
// bug in jazz, so it is escalated to the run's root, which fails the run,
// and this agent stops. The crashed actor (a tombstone now) is stopped
// here, by the one who spawned it.
func (a *Agent) childFailed(c *actor.Context, m messages.ActorFailed) {
	callID := m.Place.ToolCallID
	for i, w := range a.workers {
		if w.name == m.Actor {
			// Never given a call again; it stops with the agent.
			a.workers = append(a.workers[:i:i], a.workers[i+1:]...)
			callID = w.call
			break
		}
	}
	if callID == "" || a.results == nil {
		return
	}
	m.Place.ToolCallID = callID
	var call *messages.ToolCall
	for i := range a.batch {
		if a.batch[i].ID == callID {
			call = &a.batch[i]
		}
	}
	if call == nil {
		return
	}
	if supervisor.Decide(supervisor.CallSpec(), supervisor.ChildFailure{Kind: supervisor.FailPanic, Reason: m.Reason}) != supervisor.Escalate {
		a.toolDone(c, messages.ToolResultReady{Place: m.Place, Call: *call, Result: messages.ToolResult{
			Result: json.RawMessage("null"), Error: "Tool " + call.Name + " failed unexpectedly: " + m.Reason}})
		return
	}
	reason := fmt.Sprintf("The %s tool call (%s) crashed: %s", call.Name, call.ID, m.Reason)
	a.escalate(c, messages.ActorFailed{Place: m.Place, Actor: m.Actor, Reason: reason, Role: messages.RoleCall})
	delete(a.running, callID)
	a.stop(c, reason)
}

// escalate passes a crash below this agent to the run's root.
func (a *Agent) escalate(c *actor.Context, f messages.ActorFailed) {
	to := a.cfg.Root
	if to == nil {
		to = a.parent
	}
	if to != nil {
		c.Send(to, f)
	}
}

// stop ends the run early (CancelRun, a crash): the model call and the
// running handlers are cancelled, calls waiting on the gate are told, and
// the agent finishes once they have all answered, keeping what was
// streamed so far as its partial answer.
func (a *Agent) stop(c *actor.Context, reason string) {
	if a.finished || a.stopping != "" {
		return
	}
	if reason == "" {
		reason = "The run was stopped."
	}
	a.stopping = reason
	if a.cancel != nil {
		a.cancel()
	}
	for _, w := range a.running {
		c.Send(w.pid, messages.CancelRun{Place: a.cfg.Place, Reason: reason})
	}
	a.stopped(c)
}

// stopped finishes a stopping agent once nothing it waits for is left.
func (a *Agent) stopped(c *actor.Context) {
	if a.finished || a.modelBusy || len(a.running) > 0 {
		return
	}
	if strings.TrimSpace(a.partial) != "" {
		a.texts = append(a.texts, a.partial)
	}
	// The partial answer: everything the model wrote so far, the text
	// streamed before the stop included (agent-loop.md §2.6).
	a.finish(c, messages.RunFinished{OK: false, Error: a.stopping, Answer: strings.Join(nonEmpty(a.texts), "\n\n")})
}

func (a *Agent) endToolPhase(c *actor.Context) {
	missing := 0
	// One growth for the batch: appended one by one, a hundred results
	// copied the history seven times over.
	a.history = slices.Grow(a.history, len(a.batch)+1)
	for _, tc := range a.batch {
		r, ok := a.results[tc.ID]
		if !ok {
			missing++
			continue
		}
		a.history = append(a.history, messages.ChatMessage{Role: messages.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: FormatResult(r.Result)})
		// A cd moves the agent from the next batch on; the last one in
		// call order wins.
		if r.Result.Success && r.Result.Chdir != "" {
			a.cwd = r.Result.Chdir
		}
	}
	if a.meltdown {
		a.history = append(a.history, messages.ChatMessage{Role: messages.RoleUser, Content: MeltdownMessage, Kind: messages.KindMeltdown})
		a.meltdown = false
	}
	a.batch, a.results, a.running = nil, nil, nil
	if missing > 0 {
		a.fail(c, fmt.Sprintf("Missing tool results for %d tool call(s). This indicates a bug in tool execution.", missing))
		return
	}
	a.startTurn(c)
}

func (a *Agent) succeed(c *actor.Context, answer string) {
	a.finish(c, messages.RunFinished{OK: true, Answer: answer})
}

func (a *Agent) fail(c *actor.Context, reason string) {
	a.finish(c, messages.RunFinished{OK: false, Error: reason})
}

func (a *Agent) finish(c *actor.Context, f messages.RunFinished) {
	if a.finished {
		return
	}
	a.finished = true
	a.iterSpan.End(f.Error)
	a.iterSpan = telemetry.Span{}
	if a.cancel != nil && !f.OK {
		a.cancel()
	}
	f.Place = a.cfg.Place
	f.Trace = a.trace
	f.Transcript = a.history
	f.Texts = a.texts
	f.Iterations = a.iteration
	// The subtree's account: own usage and calls, and every child's, as
	// recorded when they happened.
	t := a.ledger.Totals()
	f.Usage, f.CostUSD, f.CostKnown = t.Usage, t.CostUSD, t.CostKnown
	f.ToolCalls, f.Declined = t.ToolCalls, t.Declined
	if a.parent != nil {
		c.Send(a.parent, f)
	}
}

// priced says whether the model has a price, so refused usage changes
// what the envelope can tell (an unpriced model's cost is unknown anyway).
func (a *Agent) priced() bool {
	if a.cfg.Price == nil {
		return false
	}
	_, known := a.cfg.Price(messages.Usage{})
	return known
}

func (a *Agent) warn(msg string) {
	if a.cfg.Warn != nil {
		a.cfg.Warn(msg)
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
