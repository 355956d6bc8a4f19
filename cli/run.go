package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/pricing"
	"github.com/jazz-run/jazz/store/agents"
	"github.com/jazz-run/jazz/visible"
	"github.com/jazz-run/jazz/workerpool"
)

// RunOptions are `jazz run`'s flags as parsed.
type RunOptions struct {
	Agent            string
	Prompt           string
	JSON             bool
	Conversation     string
	ConversationSet  bool
	Policy           string
	Events           string
	Reasoning        string
	Timeout          string
	MaxIterations    string
	Stream           bool
	NoStream         bool
	InteractiveStdin bool
	// InteractiveStdinSet: --interactive-stdin was given, true or false;
	// false turns the implied bridge mode off.
	InteractiveStdinSet bool
	AutoApproveTools    string
	Timezone            string
	MaxRetries          string // overrides the config's maxRetries; "" keeps it
	// Model, AppendSystemPrompt and Cwd override the agent's model, add
	// to its instructions and move where the run starts, for this run.
	Model, AppendSystemPrompt, Cwd string
	// Ephemeral keeps nothing and puts the transcript in the envelope;
	// HistoryJSON is the conversation so far, passed inline.
	Ephemeral     bool
	HistoryJSON   string
	FailOnDecline bool
	// FailOnMaxIterations makes a run that hit its iteration cap exit 1.
	FailOnMaxIterations bool
	// Bus is how to reach an external bus: --nats-url, credentials and
	// TLS (environment variables fill what is unset later).
	Bus             busclient.Options
	RemoteApprovals bool
	ApprovalTimeout string
	MaxRemotePolicy string
	ConfigPath      string
	Debug           bool
	Verbose         bool // -v: the info-level log
	Traceparent     string
	// Remote runs the agent on a worker of Pool (default: the config's
	// workerPool, else "default").
	Remote bool
	Pool   string
}

