// Package toolactors runs tool calls. A call actor takes one call at a
// time: it parses and validates the arguments, runs the handler under the
// tool's timeout on a goroutine of its own, takes a propose half's
// approval request to the gate, runs the hidden twin only on the gate's
// approval, and sends exactly one ToolResultReady to whoever asked,
// whatever happened. Then it is idle, and the agent that spawned it may
// give it the next call: an agent keeps a few of them for its whole run
// rather than spawning an actor per call.
package toolactors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/deadline"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/telemetry"
	"github.com/jazz-run/jazz/tools"
)

// Deps is what a call actor is given at spawn.
type Deps struct {
	Registry *tools.Registry
	Env      *tools.Env
	// Gate receives ApprovalRequired and answers ApprovalDecided.
	Gate   *actor.PID
	Events *events.Emitter
	// Ctx is the run's lifetime; cancelling it cancels the handler.
	Ctx context.Context
	// Telemetry traces the call as `tool <name>` under the span
	// ToolCallRequested.Trace carries; nil traces nothing.
	Telemetry *telemetry.Telemetry
	// SettleGrace is how long an approved call whose time ran out (or
	// whose run was cancelled) waits for its handler's own report of
	// what it did; 0 means DefaultSettleGrace.
	SettleGrace time.Duration
	// Task is the calling sub-agent's brief, shown with its approvals,
	// and Persona the persona it runs as.
	Task    string
	Persona string
	// Deadline is the run's budget: a running handler marks itself busy
	// on it, so it counts even while a person is waited for elsewhere.
	Deadline *deadline.Deadline
}

// handlerDone carries a handler's result back into the actor. approved is
// set for the run that follows a gate approval, whose result is final;
// seq names the call it belongs to, so a late one never lands in the next.
type handlerDone struct {
	seq      uint64
	approved bool
	result   tools.Result
}

// Call is a call actor. Its fields other than deps and seq are the
// current call's, zeroed when the next one starts.
type Call struct {
	deps Deps
	// seq counts the calls this actor has taken.
	seq uint64
	// worker runs the handlers, on a goroutine kept from call to call.
	worker *supervisor.Worker
	// busy: a call is in progress (taken, its result not yet sent).
	busy    bool
	req     messages.ToolCallRequested
	tool    *tools.Tool
	args    json.RawMessage
	started time.Time
	done    bool
	exec    string
	// execArgs are what the gate is asked to approve and the twin runs.
	execArgs json.RawMessage
	// judgement is the gate's, from its approval (execute_command).
	judgement json.RawMessage
	parent    *actor.PID
	cancel    context.CancelFunc
	// env is this call's own copy of Deps.Env, in the request's Cwd.
	env *tools.Env
	// asking: the gate has the call and no decision came back yet.
	asking bool

	// spanCtx holds the call's span; the gate decision and the handler
	// (a subagent, for spawn_subagent) nest under it.
	spanCtx   context.Context
	span      telemetry.ToolSpan
	approval  string // telemetry.Approval*; not_required unless the gate was asked
	decidedBy string
}

// New is the Producer of a call actor.
func New(deps Deps) actor.Producer {
	return func() actor.Receiver { return &Call{deps: deps} }
}

// Receive handles the call's lifecycle messages.
func (c *Call) Receive(ctx *actor.Context) {
	switch m := ctx.Message().(type) {
	case messages.ToolCallRequested:
		c.take(ctx, m)
	case handlerDone:
		if c.busy && m.seq == c.seq {
			c.handled(ctx, m)
		}
	case messages.ApprovalDecided:
		c.decided(ctx, m)
	case messages.CancelRun:
		c.cancelled(ctx)
	case actor.Stopped:
		if c.cancel != nil {
			c.cancel()
		}
		if c.worker != nil {
			c.worker.Close()
		}
		if c.busy && !c.done {
			// Stopped with the run: end the span so it is exported.
			c.span.End(telemetry.ToolOutcome{Err: "stopped before the call finished", Approval: c.approval, DecidedBy: c.decidedBy})
		}
	}
}

