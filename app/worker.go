package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/pricing"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/provider/retry"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/telemetry"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/workerpool"
)

// WorkerOptions are a worker's own settings: its JAZZ_HOME config (model
// keys, base URLs, prices, telemetry), environment and directory.
type WorkerOptions struct {
	Config *config.Config
	Getenv func(string) string
	// WorkDir is where the task's agents start.
	WorkDir string
	// Tools, when set, caps what any task may use on this worker, on top
	// of the task's own ceiling.
	Tools []string
	// Warn receives notices (retries, telemetry problems).
	Warn func(msg string)
	// RetrySleep replaces the waits between model retries (tests); nil
	// sleeps.
	RetrySleep func(ctx context.Context, d time.Duration) error
	// KeyFiles are the worker's own bus credentials (--creds, --nkey, a
	// client key): no task's tool or program may read them, as for a
	// run's (RunOptions.KeyFiles).
	KeyFiles []string
}

// WorkerRuntime runs pool tasks with the worker's own credentials and
// tools: nothing of the submitter's configuration but the task itself.
// It implements workerpool.Runtime.
type WorkerRuntime struct {
	o       WorkerOptions
	secrets *secrets.Set
	tel     *telemetry.Telemetry
	reg     *tools.Registry
	// acts is the worker's turn to change files: its tasks share one
	// working directory, as the calls of one run do.
	acts *tools.Turn

	mu    sync.Mutex
	provs map[string]provider.Provider
}

// NewWorkerRuntime collects the worker's secrets (for redaction) and
// opens its telemetry; Close shuts the telemetry down.
func NewWorkerRuntime(ctx context.Context, o WorkerOptions) (*WorkerRuntime, error) {
	if o.Config == nil {
		return nil, fmt.Errorf("worker runtime: no config")
	}
	ro := RunOptions{Config: o.Config, Getenv: o.Getenv, Cwd: o.WorkDir, KeyFiles: o.KeyFiles}
	getenv := getenvOf(ro)
	warn := o.Warn
	if warn == nil {
		warn = func(string) {}
	}
	if _, err := modelLimits(o.Config); err != nil {
		return nil, fmt.Errorf("worker runtime: %w", err)
	}
	rt := &WorkerRuntime{o: o, provs: map[string]provider.Provider{}, acts: tools.NewTurn()}
	rt.secrets = runSecrets(ctx, ro)
	rt.tel = openTelemetry(context.WithoutCancel(ctx), o.Config, getenv, rt.secrets.Redactor(), warn)
	reg, err := BuiltinRegistry(ro)
	if err != nil {
		return nil, err
	}
	if reg, err = withSubagentTool(reg); err != nil {
		return nil, err
	}
	if o.Tools != nil {
		reg = reg.Subset(append(append([]string{}, o.Tools...), actors.SubagentToolName))
	}
	rt.reg = reg
	return rt, nil
}

// Close flushes the worker's spans.
func (rt *WorkerRuntime) Close(ctx context.Context) { rt.tel.Shutdown(ctx) }

