// Package app is the composition root of `jazz run`: it starts the bus and
// the actor engine, builds the agent's tool set, spawns the gate and the
// agent, wires whoever answers approvals, waits for the run to finish or
// time out, and tears everything down in order.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/deadline"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/ledger"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/pricing"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/provider/registry"
	"github.com/jazz-run/jazz/provider/retry"
	"github.com/jazz-run/jazz/store/agents"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/telemetry"
	"github.com/jazz-run/jazz/tools"
)

// RunOptions is one `jazz run`, validated by the CLI.
type RunOptions struct {
	Agent         agents.Agent
	Prompt        string
	Config        *config.Config
	Policy        string
	Events        []string
	Stream        bool
	Reasoning     string
	Timeout       time.Duration
	MaxIterations int
	AutoApprove   []string
	Conversation  string
	NATSURL       string
	// NATS are the client options (credentials, TLS, reconnects) for
	// NATSURL.
	NATS []nats.Option
	// Remote is set by --remote-approvals.
	Remote         *RemoteApprovals
	Reachable      bool // a human can answer approvals and questions
	Bridge         bool // --interactive-stdin: the stdin protocol
	TerminalHuman  bool // a person at a terminal
	Stdin          io.Reader
	Stderr         io.Writer
	Getenv         func(string) string
	Cwd            string
	RetrySleep     func(ctx context.Context, d time.Duration) error
	History        []messages.ChatMessage
	ConversationID string
	// Traceparent (--traceparent) makes the run a child of the caller's
	// trace; empty falls back to TRACEPARENT.
	Traceparent string
}

// Outcome is what the CLI prints.
type Outcome = messages.RunFinished

// TimeoutError is a run stopped by --timeout.
type TimeoutError struct{ Timeout time.Duration }

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("Run exceeded the %dms timeout.", e.Timeout.Milliseconds())
}

// ErrCancelled is a run stopped by a signal or its caller.
var ErrCancelled = errors.New("Run cancelled before it finished.")