// NewRunCmd builds `jazz run`; runF replaces the run in tests.
func NewRunCmd(d Deps, runF func(context.Context, RunOptions) error) *cobra.Command {
	o := RunOptions{}
	cmd := &cobra.Command{
		Use:   "run --agent <id|name> [prompt]",
		Short: "Run one agent turn headlessly: the answer on stdout, everything else on stderr",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Prompt = strings.Join(args, " ")
			o.ConversationSet = cmd.Flags().Changed("conversation")
			o.InteractiveStdinSet = cmd.Flags().Changed("interactive-stdin")
			o.ConfigPath, _ = cmd.Flags().GetString("config")
			o.Debug, _ = cmd.Flags().GetBool("debug")
			o.Verbose, _ = cmd.Flags().GetBool("verbose")
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runRun(cmd.Context(), d, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Agent, "agent", "", "agent id or name")
	f.BoolVar(&o.JSON, "json", false, "print exactly one JSON object on stdout")
	f.StringVar(&o.Conversation, "conversation", "", "conversation key: load the transcript before, save it after")
	f.StringVar(&o.Policy, "approval-policy", "", "auto-approve up to this tier: read-only, low-risk or high-risk")
	f.StringVar(&o.Events, "events", "", "NDJSON events on stderr: tools,reasoning,text,usage,approval,subagent,all")
	f.StringVar(&o.Reasoning, "reasoning", "", "reasoning effort: low, medium, high or disable")
	f.StringVar(&o.Timeout, "timeout", "", "wall-clock limit of the run in milliseconds (human waits excluded)")
	f.StringVar(&o.MaxIterations, "max-iterations", "", "iteration cap of the agent loop")
	f.StringVar(&o.MaxRetries, "max-retries", "", "retries of a failed model call (default: the config's maxRetries, 10)")
	f.StringVar(&o.Model, "model", "", "run on this model instead of the agent's (provider/model), this run only")
	f.StringVar(&o.AppendSystemPrompt, "append-system-prompt", "", "instructions added after the agent's for this run")
	f.StringVar(&o.Cwd, "cwd", "", "directory the run starts in (default: the current one)")
	f.BoolVar(&o.Ephemeral, "ephemeral", false, "keep nothing: no conversation is saved; --json adds the transcript as messages")
	f.StringVar(&o.HistoryJSON, "history-json", "", "the conversation so far as a JSON array of messages (an --ephemeral envelope's messages)")
	f.BoolVar(&o.Stream, "stream", false, "stream the model's answer")
	f.BoolVar(&o.NoStream, "no-stream", false, "do not stream")
	f.BoolVar(&o.InteractiveStdin, "interactive-stdin", false, "a human answers approvals and questions through stdin (bridges)")
	f.StringVar(&o.AutoApproveTools, "auto-approve-tools", "", "comma list of tools approved whatever the policy")
	f.StringVar(&o.Timezone, "timezone", "UTC", "IANA timezone of the run")
	f.BoolVar(&o.FailOnDecline, "fail-on-decline", false, "exit 1 when the gate declined any call")
	f.BoolVar(&o.FailOnMaxIterations, "fail-on-max-iterations", false, "exit 1 when the run stopped at its iteration limit (stopReason max_iterations)")
	addBusFlags(f, &o.Bus, busFlagText{
		URL:   "external NATS server (default: embedded in-process); a password here shows in ps, prefer --creds or --nkey",
		Creds: "NATS credentials file (user JWT + seed) for --nats-url",
		Nkey:  "nkey seed file for --nats-url (default with the local bus: its runner identity)",
	})
	f.BoolVar(&o.RemoteApprovals, "remote-approvals", false, "approvals wait for a signed decision from an approver on the bus (default bus: the local `jazz bus serve`)")
	f.StringVar(&o.ApprovalTimeout, "approval-timeout", "", "milliseconds a remote approval may wait before the call is declined (default 600000)")
	f.StringVar(&o.MaxRemotePolicy, "max-remote-policy", "", "highest policy a signed remote change may set (default: the starting policy)")
	f.StringVar(&o.Traceparent, "traceparent", "", "W3C traceparent: trace the run as a child of the caller's span (env TRACEPARENT)")
	f.BoolVar(&o.Remote, "remote", false, "run the agent on a worker of a pool (`jazz worker`); approvals, events and the result stay here")
	f.StringVar(&o.Pool, "pool", "", "worker pool for --remote (default: the config's workerPool, else default)")
	return cmd
}

// validated is what runRun needs after the flag checks.
type validated struct {
	policy    string
	events    []string
	reasoning string
	timeout   time.Duration
	maxIter   int
	// maxRetries is -1 when --max-retries was not given.
	maxRetries int
	autoTools  []string
}

// validate applies the spec's flag rules, in the spec's order.
func validate(o RunOptions) (validated, error) {
	var v validated
	switch o.Policy {
	case "", messages.PolicyReadOnly, messages.PolicyLowRisk, messages.PolicyHighRisk:
		v.policy = o.Policy
	default:
		return v, fmt.Errorf("Invalid --approval-policy %q. Expected read-only, low-risk, or high-risk.", o.Policy)
	}
	for _, c := range strings.Split(o.Events, ",") {
		c = strings.ToLower(strings.TrimSpace(c))
		if c == "" {
			continue
		}
		switch c {
		case "tools", "reasoning", "text", "usage", "approval", "subagent", "all":
			v.events = append(v.events, c)
		default:
			return v, fmt.Errorf("Invalid --events category %q. Expected: tools, reasoning, text, usage, approval, subagent, all.", c)
		}
	}
	switch o.Reasoning {
	case "", "low", "medium", "high", "disable":
		v.reasoning = o.Reasoning
	default:
		return v, fmt.Errorf("Invalid --reasoning %q. Expected low, medium, high, or disable.", o.Reasoning)
	}
	if _, err := time.LoadLocation(o.Timezone); err != nil || o.Timezone == "" {
		return v, fmt.Errorf("Invalid --timezone %q. Expected an IANA timezone name (e.g. Europe/Paris).", o.Timezone)
	}
	if o.Timeout != "" {
		n, err := positiveInt("--timeout", o.Timeout)
		if err != nil {
			return v, err
		}
		v.timeout = time.Duration(n) * time.Millisecond
	}
	if o.MaxIterations != "" {
		n, err := positiveInt("--max-iterations", o.MaxIterations)
		if err != nil {
			return v, err
		}
		v.maxIter = n
	}
	v.maxRetries = -1
	if o.MaxRetries != "" {
		n, err := strconv.ParseUint(o.MaxRetries, 10, 31)
		if err != nil {
			return v, fmt.Errorf("--max-retries must be a whole number, 0 or more (got %q).", o.MaxRetries)
		}
		v.maxRetries = int(n)
	}
	for _, t := range strings.Split(o.AutoApproveTools, ",") {
		if t = strings.TrimSpace(t); t != "" {
			v.autoTools = append(v.autoTools, t)
		}
	}
	if strings.TrimSpace(o.Agent) == "" {
		return v, errors.New("No agent specified. Use --agent <agentId>.")
	}
	return v, nil
}

// positiveInt reads a flag that takes digits only: ParseUint refuses
// signs, spaces and units ("30s"), and 0 is refused here.
func positiveInt(flag, raw string) (int, error) {
	n, err := strconv.ParseUint(raw, 10, 31)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%s must be a positive integer (got %q).", flag, raw)
	}
	return int(n), nil
}

