package workerpool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/ledger"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/workstore"
)

// job is one attempt of one task on this worker.
type job struct {
	w *Worker
	// msg is the delivery the job answers for; a redelivery to this
	// worker while the job runs replaces it (after a reconnect the
	// server lets a worker answer only what it delivered since).
	msg     atomic.Pointer[bus.Delivery]
	task    messages.WorkTask
	seal    bus.Seal
	attempt int
	token   string
	gate    *actor.PID
	ledger  *ledger.Ledger

	// events counts what relay published, for WorkResult.Events.
	events atomic.Int64
	// over is set when the agent has ended: a cancel record written
	// after that (the runner's "finished" among them) stops nothing.
	over atomic.Bool

	ctx    context.Context
	cancel context.CancelCauseFunc
	// reason is the cancel record's, for the result.
	mu     sync.Mutex
	reason string
	kind   supervisor.FailureKind
}

// errCancelled is a job stopped by its task's cancel record.
var errCancelled = errors.New("cancelled by its runner")

// runJob runs one delivered task to its end and settles its message:
// acknowledged with a result, handed back (the worker stops), or
// terminated (a task that may not run).
func (w *Worker) runJob(msg *bus.Delivery) {
	task, err := messages.Decode[messages.WorkTask](msg.Data())
	attempt, merr := msg.Attempt()
	if err != nil || merr != nil || task.TaskID == "" || task.Key == "" || task.Pool != w.o.Pool {
		w.logf("dropped a task that does not decode, has no key or is not this pool's: %v", errors.Join(err, merr))
		_ = msg.Term("malformed task")
		return
	}
	stamp(task.TaskID, "delivered")
	j := &job{w: w, task: task, attempt: attempt, token: messages.SubjectToken(task.TaskID), seal: sealer(task.Key)}
	j.msg.Store(msg)
	j.ctx, j.cancel = context.WithCancelCause(context.Background())
	defer j.cancel(nil)
	w.mu.Lock()
	if held := w.jobs[j.token]; held != nil {
		// The same task delivered twice at once: the earlier attempt is
		// still here and holds it, now through this delivery (its lease
		// lapsed, as after a reconnect, when the server no longer lets
		// this worker answer the first one).
		w.mu.Unlock()
		if held.task.Key == task.Key {
			held.msg.Store(msg)
		}
		_ = msg.InProgress()
		return
	}
	w.jobs[j.token] = j
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.jobs, j.token)
		w.mu.Unlock()
	}()
	if w.ctx.Err() != nil {
		_ = msg.Nak()
		return
	}
	if !task.Expires.IsZero() && time.Now().After(task.Expires) {
		_ = msg.Term("expired")
		return
	}
	// Registered before the record is read: a cancel written meanwhile
	// is seen by the watcher.
	rctx, done := context.WithTimeout(j.ctx, 10*time.Second)
	var gated *messages.WorkGated
	if j.attempt == 1 {
		// A first delivery starts at once, and its record (a task the
		// runner gave up on while it was queued) is read beside it: the
		// read is a round trip the child would otherwise wait for. What
		// the agent can do meanwhile is no harm: a gated action waits for
		// the runner, who has stopped answering.
		go func() {
			defer done()
			if c, ok := w.readCancel(rctx, task); ok && j.cancelIf(c) {
				w.logf("task %s (%s) was cancelled before it started: %s", task.TaskID, task.Place.AgentName, c.Reason)
			}
		}()
	} else {
		// A redelivery reads first: it may not run at all.
		c, cancelled := w.readCancel(rctx, task)
		if !cancelled {
			gated = w.readGated(rctx, task)
		}
		done()
		if cancelled && (c.Below == 0 || j.attempt < c.Below) {
			_ = msg.Term("cancelled")
			return
		}
	}
	if gated != nil || j.attempt > MaxAttempts {
		reason := fmt.Sprintf("its worker was lost after the gated action %s had started (attempt %d), so it is not run again: a gated action never runs twice", gatedTool(gated), j.attempt-1)
		if gated == nil {
			reason = fmt.Sprintf("its task was delivered %d times; the most is %d", j.attempt, MaxAttempts)
		}
		j.publishResult(messages.WorkResult{TaskID: task.TaskID, Attempt: j.attempt, NotRetried: true,
			Kind: string(supervisor.FailRun), Reason: reason, Finished: messages.RunFinished{Place: task.Place, Error: reason}})
		_ = msg.Term("not retried")
		w.done.Add(1)
		return
	}
	// Usage alone: the runner prices it.
	j.ledger = ledger.New(task.Place, func(messages.Usage) (float64, bool) { return 0, true })
	j.claim()
	stamp(task.TaskID, "claimed")
	stopBeat := j.heartbeat()
	res := j.run()
	j.over.Store(true)
	stopBeat()
	// The task's gate goes after its result: the runner need not wait
	// for the teardown.
	defer j.stopGate()
	if errors.Is(context.Cause(j.ctx), ErrStopping) {
		// Another worker takes it (or refuses it, if a gated action had
		// started); its runner hears from that one.
		_ = j.msg.Load().Nak()
		return
	}
	stamp(task.TaskID, "result")
	j.publishResult(res)
	stamp(task.TaskID, "stored")
	w.logf("task %s (%s, attempt %d) %s", task.TaskID, task.Place.AgentName, j.attempt, outcome(res))
	actx, adone := context.WithTimeout(context.Background(), 5*time.Second)
	_ = j.msg.Load().Ack(actx)
	adone()
	w.done.Add(1)
}