// Agent builds the config of one task's agent.
func (rt *WorkerRuntime) Agent(ctx context.Context, t messages.WorkTask) (actors.Config, error) {
	if t.Provider == "replay" {
		// A replay script is a file on this machine named by whoever
		// submitted the task: a worker reads no such path.
		return actors.Config{}, fmt.Errorf("the replay provider reads a script from the worker's disk; workers do not run it")
	}
	prov, err := rt.provider(ctx, t.Provider, t.Model)
	if err != nil {
		return actors.Config{}, err
	}
	cfg := rt.o.Config
	getenv := getenvOf(RunOptions{Getenv: rt.o.Getenv})
	price, priced := pricing.Lookup(t.Provider, t.Model, cfg.Pricing)
	pricer := func(u messages.Usage) (float64, bool) {
		if !priced {
			return 0, false
		}
		return pricing.Cost(price, u)
	}
	attempts := 1 + cfg.MaxRetries
	tel, warn, name := rt.tel, rt.o.Warn, t.Place.AgentName
	if warn == nil {
		warn = func(string) {}
	}
	// A step is bounded as the submitter's are (its ceiling travels with
	// the task) and never past this worker's own.
	l, err := modelLimits(cfg)
	if err != nil {
		return actors.Config{}, err
	}
	step := l.Step
	if c := time.Duration(t.StepCeilingMs) * time.Millisecond; c > 0 && c < step {
		step = c
	}
	call := func(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
		resp, err := retry.Chat(ctx, prov, req, onDelta, retry.Options{
			Attempts:  attempts,
			Sleep:     rt.o.RetrySleep,
			Ceiling:   step,
			SlowAfter: l.Slow,
			Slow:      func(int) { warn(retry.SlowMessage(name)) },
			Notify: func(n retry.Notice) {
				tel.RecordRetry(ctx, telemetry.RetryInfo{System: t.Provider, Model: req.Model,
					Attempt: n.Attempt, Err: errText(n.Err), DelayMs: n.Delay.Milliseconds()})
				if n.Reason != "" {
					warn(n.Message(name))
				}
			},
		})
		var ce *retry.CeilingError
		if errors.As(err, &ce) {
			warn(fmt.Sprintf("%s gave up on the model after %s (the step ceiling).", name, step))
		}
		return resp, err
	}
	// The task's ceiling, within what this worker has: a name it lacks
	// is simply not offered, so the agent gets "Unknown tool" for it.
	reg := rt.reg.Subset(t.Tools)
	return actors.Config{
		Place:        t.Place,
		Provider:     t.Provider,
		Model:        t.Model,
		SystemPrompt: strings.ReplaceAll(t.SystemPrompt, messages.WorkDirMarker, rt.o.WorkDir),
		Call:         call,
		Registry:     reg,
		Env: &tools.Env{
			AgentID:        t.Place.AgentID,
			AgentName:      t.Place.AgentName,
			Depth:          t.Place.Depth,
			Task:           t.Task,
			ConversationID: t.Place.AgentID + "-conv",
			JazzHome:       cfg.Home,
			Home:           getenv("HOME"),
			EnvAllowlist:   t.EnvAllowlist,
			Secrets:        rt.secrets,
			WorkDir:        rt.o.WorkDir,
			Acts:           rt.acts,
		},
		MaxIterations:   t.MaxIterations,
		Stream:          t.Stream,
		ReasoningEffort: t.ReasoningEffort,
		Temperature:     t.Temperature,
		Price:           pricer,
		CallPrice:       pricer,
		Warn:            func(msg string) { warn(name + ": " + msg) },
		Telemetry:       tel,
	}, nil
}

// provider opens each provider and model once, with the worker's keys.
func (rt *WorkerRuntime) provider(ctx context.Context, name, model string) (provider.Provider, error) {
	key := name + "/" + model
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if p, ok := rt.provs[key]; ok {
		return p, nil
	}
	p, err := openModel(ctx, RunOptions{Config: rt.o.Config, Getenv: rt.o.Getenv}, getenvOf(RunOptions{Getenv: rt.o.Getenv}), name, model)
	if err != nil {
		return nil, err
	}
	rt.provs[key] = p
	return p, nil
}

// WorkerPoolKey is the config key naming the pool a run sends its
// subagents to (absent: they run in the run's own process).
const WorkerPoolKey = "workerPool"

// WorkerPool is the pool o's run uses: --remote's, else the config's
// workerPool; "" runs everything here.
func WorkerPool(o RunOptions) (string, error) {
	if o.RemotePool != "" {
		return o.RemotePool, nil
	}
	if o.Config == nil {
		return "", nil
	}
	raw, ok := o.Config.Raw[WorkerPoolKey]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var pool string
	if err := json.Unmarshal(raw, &pool); err != nil || pool == "" || messages.SubjectToken(pool) != pool {
		return "", fmt.Errorf("config: %s must be a pool name of letters, digits, '-' or '_', got %s", WorkerPoolKey, string(raw))
	}
	return pool, nil
}

// startPool binds the run's worker pool, when it has one.
func (r *Run) startPool(ctx context.Context, warn func(agent, msg string)) (*workerpool.Dispatcher, error) {
	pool, err := WorkerPool(r.opts)
	if err != nil || pool == "" {
		return nil, err
	}
	if r.bus.Embedded() {
		return nil, fmt.Errorf("worker pool %q needs a shared bus: pass --nats-url (or set JAZZ_NATS_URL), or start one with `jazz bus serve`", pool)
	}
	l, _ := modelLimits(r.opts.Config) // already checked when the provider was opened
	d, err := workerpool.NewDispatcher(ctx, workerpool.DispatcherOptions{Conn: r.bus, Pool: pool, RunID: r.id,
		Warn: func(msg string) { warn("", msg) }, StepCeiling: l.Step})
	if err != nil {
		return nil, err
	}
	r.detach = append(r.detach, d.Close)
	return d, nil
}