// runRun is `jazz run`: validate, load, run, print.
func runRun(ctx context.Context, d Deps, o RunOptions) error {
	// Until the flags are read, a bridge's stderr is known to be JSON;
	// --events makes it so too once validated.
	errLines := stderrLines{w: d.IO.ErrOut, json: o.InteractiveStdin}
	reported := false // the run sent its own error event
	// Notices found before the run is named wait for its name (warning
	// events carry the run id and agent), or for a failure.
	var pending []string
	flush := func() {
		for _, w := range pending {
			errLines.notice(w)
		}
		pending = nil
	}
	// failRun reports a failed run: what it had done (f) and spent.
	failRun := func(msg string, f messages.RunFinished, cost float64) error {
		flush()
		if o.JSON {
			writeRunFailure(d.IO.Out, msg, f, cost)
		} else {
			// A stopped run's text so far is still its answer: stdout
			// carries it, the exit code and stderr say it was stopped.
			if a := partialAnswer(f); a != "" {
				fmt.Fprintln(d.IO.Out, shownAnswer(a, d.IO.IsStdoutTTY()))
			}
			errLines.failure(msg, reported)
		}
		return silentError{errors.New(msg)}
	}
	fail := func(msg string, _ float64) error { return failRun(msg, messages.RunFinished{}, 0) }
	v, err := validate(o)
	if err != nil {
		return fail(err.Error(), 0)
	}
	// The reads before the run (config, agent, history) give up at
	// --timeout too: nothing may hang.
	loadCtx := ctx
	if v.timeout > 0 {
		var cancel context.CancelFunc
		loadCtx, cancel = context.WithTimeout(ctx, v.timeout)
		defer cancel()
	}
	start := d.Cwd // where jazz started: relative paths of flags mean here
	if d.Cwd, err = runCwd(o.Cwd, d.Cwd); err != nil {
		return fail(err.Error(), 0)
	}
	inline, err := historyJSON(o.HistoryJSON)
	if err != nil {
		return fail(err.Error(), 0)
	}
	getenv := d.Getenv
	ci := getenv("CI") == "true" || getenv("CI") == "1"
	bridge := o.InteractiveStdin || impliedBridge(o, v.events, d.IO)
	errLines.json = errLines.json || bridge
	terminal := !bridge && d.IO.IsStdinTTY() && !ci

	prompt, err := readPrompt(loadCtx, d, o.Prompt, bridge, errLines.notice)
	if err != nil {
		return fail(err.Error(), 0)
	}
	if prompt == "" {
		return fail("No prompt provided. Pass it as an argument or pipe it via stdin.", 0)
	}

	// A relative JAZZ_HOME means where jazz started, as a relative
	// --config does: the directory --cwd names is the project's, and a
	// home inside it would make the repository's files the user's config,
	// agents and trust records.
	home, err := config.Home(getenv, start)
	if err != nil {
		return fail(err.Error(), 0)
	}
	// A run writes to JAZZ_HOME only when it saves a conversation, and
	// that save comes after the model's answer: then a probe file checks
	// now that it will go through (a full disk too), so nothing is paid
	// for and lost. Any other run only needs home to accept writes.
	checkHome := config.CheckHomeAccess
	if strings.TrimSpace(o.Conversation) != "" {
		checkHome = config.CheckHome
	}
	if err := checkHome(home); err != nil {
		return fail(err.Error(), 0)
	}
	cfg, warnings, err := config.Load(loadCtx, config.LoadOptions{Home: home, ConfigFlag: o.ConfigPath, Getenv: getenv, Cwd: d.Cwd, FlagDir: start, Debug: o.Debug})
	if err != nil {
		return fail(err.Error(), 0)
	}
	if v.maxRetries >= 0 {
		cfg.MaxRetries = v.maxRetries
	}
	filter := events.NewFilter(v.events)
	errLines.json = errLines.json || filter.Active()
	notice := errLines.notice
	pending = append(pending, warnings...)
	agent, err := (&agents.Store{Home: home}).Lookup(loadCtx, strings.TrimSpace(o.Agent))
	if err != nil {
		return fail(err.Error(), 0)
	}
	runID := app.NewRunID(agent.ID)
	errLines.place = messages.Place{RunID: runID, AgentID: agent.ID, AgentName: agent.Name}
	flush()
	conv := strings.TrimSpace(o.Conversation)
	if o.ConversationSet && conv == "" {
		return fail("Invalid --conversation id: must be non-empty.", 0)
	}
	switch {
	case conv != "" && o.Ephemeral:
		return fail("--ephemeral keeps nothing; it cannot be used with --conversation.", 0)
	case conv != "" && o.HistoryJSON != "":
		return fail("--history-json is the conversation so far; it cannot be used with --conversation, which loads one.", 0)
	}
	if agent, err = withModel(agent, o.Model); err != nil {
		return fail(err.Error(), 0)
	}

	maxIter := v.maxIter
	if maxIter == 0 {
		maxIter = cfg.MaxIterations
	}
	remotePool, usesPool, err := runPool(o, cfg)
	if err != nil {
		return fail(err.Error(), 0)
	}
	bo := runBus(o, getenv, start)
	natsURL, natsOpts, remote, err := remoteOptions(o, bo, v.policy, cfg, usesPool)
	if err != nil {
		return fail(err.Error(), 0)
	}
	reasoning := v.reasoning
	if reasoning == "" {
		reasoning = agent.Config.ReasoningEffort
	}
	debugRun(ctx, o, home, d.Cwd, agent.ID, agent.Name, agent.Model, v.policy, agent.Config.Tools)
	errLines.status("info", agent.Name+" (run "+runID+")", "started", "◉")
	// The run's memory, events and teardown are app's: jazz run starts it,
	// waits, and prints what it ended with.
	run, err := app.Start(ctx, app.RunOptions{
		Agent:         agent,
		Prompt:        prompt,
		Config:        cfg,
		Policy:        v.policy,
		Events:        v.events,
		Stream:        streaming(o, v.events, cfg, getenv, d.IO.IsStdoutTTY()),
		Reasoning:     reasoning,
		Timeout:       v.timeout,
		MaxIterations: maxIter,
		AutoApprove:   v.autoTools,
		Conversation:  conv,
		NATSURL:       natsURL,
		NATS:          natsOpts,
		Remote:        remote,
		Reachable:     bridge || terminal || o.RemoteApprovals,
		Bridge:        bridge,
		TerminalHuman: terminal,
		Stdin:         d.IO.In,
		Stderr:        d.IO.ErrOut,
		Getenv:        getenv,
		Cwd:           d.Cwd,
		History:       inline,
		Traceparent:   o.Traceparent,
		Timezone:      o.Timezone,
		RemotePool:    remotePool,
		Faults:        d.Faults,
		RunID:         runID,
		FailOn:        failOn(o, maxIter),

		AppendSystemPrompt: o.AppendSystemPrompt,
		KeyFiles:           bo.SecretFiles(),
	})
	if err != nil {
		return fail(err.Error(), 0)
	}
	defer run.Close()
	out, runErr := run.Wait()
	cost := pricing.Round8(out.CostUSD)
	reported = runReported(out, runErr)
	if runErr != nil {
		return failRun(runErr.Error(), out.RunFinished, cost)
	}
	if !out.OK {
		return failRun(out.Error, out.RunFinished, cost)
	}
	if out.SaveErr != nil {
		msg := fmt.Sprintf("Warning: failed to save conversation %q: %v", conv, errors.Unwrap(out.SaveErr))
		if errLines.json {
			notice(msg)
		} else {
			fmt.Fprintln(d.IO.ErrOut, visible.Line(msg))
		}
	}
	if len(out.Declined) > 0 {
		notice(declineNotice(agent.Name, out.Declined, toolLevels()))
	}
	if o.JSON {
		env := successOf(out.RunFinished, cost)
		if o.Ephemeral {
			env.Messages = transcriptOf(out.RunFinished, prompt)
		}
		b, err := env.appendJSON(make([]byte, 0, 256))
		if err != nil {
			return failRun("encode result: "+err.Error(), out.RunFinished, cost)
		}
		_, _ = d.IO.Out.Write(append(b, '\n'))
	} else {
		fmt.Fprintln(d.IO.Out, shownAnswer(strings.TrimSpace(out.Answer), d.IO.IsStdoutTTY()))
	}
	errLines.status("success", "", "completed", "✔")
	return nil
}

