package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/catalog"
	"github.com/jazz-run/jazz/deadline"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/internal/faults"
	"github.com/jazz-run/jazz/ledger"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/personas"
	"github.com/jazz-run/jazz/pricing"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/store/history"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/telemetry"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/asktools"
	"github.com/jazz-run/jazz/workerpool"
	"github.com/jazz-run/jazz/workstate"
)

// Run is one run started by Start. Its methods are safe for concurrent
// use.
type Run struct {
	id     string
	place  messages.Place
	opts   RunOptions
	engine *actor.Engine
	root   *actor.PID
	bus    *bus.Bus
	sink   *events.Sink
	stream <-chan events.Event
	asker  tools.Asker
	// secrets are what the run knows of its own secrets (see runSecrets).
	secrets *secrets.Set
	// catalog knows the models' windows and prices (the cache or the
	// embedded snapshot).
	catalog *catalog.Catalog
	tel     *telemetry.Telemetry
	span    telemetry.RunSpan
	dl      *deadline.Deadline
	prompt  string
	hist    *history.Store
	// persona is the agent's persona, its instructions in the prompt.
	persona personas.Persona
	// cancel ends the run's context: handlers and model calls stop.
	cancel context.CancelFunc
	// detach, run in reverse at the end, undo what Start attached.
	detach []func()

	outcome   chan actors.RunOutcome
	closing   chan struct{}
	closeOnce sync.Once
	done      chan struct{}
	out       Outcome
	err       error
}

// Decision answers one approval request of a run (see Run.Approve).
type Decision struct {
	// RequestID and ToolCallID are the request's and the call's ids, from
	// its approval_required event. The gate takes a decision only for the
	// request it is asking now, named by the id it minted: the model
	// chooses tool-call ids, and may repeat one.
	RequestID  string
	ToolCallID string
	Approved   bool
	// Note is what the model is told of a refusal.
	Note string
	// Remember (messages.Remember*) keeps approving this tool or command
	// for the rest of the run.
	Remember string
}

