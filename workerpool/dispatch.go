package workerpool

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/escalation"
	"github.com/jazz-run/jazz/ledger"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/shellguard"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/workstore"
)

// Defaults shared by runners and workers.
const (
	// DefaultLease is how long a task stays with a worker that stopped
	// heartbeating before JetStream hands it to another (AckWait), in a
	// pool whose lease is not configured (the bus server sets it).
	DefaultLease = workstore.DefaultLease
	// MaxAttempts is how many workers may take a task (MaxDeliver): the
	// first, and one retry when it was lost before any gated action.
	MaxAttempts = workstore.MaxAttempts
	// stopGrace is how long a stopped remote agent may take to send what
	// it has (its partial texts and spend).
	stopGrace = time.Second
)

// DispatcherOptions configure the runner side of one run.
type DispatcherOptions struct {
	// Conn reaches the bus as a runner.
	Conn *bus.Bus
	Pool string
	// RunID is the root run's id: every task's subjects carry it.
	RunID string
	// Lease is the worker lease assumed until a worker states its own;
	// 0 means DefaultLease.
	Lease time.Duration
	// Warn prints a notice on the run's diagnostics.
	Warn func(msg string)
	// StepCeiling bounds each model step of the run's agents, retries
	// included; every task carries it, so a remote agent's steps are
	// bounded as a local one's. 0 leaves it to the worker.
	StepCeiling time.Duration
	// MaxTaskEvents and MaxTaskEventBytes bound what one task's workers
	// may send to the run's stream, over all its attempts (every event
	// the run keeps, shows and writes to its NDJSON stream); past either
	// the child fails. 0 means DefaultMaxTaskEvents, DefaultMaxTaskEventBytes.
	MaxTaskEvents     int
	MaxTaskEventBytes int
}

// The bounds of one task's events. A child's stream is its text and
// thinking in chunks, its calls and their results: a long child of a
// chatty model sends some ten thousand events and a few megabytes; a
// worker that sends twenty times that is flooding the run.
const (
	DefaultMaxTaskEvents     = 200_000
	DefaultMaxTaskEventBytes = 64 << 20
)

// Dispatcher sends the agents of one run to a pool and waits for them. It
// implements actors.ChildRunner.
type Dispatcher struct {
	o       DispatcherOptions
	js      *bus.JetStream
	kv      cancelRecords
	subs    []*bus.Subscription
	consume *bus.Following

	mu    sync.Mutex
	tasks map[string]*remote
}

// cancelRecords is where the runner writes its tasks' cancel records
// (the pool's bucket).
type cancelRecords interface {
	Put(ctx context.Context, key string, value []byte) (uint64, error)
}

// NewDispatcher binds the pool's assets and starts hearing the run's
// workers. Close it when the run ends.
func NewDispatcher(ctx context.Context, o DispatcherOptions) (*Dispatcher, error) {
	if o.Conn == nil || o.Pool == "" || o.RunID == "" {
		return nil, errors.New("worker pool: a connection, a pool and a run id are required")
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	h, err := workstore.Open(ctx, o.Conn)
	if err != nil {
		return nil, fmt.Errorf("worker pool %s: %w", o.Pool, err)
	}
	d := &Dispatcher{o: o, js: h.JS, kv: h.Bucket, tasks: map[string]*remote{}}
	ok := false
	defer func() {
		if !ok {
			d.Close()
		}
	}()
	// Everything the run's workers send, as the server routes it: the
	// heartbeats, events and re-asks (core messages: losing one costs
	// nothing a later one does not bring), and the claims, approval
	// requests and results too, which the stream also keeps. Heard here
	// they cost the run no wait for the stream's replicas (a result came
	// a millisecond later through the stream); the stream's copy, read
	// below, is what survives a reconnect, and every handler takes a
	// message it already has as a repeat.
	sub, err := bus.SubscribeRaw(ctx, o.Conn, messages.WorkRunWildcard(o.Pool, o.RunID), d.route, bus.Unbounded())
	if err != nil {
		return nil, fmt.Errorf("worker pool %s: %w", o.Pool, err)
	}
	d.subs = append(d.subs, sub)
	// Claims, approval requests and results are kept by the stream, and
	// an ordered consumer resumes where it was after a reconnect. It
	// starts at a fixed time, not at "new": one reset before its first
	// message (a missed heartbeat on a busy machine) re-reads "new" as of
	// the reset and would skip what the run's workers sent meanwhile.
	// Nothing of this run is older (its subjects carry the run id); the
	// hour allows for a server clock behind this one.
	since := time.Now().Add(-time.Hour)
	cc, err := h.JS.Follow(ctx, workstore.OutStream, []string{messages.WorkRunWildcard(o.Pool, o.RunID)}, since,
		d.route)
	if err != nil {
		return nil, fmt.Errorf("worker pool %s: %w", o.Pool, err)
	}
	d.consume = cc
	if err := o.Conn.Flush(ctx); err != nil {
		return nil, fmt.Errorf("worker pool %s: %w", o.Pool, err)
	}
	ok = true
	return d, nil
}

// Close stops hearing the workers; tasks still waiting end as cancelled.
func (d *Dispatcher) Close() {
	for _, s := range d.subs {
		s.Stop()
	}
	d.subs = nil
	if d.consume != nil {
		d.consume.Stop()
		d.consume = nil
	}
}

// inbound is one report about a task, or the gate's answer to one.
type inbound struct {
	worker  string
	kind    string
	subject string
	data    []byte
	header  bus.Header
	decided *gateAnswer
}

// gateAnswer is the root gate's decision on a forwarded request; action
// is the request's digest (actionOf), which binds the decision to it.
type gateAnswer struct {
	attempt, seq int
	worker       string
	action       string
	d            messages.ApprovalDecided
}

// route hands a worker's message to the task it speaks of. The worker
// named in the subject is who sent it when the task's seal holds (the
// server lets each worker publish only under its own key, and only a
// worker the task was delivered to holds its key).
func (d *Dispatcher) route(m bus.Raw) {
	tok := strings.Split(m.Subject, ".")
	// jazz.work.<pool>.w.<worker>.<run>.<task>.<kind>
	if len(tok) != 8 || tok[3] != "w" || tok[5] != messages.SubjectToken(d.o.RunID) {
		return
	}
	d.mu.Lock()
	t := d.tasks[tok[6]]
	d.mu.Unlock()
	if t == nil {
		return
	}
	t.deliver(inbound{worker: tok[4], kind: tok[7], subject: m.Subject, data: m.Value, header: m.Header})
}

// NewTaskID is a fresh, unguessable task id.
func NewTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}