// take starts a call. The result goes back to whoever asked (the agent).
// A request while a call is in progress is the sender's mistake: it is
// refused with a result of its own, and the running call goes on.
func (c *Call) take(ctx *actor.Context, m messages.ToolCallRequested) {
	to := ctx.Sender()
	if to == nil {
		to = ctx.Parent()
	}
	if c.busy {
		if to != nil {
			p := m.Place
			p.ToolCallID = m.Call.ID
			ctx.Send(to, messages.ToolResultReady{Place: p, Trace: m.Trace, Call: m.Call,
				Result: failed("Tool " + m.Call.Name + " could not start: its call actor was still running another call. This is a bug in jazz.")})
		}
		return
	}
	deps, seq, worker := c.deps, c.seq+1, c.worker
	*c = Call{} // zeroed in place: nothing of the last call is left
	c.deps, c.seq, c.worker, c.busy, c.parent, c.req, c.started = deps, seq, worker, true, to, m, time.Now()
	c.env = callEnv(c.deps.Env, m.Cwd)
	c.startSpan()
	c.begin(ctx)
}

// startSpan opens `tool <name>` under the iteration the request's carrier
// names, with the tool's risk tier when the name is a callable tool.
func (c *Call) startSpan() {
	c.approval = telemetry.ApprovalNotRequired
	if !c.deps.Telemetry.Enabled() {
		c.spanCtx = context.Background() // no span: nothing nests under it
		return
	}
	p := c.req.Place
	base := telemetry.WithIDs(telemetry.Extract(context.Background(), c.req.Trace),
		telemetry.IDs{RunID: p.RunID, AgentID: p.AgentID, AgentName: p.AgentName, ConversationID: c.conversationID()})
	tier, registered := "", false
	if t, ok := c.deps.Registry.Lookup(c.req.Call.Name); ok && !t.Hidden {
		tier, registered = t.Level, true
	}
	c.spanCtx, c.span = c.deps.Telemetry.StartTool(base, telemetry.ToolInfo{
		Name: c.req.Call.Name, Registered: registered, CallID: c.req.Call.ID, RiskTier: tier, Iteration: c.req.Iteration})
}

func (c *Call) conversationID() string {
	if c.deps.Env == nil {
		return ""
	}
	return c.deps.Env.ConversationID
}

// callEnv is the call's own Env: a copy, so no handler can touch what
// another call or the agent sees, in the directory the agent had when
// the batch started.
func callEnv(base *tools.Env, cwd string) *tools.Env {
	var env tools.Env
	if base != nil {
		env = *base
	}
	if cwd != "" {
		env.WorkDir = cwd
	}
	return &env
}

// cancelled is the run stopping: a running handler is cancelled and hands
// back what it has (the watcher reports it); a call waiting on the gate
// ends now, since the gate may be gone.
func (c *Call) cancelled(ctx *actor.Context) {
	if !c.busy || c.done {
		return
	}
	if c.cancel != nil {
		c.cancel()
		return
	}
	if c.asking {
		c.finish(ctx, declinedResult(cancelledNote), true)
	}
}

// cancelledNote is what the model would read of a call the run's stop
// took from the gate's queue.
const cancelledNote = "The run was cancelled before this call was approved."