// Run executes one agent run to completion.
func Run(ctx context.Context, o RunOptions) (Outcome, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	runID := fmt.Sprintf("run-%s-%d", o.Agent.ID, time.Now().UnixMilli())
	place := messages.Place{RunID: runID, AgentID: o.Agent.ID, AgentName: o.Agent.Name}

	// Opening reads a replay script: bounded by --timeout like every read
	// before the run.
	openCtx, opened := withTimeout(ctx, o.Timeout)
	prov, err := openProvider(openCtx, o, getenv)
	opened()
	if err != nil {
		return Outcome{}, err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The embedded bus starts when something subscribes (events, a
	// human, a remote process); an external one is reached now, so a bad
	// --nats-url fails before any model call.
	b := bus.New(bus.Options{URL: o.NATSURL, NATS: o.NATS, Redact: busclient.Redact})
	if o.NATSURL != "" {
		if _, err := b.Connect(runCtx); err != nil {
			return Outcome{}, err
		}
	}
	defer func() {
		closeCtx, done := context.WithTimeout(context.Background(), 2*time.Second)
		defer done()
		_ = b.Close(closeCtx)
	}()

	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return Outcome{}, fmt.Errorf("start actor engine: %w", err)
	}
	emitter := events.NewEmitter(b, runID)
	filter := events.NewFilter(o.Events)
	// With --events, or a bridge reading stderr as a protocol, every line
	// on stderr is a JSON object, and all of them go through the sink.
	var sink *events.Sink
	if filter.Active() || o.Bridge {
		sink = events.NewSink(o.Stderr, filter)
		conn, err := b.Connect(runCtx)
		if err != nil {
			return Outcome{}, err
		}
		if err := sink.Attach(conn, runID); err != nil {
			return Outcome{}, fmt.Errorf("attach event sink: %w", err)
		}
	}
	warn := warner(o.Stderr, sink, runID)
	// One trace per run. Deferred first so it runs last: the spans of the
	// whole teardown are flushed, within telemetry.ShutdownTimeout.
	known := runSecrets(runCtx, o)
	tel := openTelemetry(context.WithoutCancel(runCtx), o.Config, getenv, known.Redactor(), func(msg string) { warn("", msg) })
	defer tel.Shutdown(context.Background())
	parent := runParent(o.Traceparent, getenv, func(msg string) { warn("", msg) })

	dl := deadline.New(o.Timeout)
	reg, err := BuiltinRegistry(o)
	if err != nil {
		return Outcome{}, err
	}
	if o.Bridge || o.TerminalHuman {
		// Questions need someone at hand; a remote approver answers
		// approvals only.
		if reg, err = withAskTools(reg, o.TerminalHuman); err != nil {
			return Outcome{}, err
		}
	}
	if reg, err = withSubagentTool(reg); err != nil {
		return Outcome{}, err
	}
	eff := reg.Subset(o.Agent.Config.Tools)

	tap := &askTap{pub: b, runID: runID}
	gateCfg := gateactor.Config{
		RunID:                runID,
		Policy:               o.Policy,
		Reachable:            o.Reachable,
		ModelContext:         o.TerminalHuman,
		AutoApproveTools:     o.AutoApprove,
		AutoApprovedCommands: o.Config.AutoApprovedCommands,
		Checks:               commandChecks(),
		Bus:                  tap,
		Events:               emitter,
		Deadline:             dl,
		Ctx:                  runCtx,
		Telemetry:            tel,
	}
	if o.TerminalHuman {
		if hp, hm := harnessModel(ctx, o, getenv, warn); hp != nil {
			gateCfg.Classify = harnessClassifier(hp, hm, userRequests(o.History, o.Prompt))
		}
	}
	gatePID := engine.Spawn(gateactor.New(gateCfg), "gate", actor.WithID(runID),
		actor.WithMiddleware(supervisor.Recover(place, nil)))
	if o.Remote != nil {
		remote, err := startRemote(runCtx, o, b, runID, engine, gatePID, warn)
		if err != nil {
			return Outcome{}, err
		}
		tap.remote = remote
		defer func() {
			closeCtx, done := context.WithTimeout(context.Background(), 2*time.Second)
			defer done()
			remote.Close(closeCtx)
		}()
	}
	// Unsigned decisions and policy changes are taken only from the
	// in-process bus, where only this process can publish; on an external
	// server only remote approvals' verified ones reach the gate.
	var subs []*nats.Subscription
	if o.Reachable && b.Embedded() {
		conn, err := b.Connect(runCtx)
		if err != nil {
			return Outcome{}, err
		}
		if subs, err = wireGate(conn, engine, gatePID, runID); err != nil {
			return Outcome{}, err
		}
	}
	defer func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}()

	extras := map[string]any{}
	detachHuman, err := attachHuman(runCtx, o, b, directDecisions{pub: b, runID: runID, engine: engine, gate: gatePID}, runID, dl, extras, sink, warn)
	if err != nil {
		return Outcome{}, err
	}
	defer detachHuman()

	maxIter := o.MaxIterations
	price, priced := pricing.Lookup(o.Agent.Config.LLMProvider, o.Agent.Config.LLMModel, o.Config.Pricing)
	attempts := 1 + o.Config.MaxRetries
	agentName := o.Agent.Name
	call := func(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
		return retry.Chat(ctx, prov, req, onDelta, retry.Options{
			Attempts: attempts,
			Sleep:    o.RetrySleep,
			Notify: func(n retry.Notice) {
				// ctx is the chat span's: the retry nests under it.
				tel.RecordRetry(ctx, telemetry.RetryInfo{System: o.Agent.Config.LLMProvider, Model: req.Model,
					Attempt: n.Attempt, Err: errText(n.Err), DelayMs: n.Delay.Milliseconds()})
				if n.Reason != "" {
					warn("", n.Message(agentName))
				}
				emitter.Emit(messages.Event{Type: messages.EventErrorType, Place: place,
					Err:         &messages.EventError{Name: "ProviderError", Message: n.Err.Error()},
					Recoverable: messages.Ptr(true)})
			},
		})
	}
	env := &tools.Env{
		AgentID:        o.Agent.ID,
		AgentName:      o.Agent.Name,
		ConversationID: o.ConversationID,
		JazzHome:       o.Config.Home,
		Home:           getenv("HOME"),
		EnvAllowlist:   o.Agent.Config.EnvAllowlist,
		Secrets:        known,
		Dir:            tools.NewWorkDir(o.Cwd),
		Extras:         extras,
	}
	agentCfg := actors.Config{
		Place:           place,
		Provider:        o.Agent.Config.LLMProvider,
		Model:           o.Agent.Config.LLMModel,
		SystemPrompt:    SystemPrompt(o.Agent, o.Cwd),
		Call:            call,
		Registry:        eff,
		Env:             env,
		Gate:            gatePID,
		Events:          emitter,
		MaxIterations:   maxIter,
		Stream:          o.Stream,
		ReasoningEffort: o.Reasoning,
		Temperature:     o.Agent.Config.Temperature,
		Price: func(u messages.Usage) (float64, bool) {
			if !priced {
				return 0, false
			}
			return pricing.Cost(price, u)
		},
		Warn:      func(msg string) { warn(agentName, msg) },
		Ctx:       runCtx,
		Telemetry: tel,
	}
	agentCfg.CallPrice = agentCfg.Price // each chat span carries its own cost
	// The run tree's account: every agent records its usage and calls in
	// it as they happen, so the envelope is whole however the run ends.
	account := ledger.New(place, ledger.Pricer(agentCfg.Price))
	agentCfg.Ledger = account
	agentCfg.Deadline = dl
	var handlers sync.WaitGroup
	agentCfg.Handlers = &handlers
	if err := installSubagents(engine, &agentCfg, o.Config); err != nil {
		return Outcome{}, err
	}

	// The root span: from here on the run always reaches runSpan.End.
	spanCtx, runSpan := tel.StartRun(runCtx, telemetry.RunInfo{
		RunID: runID, AgentID: o.Agent.ID, AgentName: o.Agent.Name, ConversationID: o.ConversationID,
		Parent: parent, Model: o.Agent.Config.LLMProvider + "/" + o.Agent.Config.LLMModel,
	})
	finished := make(chan messages.RunFinished, 1)
	var agentPID *actor.PID // touched only by the owner actor
	ownerPID := engine.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case messages.CancelRun:
			if agentPID != nil {
				c.Send(agentPID, m)
			}
		case actor.Started:
			agentPID = c.SpawnChild(actors.New(agentCfg), "agent", actor.WithID("top"),
				actor.WithMiddleware(supervisor.Recover(place, nil)))
			c.Send(agentPID, messages.RunRequested{Place: place, Trace: telemetry.Inject(spanCtx), Prompt: o.Prompt, History: o.History})
		case messages.RunFinished:
			select {
			case finished <- m:
			default:
			}
		case messages.ActorFailed:
			select {
			case finished <- messages.RunFinished{Place: place, OK: false, Error: "The agent crashed: " + m.Reason}:
			default:
			}
		}
	}, "run", actor.WithID(runID))

	expired := make(chan struct{})
	dl.Watch(runCtx, func() { close(expired) })

	var out Outcome
	var runErr error
	select {
	case out = <-finished:
	case <-expired:
		runErr = &TimeoutError{Timeout: o.Timeout}
	case <-ctx.Done():
		runErr = ErrCancelled
	}
	if runErr != nil {
		// Ask the agent for what it spent so far, then stop everything.
		engine.Send(gatePID, messages.CancelRun{Place: place, Reason: runErr.Error()})
		engine.Send(ownerPID, messages.CancelRun{Place: place, Reason: runErr.Error()})
		select {
		case out = <-finished:
		case <-time.After(500 * time.Millisecond):
		}
		out.OK = false
		out.Error = runErr.Error()
	}
	cancel()
	// Tool handlers end with the run's context; wait for them so what
	// they still report (a cancelled subagent's subagent_complete, its
	// span) is not lost, but never longer than the 2 s a cancel may take.
	waitAtMost(&handlers, 2*time.Second)
	// Whatever ended the run, the envelope reports the whole tree's spend
	// and calls as recorded, children still running at a timeout included.
	t := account.Totals()
	out.Usage, out.CostUSD, out.CostKnown, out.ToolCalls, out.Declined = t.Usage, t.CostUSD, t.CostKnown, t.ToolCalls, t.Declined
	// Bounded: whatever happens inside the engine, the process exits.
	stopCtx, stopped := context.WithTimeout(context.Background(), 2*time.Second)
	<-engine.PoisonCtx(stopCtx, ownerPID).Done()
	<-engine.PoisonCtx(stopCtx, gatePID).Done()
	stopped()
	runSpan.End(runResult(out, runErr))
	if !out.OK || runErr != nil {
		// error events are always sent: a failure is never invisible on
		// the live stream, whatever categories were chosen.
		emitter.Emit(messages.Event{Type: messages.EventErrorType, Place: place,
			Err: &messages.EventError{Name: failureName(runErr), Message: out.Error}, Recoverable: messages.Ptr(false)})
	}
	flushCtx, done := context.WithTimeout(context.Background(), time.Second)
	_ = b.Flush(flushCtx)
	done()
	if sink != nil {
		sink.Detach()
	}
	if runErr != nil {
		return out, runErr
	}
	return out, nil
}