// Start starts one run and returns at once; the run goes on until it
// finishes, its timeout, ctx's end or Close. Bad options (an unknown
// provider, a bad --nats-url, a broken config value) are an error here,
// before any model call.
func Start(ctx context.Context, o RunOptions) (*Run, error) {
	if o.Config == nil {
		return nil, errors.New("start run: RunOptions.Config is required")
	}
	getenv := getenvOf(o)
	runID := o.RunID
	if runID == "" {
		runID = NewRunID(o.Agent.ID)
	}
	r := &Run{
		id:      runID,
		place:   messages.Place{RunID: runID, AgentID: o.Agent.ID, AgentName: o.Agent.Name},
		opts:    o,
		prompt:  o.Prompt,
		outcome: make(chan actors.RunOutcome, 1),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	ok := false
	defer func() {
		if !ok {
			if r.sink != nil {
				r.sink.Close()
			}
			r.undo()
		}
	}()
	if err := r.start(ctx, getenv); err != nil {
		return nil, redactError(r.secrets, err)
	}
	ok = true
	go r.supervise(ctx)
	return r, nil
}

// start builds the run; on error, undo tears down what it built.
func (r *Run) start(ctx context.Context, getenv func(string) string) error {
	o, place, runID := r.opts, r.place, r.id
	// The reads before the run (a replay script, the conversation) give
	// up at --timeout too: nothing may hang.
	loadCtx, loaded := withTimeout(ctx, o.Timeout)
	defer loaded()
	// The run's secrets are known first: every line, event and error the
	// run writes has them replaced, from its first notice on.
	r.secrets = runSecrets(context.WithoutCancel(ctx), o)
	prov, err := openProvider(loadCtx, o, getenv)
	if err != nil {
		return err
	}
	subagentTimeout, err := SubagentTimeout(o.Config)
	if err != nil {
		return err
	}
	persona, personaWarning, err := agentPersona(loadCtx, o)
	if err != nil {
		return err
	}
	r.persona = persona
	// Memory: the conversation is loaded before anything starts. What a
	// save leaves out is told as a notice, once notices can be printed.
	var notice func(agent, msg string)
	r.hist = &history.Store{Home: o.Config.Home, Notice: func(msg string) {
		if notice != nil {
			notice("", msg)
		}
	}}
	convID, prior, loadWarning := runID, o.History, ""
	if o.Conversation != "" {
		convID = o.Conversation
		if prior, loadWarning, err = r.hist.Load(loadCtx, o.Agent.ID, o.Conversation); err != nil {
			return err
		}
	}

	// The run's context is its own: the caller's ctx ending stops the run
	// in order (the root's teardown), and only then is this cancelled.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	r.detach = append(r.detach, cancel)

	// The embedded bus starts when something subscribes (events, a
	// human, a remote process); an external one is reached now, so a bad
	// --nats-url fails before any model call.
	r.bus = bus.New(bus.Options{URL: o.NATSURL, Client: o.NATS, Redact: busclient.Redact})
	r.detach = append(r.detach, func() {
		closeCtx, done := context.WithTimeout(context.Background(), closeReserve)
		defer done()
		_ = r.bus.Close(closeCtx)
	})
	if o.NATSURL != "" {
		if _, err := r.bus.Connect(ctx); err != nil {
			return err
		}
	}
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return fmt.Errorf("start actor engine: %w", err)
	}
	r.engine = engine
	// The root's PID, for bus callbacks that may fire before Spawn
	// returns; nil until then.
	var root atomic.Pointer[actor.PID]
	toRoot := func(msg any) {
		if pid := root.Load(); pid != nil {
			engine.Send(pid, msg)
		}
	}
	filter := events.NewFilter(o.Events)
	// With events selected, or a bridge reading stderr as a protocol,
	// every line on Stderr is a JSON object, and all of them go through
	// the sink; without Stderr the events go to Run.Events. The sink takes
	// the run's events in-process: a run with --events starts no NATS
	// server unless something else needs one.
	var pub events.Publisher = r.bus
	if filter.Active() || o.Bridge {
		r.sink = events.NewSink(o.Stderr, filter)
		r.sink.SetRedactor(r.secrets.Redactor())
		if o.Stderr == nil && filter.Active() {
			r.stream = r.sink.Stream()
		}
		if o.Faults != nil && o.Faults.Sink {
			r.sink.Hook(func(messages.Event) { faults.Panic(o.Faults, true, "event sink") })
		}
		pub = r.sink.Local(runID, r.bus, func(reason string) {
			toRoot(messages.ActorFailed{Place: place, Actor: "sink", Reason: reason, Role: messages.RoleSink})
		})
	}
	emitter := events.NewEmitter(pub, runID).WithRedactor(r.secrets.Redactor())
	warn := warner(stderrOf(o), r.sink, emitter, place, r.secrets.Redactor())
	// An event the shared bus refuses as too large is stood in for there
	// by a small event_dropped, and the person at the run is told.
	emitter.WithDropped(func(msg string) { warn("", msg) })
	// The stream's first line: which run this is.
	emitter.Emit(runStart(o, place, convID))
	notice = warn
	pool, err := r.startPool(ctx, warn)
	if err != nil {
		return err
	}
	for _, w := range []string{loadWarning, personaWarning} {
		if w != "" {
			warn("", w)
		}
	}
	// One trace per run. Shut down last: the spans of the whole teardown
	// are flushed, within telemetry.ShutdownTimeout.
	r.tel = openTelemetry(context.WithoutCancel(runCtx), o.Config, getenv, r.secrets.Redactor(), func(msg string) { warn("", msg) })
	parent := runParent(o.Traceparent, getenv, func(msg string) { warn("", msg) })

	r.dl = deadline.New(o.Timeout)
	reg, err := agentBuiltins(o, o.Agent.Config.Tools)
	if err != nil {
		return err
	}
	// The person at hand (a bridge on stdin, a terminal) talks to the
	// run in-process. On an external bus anyone with access could publish
	// on the run's subjects: a forged question or approval request shown
	// to them, or a plain answer taken as theirs. So there they get a bus
	// of their own, in-process only, and from the shared bus the run takes
	// only answers signed by an admitted approver.
	human := r.bus
	if !r.bus.Embedded() && (o.Bridge || o.TerminalHuman) {
		human = bus.New(bus.Options{})
		r.detach = append(r.detach, func() {
			closeCtx, done := context.WithTimeout(context.Background(), closeReserve)
			defer done()
			_ = human.Close(closeCtx)
		})
	}
	// One audit per run: its refusals (of decisions, policy changes and
	// answers) are bounded together (approvals.MaxRefusalsLogged).
	audit := approvals.NewAudit(o.Config.Home, r.bus)
	// Questions need someone at hand; a remote approver may answer them
	// too, signed.
	if o.Bridge || o.TerminalHuman {
		asker := asktools.NewAsker(human, runID, r.dl)
		if human != r.bus && o.Remote != nil && o.Remote.Registry != nil {
			checker := approvals.NewAnswerChecker(o.Remote.Registry, runID, nil).
				WithAudit(audit, func(err error) { warn("", "remote answers: "+err.Error()) })
			asker.WithRemote(&asktools.Remote{Bus: r.bus,
				Check: func(raw []byte, q messages.UserInputRequired) (string, error) {
					a, _, err := checker.Check(raw, q)
					return a.Response, err
				},
				Refused: func(id string, err error) { warn("", "remote answers: an answer to "+id+" was refused: "+err.Error()) },
				Unsent: func(id string, err error) {
					warn("", "remote answers: question "+id+" was not sent to remote approvers, who cannot answer it: "+err.Error())
				},
				Asked: checker.Ask,
			})
		}
		r.asker = asker
		if reg, err = withAskTools(reg, o.TerminalHuman); err != nil {
			return err
		}
	}
	if reg, err = withSubagentTool(reg); err != nil {
		return err
	}
	// Connecting to MCP servers is bounded by each one's connect timeout,
	// and by --timeout and the caller like every step before the run.
	eff, closeTools, err := agentTools(loadCtx, o, r.persona, reg, r.secrets, getenv, func(msg string) { warn("", msg) })
	if err != nil {
		return err
	}
	r.detach = append(r.detach, closeTools)

	tap := &askTap{pub: r.bus, runID: runID, shared: !r.bus.Embedded(), warn: func(msg string) { warn("", msg) }}
	if human != r.bus {
		tap.local = human
	}
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
		Deadline:             r.dl,
		Ctx:                  runCtx,
		Telemetry:            r.tel,
	}
	if o.TerminalHuman {
		if hp, hm := harnessModel(ctx, o, getenv, warn); hp != nil {
			gateCfg.Classify = harnessClassifier(hp, hm, userRequests(prior, o.Prompt))
		}
	}
	// Everything for the gate reaches it through the root.
	if o.Remote != nil {
		remote, err := startRemote(runCtx, o, r.bus, runID, audit, toRoot, warn)
		if err != nil {
			return err
		}
		tap.remote = remote
		r.detach = append(r.detach, func() {
			closeCtx, done := context.WithTimeout(context.Background(), closeReserve)
			defer done()
			remote.Close(closeCtx)
		})
	}
	// Unsigned decisions and policy changes are taken only from the
	// in-process bus, where only this process can publish; on an external
	// server only remote approvals' verified ones reach the gate.
	if o.Reachable && r.bus.Embedded() {
		if err := r.wireGate(ctx, toRoot); err != nil {
			return err
		}
	}
	detachHuman, humanSettled, err := attachHuman(runCtx, o, human, directDecisions{pub: human, runID: runID, deliver: toRoot}, runID, r.sink, warn)
	if err != nil {
		return err
	}
	r.detach = append(r.detach, detachHuman)
	// Set before the gate starts, which reads it.
	tap.human = humanSettled

	warnRun := func(msg string) { warn("", msg) }
	if pm, ok := preamble(loadCtx, o, r.secrets, warnRun); ok {
		prior = append(prior, pm) // never saved: rebuilt at every resume
	}
	cs, err := prepareContext(loadCtx, o, getenv, warnRun)
	if err != nil {
		return err
	}
	if cs.refresh != nil {
		refreshLater(runCtx, catalogRefreshDelay, cs.refresh)
	}
	r.catalog = cs.catalog
	agentCfg := r.agentConfig(prov, eff, emitter, warn, runCtx, convID, getenv)
	if agentCfg.Context, err = r.contextConfig(loadCtx, cs, agentCfg.Call, emitter, warn, getenv); err != nil {
		return err
	}
	agentCfg.SystemPrompt += projectInstructions(loadCtx, o, getenv("HOME"), r.secrets, warnRun)
	agentCfg.Env.Timezone = o.Timezone
	policy := newPolicyDial(o.Policy)
	agentCfg.Env.Policy = policy.policyFunc()
	// The root span: from here on the run always reaches span.End.
	spanCtx, span := r.tel.StartRun(runCtx, telemetry.RunInfo{
		RunID: runID, AgentID: o.Agent.ID, AgentName: o.Agent.Name, ConversationID: convID,
		Parent: parent, Model: o.Agent.Config.LLMProvider + "/" + o.Agent.Config.LLMModel,
	})
	r.span = span
	maxDepth, maxIter := o.Config.MaxSubagentDepth, o.Config.MaxSubagentIterations
	// The run tree's account: every agent records its usage and calls in
	// it as they happen, so the envelope is whole however the run ends.
	account := ledger.New(place, ledger.Pricer(agentCfg.Price))
	agentCfg.Ledger = account
	agentCfg.Deadline = r.dl
	rootCfg := actors.RunConfig{
		Place: place,
		Gate:  faults.Wrap[messages.ApprovalRequired](policy.watch(gateactor.New(gateCfg)), o.Faults, o.Faults != nil && o.Faults.Gate, "approval gate"),
		Agent: func(gate, rootPID *actor.PID) actor.Producer {
			cfg := agentCfg
			cfg.Gate, cfg.Root = gate, rootPID
			env := *cfg.Env
			cfg.Env = &env
			// Children are made from cfg as it is now (provider, model,
			// gate, events, prices, root).
			s := actors.NewSubagents(engine, cfg, maxDepth, maxIter)
			s.Timeout = subagentTimeout
			env.Subagents = s
			if pool != nil {
				if o.RemotePool != "" {
					return workerpool.RemoteAgent(pool, actors.ChildRun{Config: cfg, Engine: engine, MaxDepth: maxDepth,
						SubagentIterations: maxIter, SubagentTimeout: subagentTimeout})
				}
				s.Runner = pool // children run on the pool's workers
			}
			return faults.Wrap[messages.RunRequested](actors.New(cfg), o.Faults, o.Faults != nil && o.Faults.Agent, "agent")
		},
		Request: messages.RunRequested{Place: place, Trace: telemetry.Inject(spanCtx), Prompt: o.Prompt, History: prior},
		Budget:  teardownBudget(o) - closeReserve,
		Ledger:  account,
		Events:  emitter,
		Bus:     redactingPublisher{next: pub, set: r.secrets},
		FailOn:  o.FailOn,
		Finished: func(out actors.RunOutcome) {
			select {
			case r.outcome <- out:
			default:
			}
		},
	}
	// The root reports its own crash straight to Wait: nobody is above it.
	report := func(_ *actor.Context, f supervisor.Failure) {
		select {
		case r.outcome <- actors.RunOutcome{RunFinished: messages.RunFinished{Place: place, Error: "The run crashed: " + f.Reason},
			Cause: messages.CauseCrash}:
		default:
		}
	}
	// hollywood's default inbox is 1024 slots (24 KB) made up front; the
	// root sees a handful of messages, and an inbox grows when it must
	// (it never drops or blocks a message).
	r.root = engine.Spawn(actors.NewRun(rootCfg), "run", actor.WithID(runID),
		actor.WithMiddleware(supervisor.Recover(place, report)), actor.WithInboxSize(16))
	root.Store(r.root)
	return nil
}