func (c *Call) begin(ctx *actor.Context) {
	call := c.req.Call
	args, err := ParseArguments(call.Arguments)
	if err != nil {
		c.finish(ctx, failed(err.Error()), false)
		return
	}
	c.args = args
	t, ok := c.deps.Registry.Lookup(call.Name)
	if !ok || t.Hidden {
		// A hidden twin is unreachable by name: only the gate invokes it.
		c.finish(ctx, failed(fmt.Sprintf("Unknown tool: %s. Use one of the tools you were given.", call.Name)), false)
		return
	}
	c.tool = t
	if err := c.deps.Registry.Validate(t.Name, args); err != nil {
		c.finish(ctx, messages.ToolResult{Success: false, Result: json.RawMessage("null"), Error: err.Error()}, false)
		return
	}
	if t.Gated() && t.Twin == "" {
		// A single-phase low/high-risk tool gates before its handler runs.
		msg, err := t.ApprovalMessage(args)
		if err != nil {
			c.finish(ctx, failed(err.Error()), false)
			return
		}
		c.askGate(ctx, &messages.ApprovalRequest{
			Message:         msg,
			ExecuteToolName: t.Name,
			ExecuteArgs:     args,
		})
		return
	}
	if !t.Gated() {
		c.emitStart(t.Name, args)
	}
	c.run(ctx, t, args, false)
}

// run starts the handler on its own goroutine under the tool's timeout.
func (c *Call) run(ctx *actor.Context, t *tools.Tool, args json.RawMessage, approved bool) {
	base := c.deps.Ctx
	if base == nil {
		base = context.Background()
	}
	// The handler runs under the call's span (a subagent nests there); its
	// cancellation still comes from the run.
	base = telemetry.Within(base, c.spanCtx)
	var hctx context.Context
	var cancel context.CancelFunc
	timeout := t.EffectiveTimeout()
	if timeout > 0 {
		hctx, cancel = context.WithTimeout(base, timeout)
	} else {
		hctx, cancel = context.WithCancel(base)
	}
	c.cancel = cancel
	if approved {
		// The gate's judgement reaches the twin beside its arguments.
		hctx = tools.WithJudgement(hctx, c.judgement)
	}
	grace := c.deps.SettleGrace
	if grace <= 0 {
		grace = DefaultSettleGrace
	}
	// Busy until the handler returns (even past its timeout: it is still
	// running); a question it asks suspends the mark (deadline.Wait).
	hctx, busyDone := c.deps.Deadline.WithBusy(hctx)
	// One value holds what the handler's goroutine and the watcher share:
	// its methods replace four closures (two allocations fewer per call).
	h := &handlerRun{
		hctx: hctx, busyDone: busyDone, handler: t.Handler, env: c.env, args: args,
		self: ctx.PID(), engine: ctx.Engine(), name: t.Name,
		timeout: timeout, grace: grace, seq: c.seq, approved: approved,
		// The result comes back from the handler's own goroutine, unless the
		// call's context ends first: then the watcher (started only then, by
		// AfterFunc) reports the stop, waiting as long as the case needs for
		// what the handler still says, which reaches it through out. Exactly
		// one of the two sends handlerDone: whoever wins stopWatch.
		out: make(chan tools.Result, 1),
	}
	// Every field is set before AfterFunc can start watch; stopWatch is
	// set before the handler's goroutine, its only reader, starts.
	h.stopWatch = context.AfterFunc(hctx, h.watch)
	if c.worker == nil {
		c.worker = supervisor.NewWorker()
	}
	c.worker.Run(h)
}

// handlerRun is one handler call's state, shared by its goroutine (Run,
// Panicked, report) and the watcher (watch).
type handlerRun struct {
	hctx      context.Context
	busyDone  func()
	handler   tools.Handler
	env       *tools.Env
	args      json.RawMessage
	self      *actor.PID
	engine    *actor.Engine
	name      string
	timeout   time.Duration
	grace     time.Duration
	seq       uint64
	approved  bool
	out       chan tools.Result
	stopWatch func() bool
}

// watch runs once the call's context ends before the handler reported.
func (h *handlerRun) watch() {
	var r tools.Result
	stopping := errors.Is(h.hctx.Err(), context.Canceled)
	if stopping {
		r = tools.Result{Error: "Tool call cancelled: the run is stopping."}
	} else {
		r = tools.Result{Error: fmt.Sprintf("Operation timed out after '%dm'", int(math.Round(float64(h.timeout.Milliseconds())/60000)))}
	}
	switch {
	case h.approved:
		r = settle(r, h.out, h.grace)
	case stopping:
		// Wait, briefly, for the handler to end: what it still
		// reports (a subagent's subagent_complete, its span) then
		// comes before the run's end.
		awaitHandler(h.out, h.grace)
	}
	h.engine.Send(h.self, handlerDone{seq: h.seq, approved: h.approved, result: r})
}

