package workerpool

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/workstore"
)

// Runtime is what a worker runs agents with: its own model credentials,
// tools, secrets and telemetry (app.NewWorkerRuntime is the real one).
type Runtime interface {
	// Agent is the config task's agent runs with on this worker: its
	// model caller, its tools within task.Tools, its environment. The
	// worker wires the rest (gate, events, ledger, spawner, lifetime).
	Agent(ctx context.Context, task messages.WorkTask) (actors.Config, error)
}

// WorkerOptions configure one worker.
type WorkerOptions struct {
	// Conn reaches the bus as this worker: its identity's public key is
	// Key, and its inbox prefix busserver.WorkerInboxPrefix(Key).
	Conn *bus.Bus
	Key  string
	// Name is a label for people (`jazz workers`).
	Name string
	// Pool defaults to "default"; Capacity (tasks at once) to 4.
	Pool     string
	Capacity int
	// Lease, when set, is the lease this worker expects: it does not
	// join a pool whose lease (its consumer's AckWait, which the bus
	// server sets) differs. 0 takes the pool's.
	Lease   time.Duration
	Version string
	Runtime Runtime
	// Logf receives what the worker does; nil keeps it quiet.
	Logf func(format string, args ...any)
}

// DefaultPool is the pool a worker joins and a run names by default.
const DefaultPool = workstore.DefaultPool

// Worker takes a pool's tasks and runs them.
type Worker struct {
	o      WorkerOptions
	h      workstore.Handles
	cons   *bus.Queue
	engine *actor.Engine
	svc    *bus.Service
	inbox  *bus.Subscription
	watch  *bus.Subscription
	unhook func()

	ctx    context.Context
	cancel context.CancelFunc
	loops  sync.WaitGroup
	jobsWG sync.WaitGroup

	mu   sync.Mutex
	jobs map[string]*job
	done atomic.Int64
}

// ErrStopping is why a worker's jobs end when the worker stops: their
// tasks go back to the pool.
var ErrStopping = errors.New("the worker is stopping")

// StartWorker joins the pool: it binds the pool's consumer,
// registers the micro service, and starts taking tasks.
func StartWorker(ctx context.Context, o WorkerOptions) (*Worker, error) {
	if o.Conn == nil || o.Key == "" || o.Runtime == nil {
		return nil, errors.New("worker: a connection, its key and a runtime are required")
	}
	if o.Pool == "" {
		o.Pool = DefaultPool
	}
	if messages.SubjectToken(o.Pool) != o.Pool {
		return nil, fmt.Errorf("worker: pool name %q: use letters, digits, '-' or '_'", o.Pool)
	}
	if o.Capacity <= 0 {
		o.Capacity = 4
	}
	h, err := workstore.Open(ctx, o.Conn)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	// The bus server made the pool's consumer, with the pool's lease, for
	// the workers listed in its workers.json; a worker only binds it (it
	// may not create or change one: its settings are the whole pool's).
	bctx, bdone := context.WithTimeout(ctx, bindBound)
	cons, err := h.JS.BindQueue(bctx, workstore.TaskStream, workstore.ConsumerName(o.Pool))
	bdone()
	if err != nil {
		return nil, fmt.Errorf("worker: join pool %s: %w; the bus server creates a pool's consumer for the workers that list it under \"pools\" in JAZZ_HOME/bus/workers.json (jazz bus add-worker NAME --pool %s), and lets only them take its tasks", o.Pool, err, o.Pool)
	}
	lease := cons.AckWait()
	if o.Lease > 0 && o.Lease != lease {
		return nil, fmt.Errorf("worker: pool %s has a lease of %s, not %s: a pool's lease is the bus's (\"leaseMs\" of the pool in JAZZ_HOME/bus/workers.json, jazz bus add-worker --lease), the same for all its workers", o.Pool, lease, o.Lease)
	}
	o.Lease = lease
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return nil, fmt.Errorf("worker: start actor engine: %w", err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	w := &Worker{o: o, h: h, cons: cons, engine: engine, ctx: wctx, cancel: cancel, jobs: map[string]*job{}}
	ok := false
	defer func() {
		if !ok {
			w.close()
		}
	}()
	// Decisions for this worker's tasks; the server lets only runners
	// publish here, and lets no other worker read it.
	w.inbox, err = bus.SubscribeRaw(ctx, o.Conn, messages.WorkerInbox(o.Pool, o.Key), w.fromRunner, bus.Unbounded())
	if err != nil {
		return nil, fmt.Errorf("worker: subscribe: %w", err)
	}
	// Cancel records: heard as they are written (a write to the bucket
	// is a message on its subject), and read again for every running
	// task after a reconnect (what was written meanwhile). A plain
	// subscription, not a KV watch: a worker may create no consumer on
	// the bucket, since a consumer delivers to any subject its creator
	// names (see seal.go).
	w.watch, err = bus.SubscribeRaw(ctx, o.Conn, workstore.KeySubject("cancel.*"), w.cancelWritten, bus.Unbounded())
	if err != nil {
		return nil, fmt.Errorf("worker: hear cancel records: %w", err)
	}
	w.unhook = o.Conn.OnReconnect(func() { go w.recheck() })
	w.svc, err = o.Conn.AddService(ctx, bus.ServiceConfig{
		Name:        workstore.ServiceName,
		Version:     semver(o.Version),
		Description: "jazz worker",
		Metadata: map[string]string{"pool": o.Pool, "name": o.Name, "key": o.Key,
			"capacity": strconv.Itoa(o.Capacity), "version": o.Version},
		Stats:         func() any { return w.Status() },
		StatusSubject: messages.WorkStatusSubject(o.Pool, o.Key),
	})
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	for i := 0; i < o.Capacity; i++ {
		w.loops.Add(1)
		go w.take()
	}
	ok = true
	w.logf("joined pool %s as %s (capacity %d, lease %s)", o.Pool, o.Key, o.Capacity, o.Lease)
	return w, nil
}

// bindBound bounds binding the pool's consumer: a worker the server does
// not let ask is not answered at all.
const bindBound = 10 * time.Second

var semverPattern = regexp.MustCompile(`^v?(\d+\.\d+\.\d+)`)

// semver is version as the micro service wants it (x.y.z).
func semver(v string) string {
	if m := semverPattern.FindStringSubmatch(v); m != nil {
		return m[1]
	}
	return "0.0.0"
}

func (w *Worker) logf(format string, args ...any) {
	if w.o.Logf != nil {
		w.o.Logf(format, args...)
	}
}

// Status is the worker's load.
func (w *Worker) Status() messages.WorkerStatus {
	w.mu.Lock()
	running := len(w.jobs)
	w.mu.Unlock()
	return messages.WorkerStatus{Worker: w.o.Key, Name: w.o.Name, Pool: w.o.Pool, Capacity: w.o.Capacity,
		Running: running, Done: w.done.Load(), Version: w.o.Version}
}

// take is one slot: it asks for a task only when it is free, so no task
// waits in this worker's buffer while another worker is idle.
func (w *Worker) take() {
	defer w.loops.Done()
	for w.ctx.Err() == nil {
		fctx, done := context.WithTimeout(w.ctx, 30*time.Second)
		msg, err := w.cons.Next(fctx)
		done()
		if err != nil {
			if w.ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
				// The server is away (a reconnect) or refused: try again
				// shortly instead of spinning.
				select {
				case <-w.ctx.Done():
				case <-time.After(250 * time.Millisecond):
				}
			}
			continue
		}
		w.jobsWG.Add(1)
		w.runJob(msg)
		w.jobsWG.Done()
	}
}