// agentConfig is the top-level agent's config, without its gate, root
// and spawner, which exist only once the root runs.
func (r *Run) agentConfig(prov provider.Provider, reg *tools.Registry, emitter *events.Emitter, warn func(agent, msg string),
	runCtx context.Context, convID string, getenv func(string) string) actors.Config {
	o, place := r.opts, r.place
	price, priced := pricing.LookupIn(r.catalog, o.Agent.Config.LLMProvider, o.Agent.Config.LLMModel, o.Config.Pricing)
	agentName := o.Agent.Name
	tel := r.tel
	call := r.caller(prov, o.Agent.Config.LLMProvider, emitter, warn)
	pricer := func(u messages.Usage) (float64, bool) {
		if !priced {
			return 0, false
		}
		return pricing.Cost(price, u)
	}
	return actors.Config{
		Place:        place,
		Provider:     o.Agent.Config.LLMProvider,
		Model:        o.Agent.Config.LLMModel,
		SystemPrompt: SystemPrompt(o.Agent, Prompt{Cwd: o.Cwd, Persona: r.persona, Append: o.AppendSystemPrompt, Now: runNow(o)}),
		Call:         call,
		Registry:     reg,
		Env: &tools.Env{
			AgentID:        o.Agent.ID,
			AgentName:      o.Agent.Name,
			ConversationID: convID,
			JazzHome:       o.Config.Home,
			Home:           getenv("HOME"),
			EnvAllowlist:   o.Agent.Config.EnvAllowlist,
			Secrets:        r.secrets,
			WorkDir:        o.Cwd,
			Asker:          r.asker,
			Acts:           tools.NewTurn(),
		},
		Events:             emitter,
		MaxIterations:      maxIterations(o),
		MaxConcurrentCalls: o.MaxConcurrentCalls,
		Stream:             o.Stream,
		ReasoningEffort:    o.Reasoning,
		Temperature:        o.Agent.Config.Temperature,
		Price:              pricer,
		CallPrice:          pricer, // each chat span carries its own cost
		Warn:               func(msg string) { warn(agentName, msg) },
		Ctx:                runCtx,
		Telemetry:          tel,
		Faults:             o.Faults,
	}
}