// Run is the handler's goroutine.
func (h *handlerRun) Run() {
	h.report(h.call())
}

func (h *handlerRun) call() tools.Result {
	defer h.busyDone()
	return h.handler(h.hctx, h.env, h.args)
}

// Panicked reports a handler that panicked as a failed call.
func (h *handlerRun) Panicked(reason string) {
	h.report(tools.Result{Error: fmt.Sprintf("Tool %s failed unexpectedly: %s", h.name, reason)})
}

func (h *handlerRun) report(r tools.Result) {
	// A handler that returns because its context ended can get here
	// before the context has started the watcher; the watcher must
	// still have the call, or the timeout is never said.
	if h.hctx.Err() == nil && h.stopWatch() {
		h.engine.Send(h.self, handlerDone{seq: h.seq, approved: h.approved, result: r})
		return
	}
	h.out <- r // the watcher has the call
}

// awaitHandler waits for the handler's result, at most grace.
func awaitHandler(out <-chan tools.Result, grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-out:
	case <-t.C:
	}
}

// DefaultSettleGrace bounds how long a timed-out approved call waits for
// its handler to say what it did.
const DefaultSettleGrace = 5 * time.Second

// settle is the result of an approved call whose context ended. The
// change it was approved for may be half done, or done: the bare timeout
// would tell the model it failed while the change happened. Twins stop at
// their next look at the context and say what they did, so their report
// is waited for, briefly; a handler that finished anyway is reported as
// finished. Past the grace the outcome is unknown, and the message says so.
func settle(stop tools.Result, out <-chan tools.Result, grace time.Duration) tools.Result {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case got := <-out:
		if got.Success || got.Approval != nil {
			return got
		}
		got.Error = stop.Error + ". " + got.Error
		return got
	case <-t.C:
		stop.Error += fmt.Sprintf(". The approved operation had not stopped %s later and may still complete: check its effect before trying again.", grace)
		return stop
	}
}

func (c *Call) handled(ctx *actor.Context, m handlerDone) {
	if c.cancel != nil {
		c.cancel()
		c.cancel = nil
	}
	r := m.result
	if !m.approved && r.Approval != nil {
		// Only a registered pair may ask, and only for its own twin, with
		// arguments that pass the twin's schema.
		if c.tool.Twin == "" || r.Approval.ExecuteToolName != c.tool.Twin {
			c.finish(ctx, failed(fmt.Sprintf("Tool %s asked to run %q, which is not its approved twin; refused.", c.tool.Name, r.Approval.ExecuteToolName)), false)
			return
		}
		if err := c.deps.Registry.Validate(c.tool.Twin, r.Approval.ExecuteArgs); err != nil {
			c.finish(ctx, failed("invalid approval request: "+err.Error()), false)
			return
		}
		c.askGate(ctx, r.Approval)
		return
	}
	c.finish(ctx, toMessage(r), false)
}