// fromRunner routes a runner's decision to the task it answers.
func (w *Worker) fromRunner(m bus.Raw) {
	tok := strings.Split(m.Subject, ".")
	// jazz.work.<pool>.to.<worker>.<task>.decision
	if len(tok) != 7 || tok[6] != "decision" {
		return
	}
	j := w.job(tok[5])
	if j == nil {
		return
	}
	if !sealed(j.task.Key, m.Subject, m.Value, m.Header) {
		w.logf("task %s: ignored a decision its runner did not seal", j.task.TaskID)
		return
	}
	d, err := messages.Decode[messages.WorkDecision](m.Value)
	if err != nil {
		return
	}
	if j.attempt == d.Attempt && d.TaskID == j.task.TaskID {
		w.engine.Send(j.gate, workDecided{d})
	}
}

func (w *Worker) job(token string) *job {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.jobs[token]
}

// cancelWritten stops the task whose cancel record was written, when
// its runner sealed it.
func (w *Worker) cancelWritten(m bus.Raw) {
	c, err := messages.Decode[messages.WorkCancel](m.Value)
	if err != nil || m.Subject != workstore.KeySubject(workstore.CancelKey(c.TaskID)) {
		return
	}
	j := w.job(messages.SubjectToken(c.TaskID))
	if j == nil {
		return
	}
	if !cancelSealed(j.task.Key, c) {
		w.logf("task %s: ignored a cancel record its runner did not seal", c.TaskID)
		return
	}
	if j.cancelIf(c) {
		w.logf("task %s (%s) cancelled: %s", c.TaskID, j.task.Place.AgentName, c.Reason)
	}
}

// recheck reads the cancel record of every running task: a worker that
// was cut off learns what was cancelled meanwhile.
func (w *Worker) recheck() {
	w.mu.Lock()
	jobs := make([]*job, 0, len(w.jobs))
	for _, j := range w.jobs {
		jobs = append(jobs, j)
	}
	w.mu.Unlock()
	for _, j := range jobs {
		ctx, done := context.WithTimeout(w.ctx, 5*time.Second)
		if c, ok := w.readCancel(ctx, j.task); ok && j.cancelIf(c) {
			w.logf("task %s (%s) was cancelled while this worker was away: %s", c.TaskID, j.task.Place.AgentName, c.Reason)
		}
		done()
	}
}

// Stop stops taking tasks and hands the running ones back to the pool
// (another worker takes them, unless a gated action had started), then
// leaves. It returns when every job has ended or ctx is done.
func (w *Worker) Stop(ctx context.Context) {
	w.cancel()
	w.mu.Lock()
	for _, j := range w.jobs {
		j.stop(ErrStopping)
	}
	w.mu.Unlock()
	done := make(chan struct{})
	go func() {
		w.loops.Wait()
		w.jobsWG.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	w.close()
}

func (w *Worker) close() {
	w.cancel()
	if w.svc != nil {
		_ = w.svc.Stop()
	}
	w.watch.Stop()
	if w.inbox != nil {
		w.inbox.Stop()
	}
	if w.unhook != nil {
		w.unhook()
	}
	if w.engine != nil {
		// Nothing of a job may outlive the worker.
		w.mu.Lock()
		for _, j := range w.jobs {
			j.stop(ErrStopping)
		}
		w.mu.Unlock()
	}
}