// RunChild sends one spawn_subagent child to the pool and waits for it,
// its time limit or ctx, like a local child.
func (d *Dispatcher) RunChild(ctx context.Context, c actors.ChildRun) actors.ChildOutcome {
	return d.Run(ctx, messages.TaskSubagent, c)
}

// Run sends one agent (kind TaskSubagent or TaskRun) to the pool and
// waits for it. c.Timeout 0 leaves it to ctx alone.
func (d *Dispatcher) Run(ctx context.Context, kind string, c actors.ChildRun) actors.ChildOutcome {
	cfg := c.Config
	key := NewTaskKey()
	t := &remote{
		d: d, id: NewTaskID(), key: key, seal: sealer(key), kind: kind, cfg: cfg, engine: c.Engine,
		in: make(chan inbound, 64), done: make(chan struct{}),
		lease: d.o.Lease, decisions: map[[2]int]messages.WorkDecision{}, asked: map[[2]int]bool{}, atGate: map[[2]int]string{},
	}
	task, err := t.task(c)
	if err != nil {
		return actors.ChildOutcome{Finished: messages.RunFinished{Place: cfg.Place, Error: err.Error()}, Kind: supervisor.FailRun,
			Reason: err.Error()}
	}
	d.mu.Lock()
	d.tasks[messages.SubjectToken(t.id)] = t
	d.mu.Unlock()
	defer func() {
		close(t.done)
		d.mu.Lock()
		delete(d.tasks, messages.SubjectToken(t.id))
		d.mu.Unlock()
	}()
	return t.run(ctx, task, c.Timeout)
}

// remote is one task as its runner follows it. Only run's goroutine
// touches its fields (deliver only sends on in).
type remote struct {
	d  *Dispatcher
	id string
	// key is the task's secret (WorkTask.Key), seal its sealer.
	key    string
	seal   bus.Seal
	kind   string
	cfg    actors.Config
	engine *actor.Engine
	in     chan inbound
	done   chan struct{}

	// worker and attempt are the current claim; lease its worker's.
	worker   string
	attempt  int
	lease    time.Duration
	lastBeat time.Time
	// lostAt is when the current attempt's worker was given up on.
	lostAt time.Time
	// spent is the most the current attempt is known to have spent: the
	// highest of its reports that passed spend; spentUnknown says one of
	// them did not (or said a response had no usage), so the cost is a
	// lower bound.
	spent        messages.Usage
	spentUnknown bool
	// gated names the tool of the first gated action the root gate
	// approved for this task: from then on it is never run again.
	gated     string
	decisions map[[2]int]messages.WorkDecision
	asked     map[[2]int]bool
	// atGate are the requests the root gate has now, by tool name.
	atGate   map[[2]int]string
	busyDone func()
	// forged says a message about the task that its key did not seal
	// was heard (and ignored); the run is warned once.
	forged bool
	// heard counts the current attempt's events; a result that says more
	// were sent waits in ending until they arrive or settle fires.
	heard int
	// events and eventBytes count every event and new approval request
	// the task's workers sent that the run took in, over all attempts,
	// against the dispatcher's bounds.
	events, eventBytes int
	// lastSeq is the highest event sequence of the attempt taken: a
	// sealed event heard again (a replay through the server) is not
	// emitted or counted twice.
	lastSeq int
	ending  *messages.WorkResult
	settle  <-chan time.Time
}

// eventSettle bounds the wait for events a result says are on their way:
// they travel beside it, not behind it, and a lost one must not hold the
// run.
const eventSettle = 2 * time.Second

func (t *remote) deliver(m inbound) {
	select {
	case t.in <- m:
	case <-t.done:
	}
}