func (c *Call) askGate(ctx *actor.Context, a *messages.ApprovalRequest) {
	if c.deps.Gate == nil {
		c.finish(ctx, declinedResult("No approval gate is running, so this call cannot be approved."), true)
		return
	}
	c.execArgs = a.ExecuteArgs
	c.asking = true
	c.approval = "" // asked: decided() says how it went
	// What people and event streams are shown; ExecuteArgs, what runs,
	// stays exactly as proposed.
	message, preview := a.Message, a.PreviewDiff
	if sec := c.secrets(); sec != nil {
		message, preview = sec.Redact(message), sec.Redact(preview)
	}
	req := messages.ApprovalRequired{
		Place: c.req.Place,
		// The call's own span: the gate decision, and an approver in
		// another process, join the trace under it.
		Trace:           c.traceCarrier(),
		ToolCallID:      c.req.Call.ID,
		ToolName:        c.tool.Name,
		RiskLevel:       c.tool.Level,
		Message:         message,
		PreviewDiff:     preview,
		ExecuteToolName: a.ExecuteToolName,
		ExecuteArgs:     a.ExecuteArgs,
		Arguments:       c.args,
		Task:            c.deps.Task,
		Persona:         c.deps.Persona,
		NotAutomatic:    a.NotAutomatic,
		HumanOnly:       a.HumanOnly,
	}
	req.Place.ToolCallID = c.req.Call.ID
	if c.tool.Name == "execute_command" {
		var ca struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(a.ExecuteArgs, &ca)
		req.Command = ca.Command
	}
	ctx.Send(c.deps.Gate, req)
}

func (c *Call) decided(ctx *actor.Context, d messages.ApprovalDecided) {
	if c.done || !c.asking || d.ToolCallID != c.req.Call.ID {
		return
	}
	c.asking = false
	c.decidedBy = d.DecidedBy
	c.approval = telemetry.ApprovalDenied
	if d.Approved {
		c.approval = telemetry.ApprovalApproved
	}
	if !d.Approved {
		msg := d.Note
		if msg == "" {
			msg = "The user declined this operation. Acknowledge it and offer an alternative, or explain what you could not do."
		}
		c.finish(ctx, declinedResult(msg), true)
		return
	}
	// The twin runs with exactly the arguments that were previewed and
	// approved, kept here since the request; the decision carries none.
	target := c.tool
	if c.tool.Twin != "" {
		t, ok := c.deps.Registry.Lookup(c.tool.Twin)
		if !ok {
			c.finish(ctx, failed("approved, but the execute step "+c.tool.Twin+" is not available to this agent"), false)
			return
		}
		target = t
	}
	c.exec = target.Name
	c.judgement = d.Judgement
	c.emitStart(c.tool.Name, c.execArgs)
	c.run(ctx, target, c.execArgs, true)
}

// emitStart and emitComplete build their event only when someone can
// hear it: kept out of the hot path's frames, which a fresh goroutine
// would grow its stack for.
func (c *Call) emitStart(name string, args json.RawMessage) {
	if c.deps.Events.Active() {
		c.emitStartEvent(name, args)
	}
}

//go:noinline
func (c *Call) emitStartEvent(name string, args json.RawMessage) {
	c.deps.Events.Emit(messages.Event{
		Type:      messages.EventToolExecutionStart,
		Place:     c.place(),
		Trace:     c.req.Trace,
		ToolName:  name,
		Arguments: args,
	})
}

func (c *Call) place() messages.Place {
	p := c.req.Place
	p.ToolCallID = c.req.Call.ID
	return p
}

//go:noinline
func (c *Call) emitComplete(r *messages.ToolResult, dur int64) {
	resText := string(r.Result)
	c.deps.Events.Emit(messages.Event{
		Type:       messages.EventToolExecutionComplete,
		Place:      c.place(),
		Trace:      c.req.Trace,
		Result:     &resText,
		DurationMs: &dur,
		Success:    messages.Ptr(r.Success),
		ErrorText:  r.Error,
	})
}

// finish sends the one result of this call; the actor is then idle.
func (c *Call) finish(ctx *actor.Context, r messages.ToolResult, declined bool) {
	if c.done {
		return
	}
	c.done = true
	r = c.redact(r)
	dur := time.Since(c.started).Milliseconds()
	if c.deps.Events.Active() {
		c.emitComplete(&r, dur)
	}
	c.span.End(telemetry.ToolOutcome{Success: r.Success, Truncated: r.Truncated, Approval: c.approval,
		DecidedBy: c.decidedBy, Executed: c.exec, Err: r.Error, DurationMs: dur})
	if c.parent != nil {
		ctx.Send(c.parent, messages.ToolResultReady{
			Place:      c.place(),
			Trace:      c.req.Trace,
			Call:       c.req.Call,
			Result:     r,
			DurationMs: dur,
			Executed:   c.exec,
			Declined:   declined,
			DecidedBy:  c.decidedBy,
		})
	}
	c.busy = false
}