// waitAtMost waits for wg, or for d, whichever comes first.
func waitAtMost(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// failureName names the kind of failure in the run's error event.
func failureName(runErr error) string {
	var te *TimeoutError
	switch {
	case errors.As(runErr, &te):
		return "TimeoutError"
	case errors.Is(runErr, ErrCancelled):
		return "CancelledError"
	}
	return "RunError"
}

// wireGate forwards decisions and policy changes from the bus to the gate.
func wireGate(conn *nats.Conn, engine *actor.Engine, gate *actor.PID, runID string) ([]*nats.Subscription, error) {
	s1, err := conn.Subscribe(messages.ApprovalDecidedSubject(runID), func(m *nats.Msg) {
		if d, err := messages.Decode[messages.ApprovalDecided](m.Data); err == nil {
			d.Trace = decisionTrace(d.Trace, m.Header)
			engine.Send(gate, d)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe approvals: %w", err)
	}
	s2, err := conn.Subscribe(messages.PolicySubject(runID), func(m *nats.Msg) {
		if p, err := messages.Decode[messages.PolicyChanged](m.Data); err == nil {
			engine.Send(gate, p)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe policy: %w", err)
	}
	return []*nats.Subscription{s1, s2}, nil
}

func openProvider(ctx context.Context, o RunOptions, getenv func(string) string) (provider.Provider, error) {
	return openModel(ctx, o, getenv, o.Agent.Config.LLMProvider, o.Agent.Config.LLMModel)
}

// withTimeout is ctx bounded by d; 0 means no bound.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// openModel opens provider name for model with the agent's and the
// config's keys and settings for that provider.
func openModel(ctx context.Context, o RunOptions, getenv func(string) string, name, model string) (provider.Provider, error) {
	s := registry.Settings{Getenv: getenv, ReplayDir: o.Config.Home + "/replay"}
	if k := o.Agent.Config.LLMAPIKeys[name]; k != "" {
		s.APIKey = k
	}
	if ls, ok := o.Config.LLM[name]; ok {
		if s.APIKey == "" && getenv(registry.KeyEnv(name)) == "" {
			s.APIKey = ls.APIKey
		}
		s.BaseURL = ls.BaseURL
		s.KeepAlive = ls.KeepAlive
	}
	if o.Agent.Config.NumCtx != nil {
		s.NumCtx = *o.Agent.Config.NumCtx
	}
	p, err := registry.Open(ctx, name, model, s)
	if err != nil {
		return nil, fmt.Errorf("open provider %s: %w", name, err)
	}
	return p, nil
}