// maxIterations is the run's cap: the option, else the config's, else
// the spec's default of 100.
func maxIterations(o RunOptions) int {
	switch {
	case o.MaxIterations > 0:
		return o.MaxIterations
	case o.Config != nil && o.Config.MaxIterations > 0:
		return o.Config.MaxIterations
	}
	return 100
}

// wireGate forwards decisions and policy changes from the bus to the
// root, which hands them to the gate.
func (r *Run) wireGate(ctx context.Context, toRoot func(any)) error {
	s1, err := bus.Subscribe(ctx, r.bus, messages.ApprovalDecidedSubject(r.id), func(m bus.Msg[messages.ApprovalDecided]) {
		d := m.Value
		d.Trace = decisionTrace(d.Trace, m.Trace)
		toRoot(d)
	}, bus.Unbounded())
	if err != nil {
		return fmt.Errorf("subscribe approvals: %w", err)
	}
	r.detach = append(r.detach, s1.Stop)
	s2, err := bus.Subscribe(ctx, r.bus, messages.PolicySubject(r.id), func(m bus.Msg[messages.PolicyChanged]) {
		toRoot(m.Value)
	})
	if err != nil {
		return fmt.Errorf("subscribe policy: %w", err)
	}
	r.detach = append(r.detach, s2.Stop)
	return nil
}