// outcome is how a task's attempt ended, for the worker's log.
func outcome(r messages.WorkResult) string {
	if r.Kind == "" && r.Finished.OK {
		return fmt.Sprintf("finished (%d iterations)", r.Finished.Iterations)
	}
	kind, why := r.Kind, firstNonEmpty(r.Reason, r.Finished.Error)
	if kind == "" {
		kind = string(supervisor.FailRun)
	}
	switch supervisor.FailureKind(kind) {
	case supervisor.FailCancelled:
		return "cancelled: " + why
	case supervisor.FailTimeout:
		return "timed out: " + why
	case supervisor.FailPanic:
		return "crashed: " + why
	}
	return "failed: " + why
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return "(no reason given)"
}

func gatedTool(g *messages.WorkGated) string {
	if g == nil {
		return ""
	}
	return g.Tool
}

// readCancel reads the task's cancel record; one its runner did not
// seal stops nothing.
func (w *Worker) readCancel(ctx context.Context, task messages.WorkTask) (messages.WorkCancel, bool) {
	e, err := w.h.Bucket.Get(ctx, workstore.CancelKey(task.TaskID))
	if err != nil {
		return messages.WorkCancel{}, false
	}
	c, err := messages.Decode[messages.WorkCancel](e.Value)
	if err != nil || c.TaskID != task.TaskID || !cancelSealed(task.Key, c) {
		w.logf("task %s: ignored a cancel record its runner did not seal", task.TaskID)
		return messages.WorkCancel{}, false
	}
	return c, true
}

// readGated fails closed: a record that cannot be read because the
// bucket is unreachable counts as started. A record the task's runner
// did not seal (anyone may have written it, or deleted the real one)
// does not count: the runner, which sealed the real one before it
// approved the action, refuses a retry itself.
func (w *Worker) readGated(ctx context.Context, task messages.WorkTask) *messages.WorkGated {
	e, err := w.h.Bucket.Get(ctx, workstore.GatedKey(task.TaskID))
	if errors.Is(err, bus.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return &messages.WorkGated{TaskID: task.TaskID, Tool: "(unknown: the record could not be read: " + err.Error() + ")"}
	}
	g, err := messages.Decode[messages.WorkGated](e.Value)
	if err != nil || g.TaskID != task.TaskID || !gatedSealed(task.Key, g) {
		w.logf("task %s: ignored a gated-action record its runner did not seal", task.TaskID)
		return nil
	}
	return &g
}

// cancelIf stops the job when the record covers its attempt, and says
// whether it did.
func (j *job) cancelIf(c messages.WorkCancel) bool {
	if j.over.Load() || (c.Below != 0 && j.attempt >= c.Below) {
		return false
	}
	j.mu.Lock()
	if j.reason == "" {
		j.reason, j.kind = c.Reason, supervisor.FailureKind(c.Kind)
	}
	j.mu.Unlock()
	j.cancel(errCancelled)
	return true
}

func (j *job) stop(cause error) { j.cancel(cause) }

func (j *job) subject(kind string) string {
	return messages.WorkerSubject(j.task.Pool, j.w.o.Key, j.task.Place.RunID, j.task.TaskID, kind)
}