// task is the wire form of the agent: its place, prompts, tool ceiling
// and limits, with the run's own secrets taken out of every text.
func (t *remote) task(c actors.ChildRun) (messages.WorkTask, error) {
	cfg := c.Config
	red := func(s string) string { return s }
	var sec *secrets.Set
	if cfg.Env != nil {
		sec = cfg.Env.Secrets
	}
	if sec != nil {
		red = sec.Redact
	}
	sys := cfg.SystemPrompt
	if cfg.Env != nil && cfg.Env.WorkDir != "" {
		sys = strings.ReplaceAll(sys, "The current working directory is "+cfg.Env.WorkDir+".",
			"The current working directory is "+messages.WorkDirMarker+".")
	}
	var names []string
	if cfg.Registry != nil {
		names = cfg.Registry.Names()
	}
	history := make([]messages.ChatMessage, len(c.History))
	for i, m := range c.History {
		m.Content, m.Reasoning = red(m.Content), red(m.Reasoning)
		calls := make([]messages.ToolCall, len(m.ToolCalls))
		for j, tc := range m.ToolCalls {
			tc.Arguments = red(tc.Arguments)
			calls[j] = tc
		}
		m.ToolCalls = calls
		history[i] = m
	}
	if len(history) == 0 {
		history = nil
	}
	now := time.Now()
	timeout := c.Timeout
	expires := now.Add(workstore.MaxAge - time.Hour)
	if timeout > 0 && now.Add(timeout).Before(expires) {
		expires = now.Add(timeout)
	}
	var envAllow []string
	if cfg.Env != nil {
		envAllow = cfg.Env.EnvAllowlist
	}
	task := messages.WorkTask{
		TaskID: t.id, Key: t.key, Pool: t.d.o.Pool, Kind: t.kind, Place: cfg.Place, Trace: c.Trace.Clone(),
		Provider: cfg.Provider, Model: cfg.Model, SystemPrompt: red(sys), Prompt: red(c.Prompt), History: history,
		Task: red(cfg.Task), Tools: names, MaxIterations: cfg.MaxIterations, MaxDepth: c.MaxDepth,
		SubagentIterations: c.SubagentIterations, SubagentTimeoutMs: c.SubagentTimeout.Milliseconds(), ReasoningEffort: cfg.ReasoningEffort, Temperature: cfg.Temperature,
		EnvAllowlist: envAllow, Stream: cfg.Stream, TimeoutMs: timeout.Milliseconds(), Expires: expires, Sent: now,
		StepCeilingMs: t.d.o.StepCeiling.Milliseconds(),
	}
	// The texts above are redacted one by one for their readability; the
	// whole task is redacted again because any string it carries (a
	// history turn's thinking blocks, a name the model chose) goes to a
	// machine that is not the run's, and a field added later must not
	// carry a secret there by default. A thinking block altered here no
	// longer matches its signature: the provider refuses it, which is the
	// failure wanted rather than the leak.
	clean, ok := secrets.RedactValue(sec, task)
	if !ok {
		return messages.WorkTask{}, errors.New("the task could not be sent to worker pool " + t.d.o.Pool + ": taking the run's secrets out of it failed")
	}
	clean.Key = t.key
	return clean, nil
}

// run queues the task and follows it to its end.
func (t *remote) run(ctx context.Context, task messages.WorkTask, timeout time.Duration) actors.ChildOutcome {
	place := t.cfg.Place
	// The child works while it is on a worker: the run's clock runs,
	// except while its calls wait on the gate (which pauses it for a
	// person).
	t.busyDone = t.cfg.Deadline.Busy()
	defer func() { t.busyDone() }()
	stamp(t.id, "publish")
	err := t.publish(ctx, task)
	stamp(t.id, "queued")
	if err != nil {
		return actors.ChildOutcome{Finished: messages.RunFinished{Place: place, Error: err.Error()}, Kind: supervisor.FailRun,
			Reason: err.Error()}
	}
	var timer <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		timer = tm.C
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if t.ending != nil {
				return t.finished(*t.ending) // it had ended: only events were missing
			}
			return t.stop(supervisor.FailCancelled, "stopped: the run is stopping")
		case <-timer:
			if t.ending != nil {
				return t.finished(*t.ending)
			}
			return t.stop(supervisor.FailTimeout, fmt.Sprintf("timed out after %s", timeout))
		case <-tick.C:
			if t.ending != nil {
				continue // the worker is done and may stop its heartbeat
			}
			if o, end := t.checkLease(); end {
				return o
			}
		case <-t.settle:
			return t.finished(*t.ending)
		case m := <-t.in:
			if o, end := t.handle(m); end {
				return o
			}
		}
	}
}