// supervise waits for the run's end, its timeout, the caller's ctx or
// Close; stops the run through its root when it must; and tears down
// within the one budget.
func (r *Run) supervise(ctx context.Context) {
	budget := teardownBudget(r.opts)
	expired := make(chan struct{})
	watchCtx, stopWatch := context.WithCancel(context.Background())
	r.dl.Watch(watchCtx, func() { close(expired) })
	var out actors.RunOutcome
	var runErr error
	select {
	case out = <-r.outcome:
	case <-expired:
		runErr = &TimeoutError{Timeout: r.opts.Timeout}
	case <-ctx.Done():
		runErr = ErrCancelled
	case <-r.closing:
		runErr = ErrCancelled
	}
	stopWatch()
	// The budget runs from the moment the run was stopped, or ended.
	tctx, done := context.WithTimeout(context.Background(), budget)
	defer done()
	if runErr != nil {
		cause := messages.CauseCancelled
		var te *TimeoutError
		if errors.As(runErr, &te) {
			cause = messages.CauseTimeout
		}
		r.engine.Send(r.root, messages.CancelRun{Place: r.place, Reason: runErr.Error(), Cause: cause})
		select {
		case out = <-r.outcome:
		case <-tctx.Done():
			// The root did not answer within the budget: end without it,
			// and say so on the stream it could not finish.
			out = actors.RunOutcome{RunFinished: messages.RunFinished{Place: r.place, Error: runErr.Error()}, Cause: cause}
			out.StopReason = messages.StopReasonOf(out.RunFinished, cause)
			if r.sink != nil {
				r.sink.WriteLine(r.sink.Render(actors.RunEnd(out.RunFinished)))
			}
		}
		out.OK = false
		out.Error = runErr.Error()
	}
	// What the caller prints (the envelope, stdout, stderr) and what the
	// conversation keeps never holds one of the run's secrets, whatever
	// put it there (a provider's error echoing the key).
	out.RunFinished = redactFinished(r.secrets, out.RunFinished)
	r.out = Outcome{RunFinished: out.RunFinished}
	r.err = runErr
	if out.OK && r.opts.Conversation != "" {
		r.out.SaveErr = r.save(out.RunFinished)
	}
	r.span.End(runResult(out.RunFinished, runErr))
	r.teardown(tctx)
	if r.opts.Conversation == "" {
		// A run without a conversation key (--ephemeral among them) keeps
		// its todos, task state and compaction journal under its run id,
		// which no later run resumes: they go with the run, or they would
		// be the run's transcript, summarised, kept for good.
		_ = workstate.Store{Home: r.opts.Config.Home, AgentID: r.opts.Agent.ID, ConversationID: r.id}.Remove()
	}
	close(r.done)
}