// shownAnswer is the answer as stdout gets it. To a pipe or a file it is
// the payload, byte for byte. On a terminal a person reads it, and the
// model wrote every byte of it: an escape sequence there could rewrite
// the lines above it (a status, an earlier answer), retitle the window,
// plant a link or write the clipboard (OSC 52), so what a terminal would
// act on is shown as visible escapes instead (newlines and tabs stay).
func shownAnswer(answer string, terminal bool) string {
	if terminal {
		return visible.Block(answer)
	}
	return answer
}

// failOn is the run's --fail-on-decline and --fail-on-max-iterations:
// which endings that are not failures of the run still fail the command.
func failOn(o RunOptions, maxIter int) func(messages.RunFinished) string {
	if !o.FailOnDecline && !o.FailOnMaxIterations {
		return nil
	}
	return func(f messages.RunFinished) string {
		if o.FailOnDecline && len(f.Declined) > 0 {
			return fmt.Sprintf("The gate declined %d tool call(s) and --fail-on-decline is set.", len(f.Declined))
		}
		if o.FailOnMaxIterations && f.StopReason == messages.StopMaxIterations {
			return fmt.Sprintf("The run stopped at its iteration limit (%d) and --fail-on-max-iterations is set.", maxIter)
		}
		return ""
	}
}