// publish queues the task once: its id is the message id, so a retried
// publish is not queued twice.
func (t *remote) publish(ctx context.Context, task messages.WorkTask) error {
	pctx, done := context.WithTimeout(ctx, 15*time.Second)
	defer done()
	var last error
	for {
		last = t.d.js.Publish(pctx, messages.WorkTaskSubject(t.d.o.Pool), task, task.Trace, task.TaskID)
		if last == nil {
			return nil
		}
		if errors.Is(last, bus.ErrTooLarge) {
			// It will not fit however often it is sent.
			return fmt.Errorf("the task is too large to send to worker pool %s (%w); give the sub-agent a shorter brief and less history", t.d.o.Pool, last)
		}
		select {
		case <-pctx.Done():
			return fmt.Errorf("could not queue the task on worker pool %s: %v", t.d.o.Pool, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// handle takes one message; end is set when the task is over.
func (t *remote) handle(m inbound) (actors.ChildOutcome, bool) {
	if m.decided != nil {
		t.answered(*m.decided)
		return actors.ChildOutcome{}, false
	}
	if !t.sealed(m) {
		return actors.ChildOutcome{}, false
	}
	switch m.kind {
	case messages.WorkKindClaim:
		c, err := messages.Decode[messages.WorkClaimed](m.data)
		if err != nil || c.TaskID != t.id {
			return actors.ChildOutcome{}, false
		}
		if c.LeaseMs > 0 {
			t.lease = min(max(time.Duration(c.LeaseMs)*time.Millisecond, 500*time.Millisecond), 10*time.Minute)
		}
		return t.claimed(m.worker, c.Attempt)
	case messages.WorkKindBeat:
		b, err := messages.Decode[messages.WorkBeat](m.data)
		if err != nil || b.TaskID != t.id {
			break
		}
		if o, end := t.claimed(m.worker, b.Attempt); end || !t.from(m.worker, b.Attempt) {
			return o, end
		}
		t.lastBeat = time.Now()
		t.spend(b.Usage, b.UsageUnknown)
	case messages.WorkKindEvent:
		e, err := messages.Decode[messages.WorkEvent](m.data)
		if err != nil || e.TaskID != t.id {
			break
		}
		if o, end := t.claimed(m.worker, e.Attempt); end || !t.from(m.worker, e.Attempt) {
			return o, end
		}
		t.lastBeat = time.Now()
		if e.Seq > 0 {
			if e.Seq <= t.lastSeq {
				break
			}
			t.lastSeq = e.Seq
		}
		t.heard++
		if o, end := t.count(len(m.data)); end {
			return o, end
		}
		t.event(e)
		if t.ending != nil && t.heard >= t.ending.Events {
			return t.finished(*t.ending), true
		}
	case messages.WorkKindApproval, messages.WorkKindAsk:
		a, err := messages.Decode[messages.WorkApproval](m.data)
		if err != nil || a.TaskID != t.id {
			break
		}
		if o, end := t.claimed(m.worker, a.Attempt); end || !t.from(m.worker, a.Attempt) {
			return o, end
		}
		t.lastBeat = time.Now()
		key := [2]int{a.Attempt, a.Seq}
		if _, decided := t.decisions[key]; !decided && !t.asked[key] {
			// A new request reaches the root gate, and may be asked of a
			// person: it counts as an event does.
			if o, end := t.count(len(m.data)); end {
				return o, end
			}
		}
		t.approval(a)
	case messages.WorkKindResult:
		r, err := messages.Decode[messages.WorkResult](m.data)
		if err != nil || r.TaskID != t.id {
			break
		}
		stamp(t.id, "heard")
		if o, end := t.claimed(m.worker, r.Attempt); end || !t.from(m.worker, r.Attempt) {
			return o, end
		}
		if t.heard < r.Events && t.ending == nil {
			t.ending = &r
			t.settle = time.After(eventSettle)
			return actors.ChildOutcome{}, false
		}
		if t.ending != nil {
			return actors.ChildOutcome{}, false // a repeated result
		}
		return t.finished(r), true
	}
	return actors.ChildOutcome{}, false
}

// count takes one more message of size bytes that the task's workers
// relayed to the run (an event, an approval request) against the
// dispatcher's bounds; past either the child fails.
func (t *remote) count(size int) (actors.ChildOutcome, bool) {
	t.events++
	t.eventBytes += size
	maxEvents, maxBytes := cmp.Or(t.d.o.MaxTaskEvents, DefaultMaxTaskEvents), cmp.Or(t.d.o.MaxTaskEventBytes, DefaultMaxTaskEventBytes)
	if t.events > maxEvents || t.eventBytes > maxBytes {
		t.lost()
		return t.fail(fmt.Sprintf("its worker sent more events than a task may (%d events and approval requests, %d bytes so far; the most is %d events, %d bytes), so it was stopped",
			t.events, t.eventBytes, maxEvents, maxBytes)), true
	}
	return actors.ChildOutcome{}, false
}

// sealed reports whether a worker's message carries the task's seal, and
// warns (once) of one that does not: a worker the task was never
// delivered to, or a forgery the server delivered for someone, speaks of
// it.
func (t *remote) sealed(m inbound) bool {
	if sealed(t.key, m.subject, m.data, m.header) {
		return true
	}
	if !t.forged {
		t.forged = true
		t.warn(fmt.Sprintf("ignored a %s about its task that the task's key did not seal (from worker %s, who was not given the task, or a forgery)", m.kind, m.worker))
	}
	return false
}

// from reports whether a message is the current attempt's.
func (t *remote) from(worker string, attempt int) bool {
	return worker == t.worker && attempt == t.attempt
}

// claimed takes note of the worker that runs attempt. A later attempt
// replaces an earlier one (JetStream gave the task to another worker):
// that is a retry, allowed only when no gated action was approved.
func (t *remote) claimed(worker string, attempt int) (actors.ChildOutcome, bool) {
	if attempt <= t.attempt || attempt < 1 {
		return actors.ChildOutcome{}, false
	}
	first := t.attempt == 0
	if !first {
		t.lost()
	}
	if t.gated != "" {
		return t.refuseRetry(), true
	}
	if attempt > MaxAttempts {
		return t.fail(fmt.Sprintf("its task was delivered %d times; the most is %d", attempt, MaxAttempts)), true
	}
	t.worker, t.attempt, t.lastBeat, t.lostAt = worker, attempt, time.Now(), time.Time{}
	t.heard, t.lastSeq, t.ending, t.settle = 0, 0, nil, nil
	t.spent, t.spentUnknown = messages.Usage{}, false
	if !first {
		// The earlier worker, if it is only cut off, stops when it hears.
		t.writeCancel(messages.WorkCancel{TaskID: t.id, Reason: "the task was given to another worker", Below: attempt})
		t.warn(fmt.Sprintf("its worker was lost; the task was retried on another worker (attempt %d of %d)", attempt, MaxAttempts))
	}
	return actors.ChildOutcome{}, false
}

// lost books what the current attempt was last known to have spent: at
// least that, so the cost is a lower bound.
func (t *remote) lost() {
	if t.attempt == 0 {
		return
	}
	_ = t.cfg.Ledger.RecordRemote(t.spent, true, nil, nil)
	_ = t.cfg.Ledger.RecordUsage(messages.Usage{}, false)
	t.spent, t.spentUnknown = messages.Usage{}, false
}

// spend is the one place a worker's figures of what the attempt spent
// enter the run (a heartbeat's running total, the result's final one).
// The worker's word is a claim: a count that is negative or beyond what
// any response reports (ledger.Validate), or one lower than an earlier
// report of the attempt (a running total only grows), is not taken, and
// makes the attempt's cost unknown, as a response without usage does
// (the run's cost is then a lower bound, never "free"); what was already
// reported stays booked. Each count is the highest seen, so the total
// booked never goes down, whatever the worker sends after.
func (t *remote) spend(u messages.Usage, unknown bool) {
	if unknown {
		t.spentUnknown = true
	}
	if ledger.Validate(u) != nil {
		t.spentUnknown = true
		return
	}
	next := messages.Usage{
		PromptTokens: max(t.spent.PromptTokens, u.PromptTokens), CompletionTokens: max(t.spent.CompletionTokens, u.CompletionTokens),
		TotalTokens: max(t.spent.TotalTokens, u.TotalTokens), ReasoningTokens: max(t.spent.ReasoningTokens, u.ReasoningTokens),
		CacheReadTokens: max(t.spent.CacheReadTokens, u.CacheReadTokens), CacheWriteTokens: max(t.spent.CacheWriteTokens, u.CacheWriteTokens),
	}
	if next != u {
		t.spentUnknown = true // a count went down
	}
	t.spent = next
}

// checkLease notices a worker that stopped heartbeating: after its lease
// JetStream gives the task to another worker; a task that may not run
// again, or that nobody takes, fails.
func (t *remote) checkLease() (actors.ChildOutcome, bool) {
	if t.attempt == 0 {
		return actors.ChildOutcome{}, false // still queued: the parent's timer bounds it
	}
	now := time.Now()
	if t.lostAt.IsZero() {
		if now.Sub(t.lastBeat) <= t.lease {
			return actors.ChildOutcome{}, false
		}
		t.lostAt = now
		if t.gated != "" {
			t.lost()
			return t.refuseRetry(), true
		}
		if t.attempt >= MaxAttempts {
			t.lost()
			return t.fail(fmt.Sprintf("its worker stopped answering (no heartbeat for %s) on the last of %d attempts", t.lease, MaxAttempts)), true
		}
		return actors.ChildOutcome{}, false
	}
	// The redelivery comes one lease after the last heartbeat; a busy
	// pool may take a while longer to start it.
	if now.Sub(t.lostAt) > 2*t.lease+5*time.Second {
		t.lost()
		return t.fail(fmt.Sprintf("its worker stopped answering (no heartbeat for %s) and no other worker took the task", t.lease)), true
	}
	return actors.ChildOutcome{}, false
}

func (t *remote) refuseRetry() actors.ChildOutcome {
	return t.fail(fmt.Sprintf("its worker was lost after the gated action %s was approved, so the task is not run again (a gated action never runs twice)", t.gated))
}

// fail ends the task without the worker: nothing of it may run on.
func (t *remote) fail(reason string) actors.ChildOutcome {
	t.writeCancel(messages.WorkCancel{TaskID: t.id, Reason: reason, Kind: string(supervisor.FailRun)})
	msg := "Sub-agent " + t.cfg.Place.AgentName + " failed: " + reason
	if t.kind == messages.TaskRun {
		msg = "The remote run failed: " + reason
	}
	return actors.ChildOutcome{Finished: messages.RunFinished{Place: t.cfg.Place, Error: reason}, Kind: supervisor.FailRun,
		Reason: msg}
}

// stop cancels the task (its durable record reaches the worker now or
// when it reconnects) and waits briefly for what it has.
func (t *remote) stop(kind supervisor.FailureKind, reason string) actors.ChildOutcome {
	t.writeCancel(messages.WorkCancel{TaskID: t.id, Reason: reason, Kind: string(kind)})
	if t.attempt == 0 {
		return actors.ChildOutcome{Finished: messages.RunFinished{Place: t.cfg.Place}, Kind: kind, Reason: reason}
	}
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	for {
		select {
		case <-grace.C:
			t.lost()
			return actors.ChildOutcome{Finished: messages.RunFinished{Place: t.cfg.Place}, Kind: kind, Reason: reason}
		case m := <-t.in:
			if m.kind != messages.WorkKindResult {
				if m.decided != nil {
					t.answered(*m.decided)
				}
				continue
			}
			if !t.sealed(m) {
				continue
			}
			r, err := messages.Decode[messages.WorkResult](m.data)
			if err != nil || r.TaskID != t.id || !t.from(m.worker, r.Attempt) {
				continue
			}
			o := t.finished(r)
			o.Kind, o.Reason = kind, reason
			return o
		}
	}
}

// writeCancel records, and waits (briefly) for the bucket to keep, that
// the task (or its attempts below c.Below) must stop: the run may be
// about to exit. A worker also stops on its own timer.
func (t *remote) writeCancel(c messages.WorkCancel) {
	data, err := sealCancelRecord(t.key, c)
	if err != nil {
		return
	}
	ctx, done := context.WithTimeout(context.Background(), 2*time.Second)
	defer done()
	if _, err := t.d.kv.Put(ctx, workstore.CancelKey(t.id), data); err != nil {
		t.warn("could not record that its task must stop (" + err.Error() + "); its worker stops it at its own time limit")
	}
}

// markDone records, without waiting, that the task is over: a
// redelivery (its worker died before acknowledging) finds it done.
func (t *remote) markDone() {
	data, err := sealCancelRecord(t.key, messages.WorkCancel{TaskID: t.id, Reason: "the task is finished"})
	if err != nil {
		return
	}
	ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
	go func() {
		defer done()
		_, _ = t.d.kv.Put(ctx, workstore.CancelKey(t.id), data)
	}()
}

// finished books the result and turns it into the child's outcome.
func (t *remote) finished(r messages.WorkResult) actors.ChildOutcome {
	t.spend(r.Usage, r.UsageUnknown)
	calls, declined := t.decidedBy(r.Attempt, r.Calls), t.decidedBy(r.Attempt, r.Declined)
	_ = t.cfg.Ledger.RecordRemote(t.spent, true, calls, declined)
	if t.spentUnknown {
		_ = t.cfg.Ledger.RecordUsage(messages.Usage{}, false)
	}
	t.markDone()
	f := r.Finished
	f.Place = t.cfg.Place
	f.Usage, f.ToolCalls, f.Declined = t.spent, calls, declined
	// The child's cost is what this runner books for it, priced here: the
	// worker's figure (any float, "known" whatever it spent) is its word.
	tot := t.cfg.Ledger.Totals()
	f.CostUSD, f.CostKnown = tot.CostUSD, tot.CostKnown
	if f.Iterations < 0 || t.cfg.MaxIterations > 0 && f.Iterations > t.cfg.MaxIterations {
		f.Iterations = t.cfg.MaxIterations // no more than it was allowed
	}
	t.spent, t.spentUnknown = messages.Usage{}, false
	if r.NotRetried {
		return t.failOnly(r.Reason)
	}
	kind := supervisor.FailureKind(r.Kind)
	switch kind {
	case "", supervisor.FailRun, supervisor.FailTimeout, supervisor.FailCancelled:
	case supervisor.FailPanic:
		// As a local child's crash: the run's root hears of it.
		if t.cfg.Root != nil && t.engine != nil {
			t.engine.Send(t.cfg.Root, messages.ActorFailed{Place: t.cfg.Place, Actor: "worker:" + t.worker,
				Role: messages.RoleSubagent, Reason: fmt.Sprintf("Sub-agent %s crashed on its worker: %s", t.cfg.Place.AgentName, r.Reason)})
		}
	default:
		kind = supervisor.FailRun
	}
	if kind == "" && !f.OK {
		kind = supervisor.FailRun
	}
	reason := r.Reason
	if kind == supervisor.FailRun && reason == "" {
		reason = f.Error
	}
	return actors.ChildOutcome{Finished: f, Kind: kind, Reason: reason}
}

// decidedBy says who decided each of the attempt's calls as this
// runner's record of its gate has it, not as the worker wrote it: a call
// the root gate did not decide was decided by nobody the run knows of.
func (t *remote) decidedBy(attempt int, calls []messages.AgentCall) []messages.AgentCall {
	if len(calls) == 0 {
		return calls
	}
	by := map[[2]string]string{}
	for key, d := range t.decisions {
		if key[0] == attempt {
			by[[2]string{d.Decision.Place.AgentID, d.Decision.ToolCallID}] = d.Decision.DecidedBy
		}
	}
	out := make([]messages.AgentCall, len(calls))
	for i, c := range calls {
		c.DecidedBy = by[[2]string{c.AgentID, c.ID}]
		out[i] = c
	}
	return out
}

func (t *remote) failOnly(reason string) actors.ChildOutcome {
	return actors.ChildOutcome{Finished: messages.RunFinished{Place: t.cfg.Place, Error: reason}, Kind: supervisor.FailRun, Reason: reason}
}

func (t *remote) warn(msg string) {
	if t.d.o.Warn != nil {
		t.d.o.Warn(t.cfg.Place.AgentName + ": " + msg)
	}
}

// ours reports whether a place a worker names is this task's agent or
// one of its own children (whose ids start with the agent's).
func (t *remote) ours(p messages.Place) bool {
	me := t.cfg.Place
	if p.AgentID == me.AgentID {
		return p.Depth == me.Depth
	}
	return p.Depth > me.Depth && strings.HasPrefix(p.AgentID, me.AgentID+"-")
}

// pin makes a place the worker sent part of this run.
func (t *remote) pin(p messages.Place) messages.Place {
	p.RunID = t.cfg.Place.RunID
	if p.AgentID == t.cfg.Place.AgentID {
		p.AgentName, p.ParentAgentID = t.cfg.Place.AgentName, t.cfg.Place.ParentAgentID
	}
	return p
}

// relayed are the event types a remote agent's own loop emits. The rest
// are the root side's to say: approval_required and user_input_required
// carry a request id a person or a bridge answers, approval_resolved
// reports the root gate's decision, run_start and run_end bracket the
// run's stream (a reader stops at run_end). A worker that sent one would
// have the run ask a person for what no gate asked, or end the stream it
// is shown on; a type added later is not relayed until it is listed.
func relayed(typ string) bool {
	switch typ {
	case messages.EventStreamStart, messages.EventThinkingStart, messages.EventThinkingChunk, messages.EventThinkingComplete,
		messages.EventTextStart, messages.EventTextChunk, messages.EventToolCall, messages.EventToolsDetected,
		messages.EventToolExecutionStart, messages.EventToolExecutionComplete, messages.EventUsageUpdate, messages.EventComplete,
		messages.EventSubagentStart, messages.EventSubagentComplete, messages.EventErrorType, messages.EventWarning,
		messages.EventContextManaged, messages.EventStatus:
		return true
	}
	return false
}

// event re-emits one of the task's events on the run's stream.
func (t *remote) event(e messages.WorkEvent) {
	ev, err := messages.Decode[messages.Event](e.Event)
	if err != nil || !relayed(ev.Type) || !t.ours(ev.Place) {
		return
	}
	// A descendant's parent is in the subtree too: the tree shown to the
	// user hangs the worker's agents under this child only.
	if ev.Place.AgentID != t.cfg.Place.AgentID && !t.ours(messages.Place{AgentID: ev.Place.ParentAgentID, Depth: ev.Place.Depth - 1}) {
		return
	}
	// No relayed event is a question: nothing in it is answered.
	ev.RequestID, ev.Asked, ev.RememberScope = "", nil, ""
	ev.Place = t.pin(ev.Place)
	ev.Trace = e.Trace
	t.cfg.Events.Emit(ev)
}

// approval forwards a remote gated call to the root gate, after checking
// it against the agent's own tool ceiling; it answers a repeated request
// with the decision already made.
func (t *remote) approval(a messages.WorkApproval) {
	key := [2]int{a.Attempt, a.Seq}
	if d, ok := t.decisions[key]; ok {
		// A re-ask (the decision, a core message, may have been lost) is
		// answered with the decision only when it asks for the call
		// decided: the same number with another tool or other arguments
		// asks to run them under a decision nobody made for them.
		if action := actionOf(a.Required); action == "" || action != d.Action {
			req := a.Required
			t.sendDecision(t.worker, messages.WorkDecision{TaskID: t.id, Attempt: a.Attempt, Seq: a.Seq, Action: action,
				Decision: messages.ApprovalDecided{Place: t.pin(req.Place), ToolCallID: req.ToolCallID, ToolName: req.ToolName,
					DecidedBy: messages.DecidedByPolicy, Note: "Refused: it was asked again as request " + fmt.Sprint(a.Seq) +
						" with another tool or other arguments than the call decided under that number; a decision is for that one call only."}})
			return
		}
		t.sendDecision(t.worker, d)
		return
	}
	if t.asked[key] {
		return
	}
	t.asked[key] = true
	req, why := t.check(a.Required)
	// check changes none of the fields the digest reads: a re-ask of the
	// same request digests alike.
	action := actionOf(req)
	if why != "" {
		t.answered(gateAnswer{attempt: a.Attempt, seq: a.Seq, worker: t.worker, action: action, d: messages.ApprovalDecided{
			Place: req.Place, ToolCallID: req.ToolCallID, ToolName: req.ToolName, Approved: false,
			DecidedBy: messages.DecidedByPolicy, Note: "Refused: " + why}})
		return
	}
	if t.engine == nil || t.cfg.Gate == nil {
		t.answered(gateAnswer{attempt: a.Attempt, seq: a.Seq, worker: t.worker, action: action, d: messages.ApprovalDecided{
			Place: req.Place, ToolCallID: req.ToolCallID, ToolName: req.ToolName, Approved: false,
			Note: "No approval gate is running, so this call cannot be approved."}})
		return
	}
	// The wait on the gate is the gate's to count (it pauses the clock
	// for a person); the child's own mark steps aside meanwhile.
	if len(t.atGate) == 0 {
		t.busyDone()
		t.busyDone = func() {}
	}
	t.atGate[key] = req.ToolName
	worker, attempt, seq := t.worker, a.Attempt, a.Seq
	gate := t.cfg.Gate
	t.engine.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started:
			c.Send(gate, req)
		case messages.ApprovalDecided:
			if m.ToolCallID != req.ToolCallID {
				return
			}
			t.deliver(inbound{decided: &gateAnswer{attempt: attempt, seq: seq, worker: worker, action: action, d: m}})
			c.Engine().Poison(c.PID())
		}
	}, "remote-approval", actor.WithID(fmt.Sprintf("%s-%d-%d", t.id, attempt, seq)), actor.WithInboxSize(4))
}

// check pins a remote request to this run and task and holds it against
// the tool set the task was given: the worker's word decides nothing the
// gate relies on. Field by field, as a compromised worker may write each:
//
//   - TaskID, attempt and seq are the task's own (handle, sealed); Place
//     must be this agent or one below it, and is pinned to the run.
//   - ToolName must be a tool of the task's ceiling (this runner's
//     registry, not what the worker lists), ExecuteToolName its twin, and
//     ExecuteArgs valid for the twin: what is decided is what may run.
//   - RiskLevel is the tier this runner's registry gives the tool, and
//     Command is read from ExecuteArgs, never from the worker's field.
//   - RequestID, RememberScope and CommandKeys are the gate's to set;
//     Worker is the worker of the task's current claim (from the
//     subject the server let it publish on).
//   - Task and Persona are the runner's word for its own child.
//   - NotAutomatic and HumanOnly are what the propose half found where
//     the call runs: the worker's machine, which this runner cannot see.
//     A reason the worker gives is kept (it only asks for more), but an
//     empty one proves nothing, so the runner sets its own: a command
//     relayed from a worker is never approved by a step that trusts the
//     place it runs (the command allowlist, the static pass, the
//     classifier), and what the runner can tell from the command alone
//     (a write to a git hook, an AGENTS.md, a dotfile) is a person's, as
//     is any call whose arguments name a path through what configures
//     later calls (namesProtected). A home dotfile named by its absolute
//     path, or a link on the worker to such a place, it cannot tell.
//   - Message, PreviewDiff and Arguments are the worker's text for the
//     person, shown as such; the arguments shown are ExecuteArgs.
func (t *remote) check(r messages.ApprovalRequired) (messages.ApprovalRequired, string) {
	if !t.ours(r.Place) {
		return r, "the request names an agent that is not this sub-agent's"
	}
	r.Place = t.pin(r.Place)
	r.RequestID, r.RememberScope, r.CommandKeys = "", "", nil
	r.Worker = t.worker
	if t.cfg.Registry == nil {
		return r, "this agent was given no tools"
	}
	tool, ok := t.cfg.Registry.Lookup(r.ToolName)
	if !ok || tool.Hidden {
		return r, fmt.Sprintf("%s is not a tool this agent was given", r.ToolName)
	}
	if why := oneObject(r.ExecuteArgs); why != "" {
		return r, "invalid approval request: " + why
	}
	if tool.Twin == "" {
		if why := t.singlePhase(tool, &r); why != "" {
			return r, why
		}
	} else {
		if tool.Twin != r.ExecuteToolName {
			return r, fmt.Sprintf("%s asked to run %q, which is not its twin", r.ToolName, r.ExecuteToolName)
		}
		if err := t.cfg.Registry.Validate(tool.Twin, r.ExecuteArgs); err != nil {
			return r, "invalid approval request: " + err.Error()
		}
	}
	r.RiskLevel = tool.Level
	r.Command = ""
	if tool.Name == "execute_command" {
		var ca struct {
			Command          string `json:"command"`
			WorkingDirectory string `json:"workingDirectory"`
		}
		_ = json.Unmarshal(r.ExecuteArgs, &ca)
		r.Command = ca.Command
		// The command runs on the worker, in a directory and with a
		// configuration this runner cannot inspect.
		if r.NotAutomatic == "" {
			r.NotAutomatic = "it runs on worker " + t.worker + ", whose machine this run cannot inspect for what the command would run there " +
				"(a repository's configuration, for one); only a person or the high-risk policy approves a remote command"
		}
		if r.HumanOnly == "" {
			// The worker's home is not known here: a path under ~ counts
			// as one the check cannot tell.
			r.HumanOnly = shellguard.HumanOnly(ca.Command, ca.WorkingDirectory, "")
		}
	}
	if r.HumanOnly == "" {
		r.HumanOnly = namesProtected(r.ExecuteArgs)
	}
	if r.Place.AgentID == t.cfg.Place.AgentID {
		// The runner's own word for its child, not the worker's.
		r.Task, r.Persona = t.cfg.Task, t.cfg.Persona
	}
	if r.Place.ToolCallID == "" {
		r.Place.ToolCallID = r.ToolCallID
	}
	return r, ""
}

// singlePhase checks a request for a gated tool that has no execute twin
// (manage_todos, a custom or MCP tool): as the tool actor asks for one, it
// runs the tool itself, with the call's own arguments, which pass the
// tool's schema, and the person is shown the message this runner's own
// tool writes from those arguments (Tool.ApprovalMessage), not the
// worker's text: what is decided is what runs. spawn_subagent is never
// approved on a worker (see below).
func (t *remote) singlePhase(tool *tools.Tool, r *messages.ApprovalRequired) string {
	if !tool.Gated() {
		return fmt.Sprintf("%s is read-only and runs without approval; no approval is given for it", tool.Name)
	}
	if tool.Name == actors.SubagentToolName {
		// Its children would run on the worker: with the worker's
		// personas, outside this run's pool, its count of live agents and
		// its spend bounds, none of which a local child escapes.
		return fmt.Sprintf("an agent on worker %s cannot start sub-agents of its own: they would run on that worker, "+
			"outside this run's own dispatch and limits. Do this task yourself.", t.worker)
	}
	if r.ExecuteToolName != tool.Name {
		return fmt.Sprintf("%s asked to run %q; a tool without an execute twin runs only itself", r.ToolName, r.ExecuteToolName)
	}
	if err := t.cfg.Registry.Validate(tool.Name, r.ExecuteArgs); err != nil {
		return "invalid approval request: " + err.Error()
	}
	msg, err := tool.ApprovalMessage(r.ExecuteArgs)
	if err != nil {
		return "invalid approval request: " + err.Error()
	}
	if t.cfg.Env != nil && t.cfg.Env.Secrets != nil {
		msg = t.cfg.Env.Secrets.Redact(msg)
	}
	r.Message, r.PreviewDiff, r.Arguments = msg, "", r.ExecuteArgs
	return ""
}

// oneObject says why args are not what a tool actor sends a tool, one
// JSON object with each key once (toolactors.ParseArguments); "" when
// they are. A schema does not say it for every tool (one without a
// schema, an MCP tool's, which is not enforced), and a key given twice
// reads as one value to the schema check here and perhaps as the other
// to the tool on the worker.
func oneObject(args json.RawMessage) string {
	b := bytes.TrimSpace(args)
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return "its arguments are not one JSON object"
	}
	if k, ok := tools.RepeatedKey(b); ok {
		return fmt.Sprintf("the key %q appears twice in one object of its arguments", k)
	}
	return ""
}