// save appends this turn to the conversation.
func (r *Run) save(f messages.RunFinished) error {
	ctx, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	// f is redacted already; the prompt, which gives the title (and the
	// user turn when there is no transcript), is redacted the same way,
	// so the record holds a secret nowhere.
	prompt := r.secrets.Redact(r.prompt)
	full, added := turnMessages(f.Transcript, prompt, f.Answer)
	if err := r.hist.Append(ctx, r.opts.Agent.ID, r.opts.Conversation, prompt, full, added); err != nil {
		return fmt.Errorf("save conversation %q: %w", r.opts.Conversation, err)
	}
	return nil
}

// teardown stops the root (and with it the gate and the agent), lets the
// event stream reach the run's end, and closes the bus, all within ctx.
func (r *Run) teardown(ctx context.Context) {
	r.cancel()
	<-r.engine.PoisonCtx(ctx, r.root).Done()
	flushEngineLog(ctx, r.engine)
	// RunFinished reached the server, for whoever watches the bus.
	_ = r.bus.Flush(ctx)
	if r.sink != nil {
		r.sink.Detach(ctx)
	}
	r.undo()
}

// undo runs the detach funcs, last first, then shuts telemetry down.
func (r *Run) undo() {
	for i := len(r.detach) - 1; i >= 0; i-- {
		r.detach[i]()
	}
	r.detach = nil
	r.tel.Shutdown(context.Background())
}

// ID is the run's id, as its bus subjects and events carry it.
func (r *Run) ID() string { return r.id }

// Events is the stream of the events RunOptions.Events selected, in the
// order they happened; it is closed after the run's last event. Nil when
// no event was selected. Read it to the end or Close the run: events
// queue up until they are read.
func (r *Run) Events() <-chan events.Event { return r.stream }

// Approve answers one approval request (an approval_required event) as
// the person the run was started for: RunOptions.Reachable must be set,
// or the gate declines what it cannot approve on its own. A decision must
// name the request (Decision.RequestID); answers to unknown, stale or
// already decided requests are ignored.
func (r *Run) Approve(d Decision) error {
	select {
	case <-r.done:
		return ErrFinished
	default:
	}
	if d.RequestID == "" {
		return errors.New("approve: the decision names no request (RequestID, from the approval_required event)")
	}
	r.engine.Send(r.root, messages.ApprovalDecided{Place: r.place, RequestID: d.RequestID, ToolCallID: d.ToolCallID, Approved: d.Approved,
		DecidedBy: messages.DecidedByHuman, Note: d.Note, Remember: d.Remember})
	return nil
}

// Wait blocks until the run has ended and everything it started is gone,
// and returns its outcome. The error is a *TimeoutError or ErrCancelled
// for a run that was stopped; a run that failed on its own has a nil
// error and an Outcome with OK false and its Error.
func (r *Run) Wait() (Outcome, error) {
	<-r.done
	return r.out, r.err
}

// Close stops the run if it is still going (as a cancel), waits for its
// end, and drops events nobody read. It is safe to call more than once.
func (r *Run) Close() error {
	r.closeOnce.Do(func() { close(r.closing) })
	<-r.done
	if r.sink != nil {
		r.sink.Close()
	}
	return nil
}