// claim tells the runner who runs this attempt. It goes through the
// stream (durable) and is not waited for: what follows names the attempt
// too, and the runner takes the first it hears of.
func (j *job) claim() {
	_ = j.w.h.JS.PublishAsyncSealed(j.subject(messages.WorkKindClaim), messages.WorkClaimed{TaskID: j.task.TaskID, Worker: j.w.o.Key, Name: j.w.o.Name,
		Attempt: j.attempt, LeaseMs: j.w.o.Lease.Milliseconds(), Version: j.w.o.Version}, j.task.Trace, fmt.Sprintf("%s.%d.claim", j.task.TaskID, j.attempt), j.seal)
}

// heartbeat keeps the lease (InProgress) and tells the runner the job is
// alive and what it spent, four times a lease.
func (j *job) heartbeat() (stop func()) {
	every := max(j.w.o.Lease/4, 50*time.Millisecond)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			_ = j.msg.Load().InProgress()
			tot := j.ledger.Totals()
			_ = j.w.o.Conn.PublishSealed(j.subject(messages.WorkKindBeat), messages.WorkBeat{TaskID: j.task.TaskID, Attempt: j.attempt, Usage: tot.Usage,
				UsageUnknown: !tot.CostKnown}, j.task.Trace, j.seal)
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// run builds the agent from the worker's runtime and runs it as a local
// child: the same supervisor, limits and teardown.
func (j *job) run() messages.WorkResult {
	t := j.task
	res := messages.WorkResult{TaskID: t.TaskID, Attempt: j.attempt}
	cfg, err := j.w.o.Runtime.Agent(j.ctx, t)
	stamp(t.TaskID, "built")
	if err != nil {
		reason := "the worker cannot run it: " + err.Error()
		res.Kind, res.Reason = string(supervisor.FailRun), reason
		res.Finished = messages.RunFinished{Place: t.Place, Error: reason}
		j.cancelledAs(&res)
		return res
	}
	gate := &workerGate{j: j, pending: map[int]pendingCall{}}
	j.gate = j.w.engine.Spawn(func() actor.Receiver { return gate }, "task-gate", actor.WithID(j.token+"-"+fmt.Sprint(j.attempt)),
		actor.WithInboxSize(16))
	cfg.Place = t.Place
	cfg.Gate = j.gate
	cfg.Root = nil
	// What goes back to the runner (events, the result) carries none of
	// the worker's own secrets: its provider key, echoed by a provider's
	// error or repeated by the model, is not the runner's to see.
	var sec *secrets.Set
	if cfg.Env != nil {
		sec = cfg.Env.Secrets
	}
	cfg.Events = events.NewEmitter(relay{j}, t.Place.RunID).WithRedactor(sec.Redactor())
	cfg.Ledger = j.ledger
	cfg.Task = t.Task
	cfg.Deadline = nil // the runner's clock bounds the run
	// The worker's engine runs every task's agents at once, and agent ids
	// are unique within one run's tree only: two runs that start a child
	// in the same millisecond send the same id. The task's attempt
	// (unique on this worker while it runs) scopes its actors' names.
	scope := fmt.Sprintf("%s.%d", j.token, j.attempt)
	if cfg.Env != nil {
		env := *cfg.Env
		cfg.Env = &env
		sub := &actors.Subagents{Engine: j.w.engine, MaxDepth: t.MaxDepth, MaxIterations: t.SubagentIterations,
			Timeout: time.Duration(t.SubagentTimeoutMs) * time.Millisecond, Seq: new(atomic.Int64), Live: new(atomic.Int64), IDPrefix: t.Place.AgentID,
			Scope: scope}
		sub.Parent = cfg
		env.Subagents = sub
	}
	timeout := time.Duration(t.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = workstore.MaxAge
	}
	local := &actors.Subagents{Engine: j.w.engine, Scope: scope}
	stamp(t.TaskID, "start")
	o := local.RunLocal(j.ctx, actors.ChildRun{Config: cfg, Engine: j.w.engine, Prompt: t.Prompt, History: t.History,
		Trace: t.Trace, Timeout: timeout, MaxDepth: t.MaxDepth, SubagentIterations: t.SubagentIterations})
	stamp(t.TaskID, "ended")
	f := o.Finished
	if t.Kind != messages.TaskRun {
		f.Transcript = nil
	}
	f.ToolCalls, f.Declined = nil, nil
	if clean, ok := secrets.RedactValue(sec, f); ok {
		f = clean
	} else {
		f = messages.RunFinished{Place: f.Place, Error: secrets.Placeholder}
	}
	res.Finished, res.Kind, res.Reason = f, string(o.Kind), sec.Redact(o.Reason)
	j.cancelledAs(&res)
	tot := j.ledger.Totals()
	res.Usage, res.UsageUnknown, res.Calls, res.Declined = tot.Usage, !tot.CostKnown, tot.ToolCalls, tot.Declined
	res.Events = int(j.events.Load())
	return res
}

// stopGate stops the task's gate actor, if it has one.
func (j *job) stopGate() {
	if j.gate == nil {
		return
	}
	select {
	case <-j.w.engine.Poison(j.gate).Done():
	case <-time.After(2 * time.Second):
	}
}

// cancelledAs gives a job stopped by its cancel record the record's
// reason and kind.
func (j *job) cancelledAs(res *messages.WorkResult) {
	if !errors.Is(context.Cause(j.ctx), errCancelled) {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.reason != "" {
		res.Reason = j.reason
	}
	if j.kind == supervisor.FailTimeout || j.kind == supervisor.FailCancelled {
		res.Kind = string(j.kind)
	}
}

// publishResult stores the result in the stream, once (its message id),
// retrying for a while through a reconnect. A result larger than the bus
// takes (a long answer, a transcript that carries a large write) is sent
// as tooLargeResult instead: retried as it is it would never go, and the
// runner would only see the worker go silent.
func (j *job) publishResult(r messages.WorkResult) {
	id := fmt.Sprintf("%s.%d.result", r.TaskID, r.Attempt)
	ctx, done := context.WithTimeout(context.Background(), 30*time.Second)
	defer done()
	for shrunk := false; ; {
		err := j.w.h.JS.PublishSealed(ctx, j.subject(messages.WorkKindResult), r, j.task.Trace, id, j.seal)
		var tooLarge *bus.TooLargeError
		if errors.As(err, &tooLarge) && !shrunk {
			r, shrunk = tooLargeResult(r, tooLarge), true
			continue
		}
		if err == nil {
			return
		} else if ctx.Err() != nil {
			j.w.logf("task %s: result not delivered: %v", r.TaskID, err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// tooLargeResult is r failed because it is larger than the bus takes
// (e): what the runner needs to account for it (attempt, usage, how many
// events it sent) is kept; the answer, texts, transcript and call lists,
// which made it too large, are not sent, and the parent is told why.
func tooLargeResult(r messages.WorkResult, e *bus.TooLargeError) messages.WorkResult {
	reason := fmt.Sprintf("its result was %d bytes, more than the bus takes (at most %d), so it could not be sent back; "+
		"ask for a shorter answer, or for the result to be written to a file", e.Size, e.Limit)
	return messages.WorkResult{TaskID: r.TaskID, Attempt: r.Attempt, Kind: string(supervisor.FailRun), Reason: reason,
		Finished: messages.RunFinished{Place: r.Finished.Place, Error: reason, Iterations: r.Finished.Iterations},
		Usage:    r.Usage, UsageUnknown: r.UsageUnknown, Events: r.Events}
}

// relay puts the task's events on the worker's subject for its runner.
type relay struct{ j *job }

func (r relay) Publish(_ string, msg any, trace messages.Trace) error {
	ev, ok := msg.(messages.Event)
	if !ok {
		return nil
	}
	raw, err := messages.Encode(ev)
	if err != nil {
		return err
	}
	// The relay is called from the run's actors one event at a time in
	// the order they happen; the sequence keeps that order countable.
	seq := int(r.j.events.Add(1))
	// The trace rides in the headers too, as on every other publish.
	return r.j.w.o.Conn.PublishSealed(r.j.subject(messages.WorkKindEvent),
		messages.WorkEvent{TaskID: r.j.task.TaskID, Attempt: r.j.attempt, Event: raw, Trace: trace, Seq: seq}, trace, r.j.seal)
}

// workDecided brings a runner's decision into the task's gate actor.
type workDecided struct{ d messages.WorkDecision }

// reask is the gate actor's timer: ask again what is still undecided.
type reask struct{}

// unsendable is a request the bus refused as larger than it takes
// (bus.ErrTooLarge): the runner never hears of it, so it is declined
// here rather than asked again and waited for until the task times out.
type unsendable struct {
	seq int
	err *bus.TooLargeError
}

type pendingCall struct {
	sender *actor.PID
	req    messages.ApprovalRequired
	// action is req's digest (actionOf): an approval runs the call only
	// when it names it.
	action string
	sent   time.Time
}

// workerGate stands in for the gate in this task's agents: every gated
// call goes to the runner's root gate, whose sealed decision it hands
// back.
type workerGate struct {
	j       *job
	seq     int
	pending map[int]pendingCall
	timer   *time.Timer
}

// Receive forwards requests and hands back decisions.
func (g *workerGate) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		g.arm(c)
	case messages.ApprovalRequired:
		g.seq++
		g.pending[g.seq] = pendingCall{sender: c.Sender(), req: m, action: actionOf(m), sent: time.Now()}
		wa := messages.WorkApproval{TaskID: g.j.task.TaskID, Attempt: g.j.attempt, Seq: g.seq, Required: m}
		engine, self := c.Engine(), c.PID()
		go func() {
			var tooLarge *bus.TooLargeError
			if err := g.j.ask(wa, true); errors.As(err, &tooLarge) {
				engine.Send(self, unsendable{seq: wa.Seq, err: tooLarge})
			}
		}()
	case workDecided:
		p, ok := g.pending[m.d.Seq]
		if !ok || m.d.Decision.ToolCallID != p.req.ToolCallID {
			return
		}
		// An approval comes after the runner has recorded, durably and
		// sealed, that the task started a gated action: a redelivery of
		// it never runs.
		d := m.d.Decision
		d.Place, d.ToolCallID = p.req.Place, p.req.ToolCallID
		if d.Approved && (p.action == "" || m.d.Action != p.action) {
			// The runner approved another call under this number (another
			// tool or other arguments): this one was never decided, and it
			// is not asked again, since the number is spent.
			d = messages.ApprovalDecided{Place: p.req.Place, Trace: p.req.Trace, ToolCallID: p.req.ToolCallID, ToolName: p.req.ToolName,
				DecidedBy: messages.DecidedByNobody, Note: "The run's approval named another call than this one (its tool or arguments differ), so this call did not run."}
			g.j.w.logf("task %s: the approval of request %d named another call than %s's; the call was declined", g.j.task.TaskID, m.d.Seq, p.req.ToolName)
		}
		delete(g.pending, m.d.Seq)
		c.Send(p.sender, d)
	case unsendable:
		p, ok := g.pending[m.seq]
		if !ok {
			return
		}
		delete(g.pending, m.seq)
		c.Send(p.sender, messages.ApprovalDecided{Place: p.req.Place, Trace: p.req.Trace, ToolCallID: p.req.ToolCallID, ToolName: p.req.ToolName,
			DecidedBy: messages.DecidedByNobody, Note: messages.TooLargeToApprove(m.err.Size, m.err.Limit)})
	case reask:
		for seq, p := range g.pending {
			if time.Since(p.sent) >= reaskEvery {
				go func() {
					_ = g.j.ask(messages.WorkApproval{TaskID: g.j.task.TaskID, Attempt: g.j.attempt, Seq: seq, Required: p.req}, false)
				}()
			}
		}
		g.arm(c)
	case actor.Stopped:
		if g.timer != nil {
			g.timer.Stop()
		}
	}
}

// reaskEvery is how often an undecided request is asked again (a
// decision is a core message, lost if this worker was cut off).
const reaskEvery = 2 * time.Second

func (g *workerGate) arm(c *actor.Context) {
	engine, self := c.Engine(), c.PID()
	g.timer = time.AfterFunc(reaskEvery, func() { engine.Send(self, reask{}) })
}

// ask sends a request to the runner: durably the first time, as a core
// re-ask after. Its error matters only when it is bus.ErrTooLarge: any
// other failure is retried by the re-ask.
func (j *job) ask(wa messages.WorkApproval, first bool) error {
	trace := wa.Required.Trace
	if !first {
		return j.w.o.Conn.PublishSealed(j.subject(messages.WorkKindAsk), wa, trace, j.seal)
	}
	ctx, done := context.WithTimeout(j.ctx, 10*time.Second)
	defer done()
	return j.w.h.JS.PublishSealed(ctx, j.subject(messages.WorkKindApproval), wa, trace, fmt.Sprintf("%s.%d.approval.%d", wa.TaskID, wa.Attempt, wa.Seq), j.seal)
}