// namesProtected says why only a person may approve a relayed call whose
// arguments (any string in them, as written or cleaned) name a path
// through a part that configures later calls or runs (.git, .jazz,
// .agents, AGENTS.md: escalation.Name); "" when none does. It reads only
// the arguments: the worker's files are not this machine's.
func namesProtected(args json.RawMessage) string {
	var v any
	if json.Unmarshal(args, &v) != nil {
		return "its arguments do not parse, so what it changes cannot be told"
	}
	var walk func(x any) string
	walk = func(x any) string {
		switch x := x.(type) {
		case string:
			for _, p := range []string{x, filepath.Clean(x)} {
				for _, c := range strings.Split(p, "/") {
					if why := escalation.Name(c); why != "" {
						return "it changes " + escalation.Show(x) + ", in " + why
					}
				}
			}
		case []any:
			for _, e := range x {
				if why := walk(e); why != "" {
					return why
				}
			}
		case map[string]any:
			for _, e := range x {
				if why := walk(e); why != "" {
					return why
				}
			}
		}
		return ""
	}
	return walk(v)
}

// answered sends the gate's decision to the worker and keeps it for a
// re-ask. Once an approval is sent, the task may never run again.
func (t *remote) answered(g gateAnswer) {
	key := [2]int{g.attempt, g.seq}
	if _, seen := t.decisions[key]; seen {
		return
	}
	wd := messages.WorkDecision{TaskID: t.id, Attempt: g.attempt, Seq: g.seq, Decision: g.d, Action: g.action}
	t.decisions[key] = wd
	tool, fromGate := t.atGate[key]
	if fromGate {
		delete(t.atGate, key)
		if len(t.atGate) == 0 {
			t.busyDone = t.cfg.Deadline.Busy()
		}
	}
	if g.d.Approved && fromGate && t.gated == "" {
		if err := t.recordGated(g, tool); err != nil {
			// Without the record a lost worker's task could run again
			// and repeat this action: it does not run.
			wd.Decision.Approved, wd.Decision.Judgement = false, nil
			wd.Decision.Note = "Approved, but the run could not record that the action started (" + err.Error() + "), so it did not run."
			t.decisions[key] = wd
		} else {
			t.gated = tool
		}
	}
	t.sendDecision(g.worker, wd)
}

// recordGated writes, sealed, and waits for the bucket to keep, that the
// task started a gated action, before the approval goes out: a worker
// that takes the task after its first one is lost reads it and does not
// run it. The worker cannot write it (nor forge or remove it): only the
// runners may write to the bucket.
func (t *remote) recordGated(g gateAnswer, tool string) error {
	data, err := sealGatedRecord(t.key, messages.WorkGated{TaskID: t.id, Attempt: g.attempt, Worker: g.worker,
		Tool: tool, At: time.Now().UTC()})
	if err != nil {
		return err
	}
	ctx, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	if _, err := t.d.kv.Put(ctx, workstore.GatedKey(t.id), data); err != nil {
		return fmt.Errorf("record gated action: %w", err)
	}
	return nil
}

func (t *remote) sendDecision(worker string, wd messages.WorkDecision) {
	_ = t.d.o.Conn.PublishSealed(messages.WorkDecisionSubject(t.d.o.Pool, worker, t.id), wd, wd.Decision.Trace, t.seal)
}