// runReported says whether app.Run already sent the run's error event:
// it does for a run that started and failed, timed out or was cancelled,
// not for one it could not start.
func runReported(out app.Outcome, runErr error) bool {
	var te *app.TimeoutError
	if runErr == nil {
		return !out.OK
	}
	return errors.As(runErr, &te) || errors.Is(runErr, app.ErrCancelled)
}

// streaming applies headless-run.md §8: first match wins.
func streaming(o RunOptions, cats []string, cfg *config.Config, getenv func(string) string, stdoutTTY bool) bool {
	if o.Stream {
		return true
	}
	if o.NoStream {
		return false
	}
	for _, c := range cats {
		if c == "reasoning" || c == "text" || c == "all" {
			return true
		}
	}
	switch cfg.Output.Streaming.Enabled {
	case config.StreamingTrue:
		return true
	case config.StreamingFalse:
		return false
	}
	for _, k := range []string{"CI", "NO_COLOR"} {
		if v := getenv(k); v == "true" || v == "1" {
			return false
		}
	}
	return stdoutTTY
}

// runPool is the pool --remote runs the agent on ("" without --remote),
// and whether the run uses a pool at all (--remote, or workerPool).
func runPool(o RunOptions, cfg *config.Config) (string, bool, error) {
	configured, err := app.WorkerPool(app.RunOptions{Config: cfg})
	if err != nil {
		return "", false, err
	}
	if o.Pool != "" && !o.Remote {
		return "", false, errors.New("--pool needs --remote")
	}
	if !o.Remote {
		return "", configured != "", nil
	}
	pool := firstNonEmpty(o.Pool, configured, workerpool.DefaultPool)
	if messages.SubjectToken(pool) != pool {
		return "", false, fmt.Errorf("Invalid --pool %q: use letters, digits, '-' or '_'.", pool)
	}
	return pool, true, nil
}

// runBus is the run's bus settings from its flags and environment, every
// file made absolute against start (not --cwd) once: the connection reads
// and the isolation hides these same paths (SecretFiles), so the two
// cannot name different files.
func runBus(o RunOptions, getenv func(string) string, start string) busclient.Options {
	bo := o.Bus.WithEnv(getenv).Resolved(start)
	bo.Name = "jazz-run"
	return bo
}