// secrets are the run's own secrets, nil when the Env knows none.
func (c *Call) secrets() *secrets.Set {
	if c.deps.Env == nil {
		return nil
	}
	return c.deps.Env.Secrets
}

// redact replaces the run's own secret values in a result before it
// reaches the model, the events or the call's span: whatever a tool read
// (a key copied into some file), it never carries one out.
func (c *Call) redact(r messages.ToolResult) messages.ToolResult {
	sec := c.secrets()
	if sec == nil {
		return r
	}
	r.Result = sec.RedactJSON(r.Result)
	r.Error = sec.Redact(r.Error)
	return r
}

// traceCarrier is the call span's trace context, or the request's when
// the span is not recorded (export off, but a caller's traceparent given).
func (c *Call) traceCarrier() messages.Trace {
	if t := telemetry.Inject(c.spanCtx); t != nil {
		return t
	}
	return c.req.Trace.Clone()
}

// ParseArguments reads a call's raw argument string: invalid JSON, or an
// object with a key repeated (tools.RepeatedKey), is a retryable error;
// valid JSON that is not an object counts as {}. It only
// checks the grammar (no value is built): the schema check decodes the
// arguments, and the handler once more.
func ParseArguments(raw string) (json.RawMessage, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	b := []byte(s)
	if !json.Valid(b) {
		var v any
		err := json.Unmarshal(b, &v) // the error says where
		if err == nil {
			err = errors.New("not valid JSON")
		}
		return nil, fmt.Errorf("Invalid JSON in tool arguments: %v. Send the arguments again as one valid JSON object.", err)
	}
	if b[0] != '{' {
		return json.RawMessage("{}"), nil
	}
	// Every reader of the arguments (the schema check, the approval
	// prompt, the handler, a custom tool's or MCP server's program) must
	// read one action from them: a key given twice, or twice up to case,
	// reads as the first value to some and the last to others.
	if k, ok := tools.RepeatedKey(b); ok {
		return nil, fmt.Errorf("Ambiguous tool arguments: the key %q appears twice in one object (keys must differ by more than case), "+
			"so the call could be read as two different ones. Send the arguments again with each key once.", k)
	}
	return b, nil
}

func failed(msg string) messages.ToolResult {
	return messages.ToolResult{Success: false, Result: json.RawMessage("null"), Error: msg}
}

func declinedResult(msg string) messages.ToolResult {
	body, _ := json.Marshal(map[string]any{"rejected": true, "message": msg})
	return messages.ToolResult{Success: false, Result: body, Error: "User rejected the operation"}
}

func toMessage(r tools.Result) messages.ToolResult {
	var body json.RawMessage
	if r.Value == nil {
		body = json.RawMessage("null")
	} else if raw, ok := r.Value.(json.RawMessage); ok {
		body = raw
	} else {
		b, err := encodeValue(r.Value)
		if err != nil {
			return failed("tool result could not be encoded: " + err.Error())
		}
		body = b
	}
	return messages.ToolResult{Success: r.Success, Result: body, Error: r.Error, Truncated: r.Truncated, Chdir: r.Chdir}
}

// encodeValue marshals a handler's value. The value is the tool's, so a
// MarshalJSON that panics is the tool's failure, not a crash of the call
// actor (encoding/json re-panics anything that is not its own error).
func encodeValue(v any) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	if a, ok := v.(tools.JSONAppender); ok {
		// Most results are a few hundred bytes: grown from nothing, one
		// took six allocations.
		return a.AppendJSON(make([]byte, 0, 256)), nil
	}
	return json.Marshal(v)
}
