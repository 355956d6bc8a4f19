// Package app is the composition root of a run, and its Go API: Start
// opens the provider, starts the bus and the actor engine, builds the
// agent's tool set, spawns the run's root actor (which owns the gate and
// the agent), wires whoever answers approvals, and returns a Run to watch
// (Events), answer (Approve), wait for (Wait) and stop (Close). A run
// with a conversation key loads it before and saves it after. The CLI's
// `jazz run` is one client of this API.
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/internal/faults"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/provider/registry"
	"github.com/jazz-run/jazz/store/agents"
)

// RunOptions is one run. The CLI fills it from `jazz run`'s flags; a Go
// program sets what it needs (Agent, Prompt, Config at least).
type RunOptions struct {
	Agent  agents.Agent
	Prompt string
	Config *config.Config
	Policy string
	// Events selects event categories (tools, reasoning, text, usage,
	// approval, subagent, all). With Stderr set they are written there as
	// NDJSON (the `--events` stream); without, Run.Events delivers them.
	// Error and warning events are always sent when any is selected.
	Events        []string
	Stream        bool
	Reasoning     string
	Timeout       time.Duration
	MaxIterations int
	// MaxConcurrentCalls caps the tool calls of one iteration running at
	// once, sub-agents' included; 0 means actors.MaxConcurrentCalls (10).
	MaxConcurrentCalls int
	AutoApprove        []string
	// Conversation is the memory key: its transcript is loaded before the
	// run and the turn saved after a successful one. Empty: no memory.
	Conversation string
	NATSURL      string
	// NATS is how to reach and authenticate to NATSURL (credentials, TLS,
	// reconnects).
	NATS bus.Client
	// Remote is set by --remote-approvals.
	Remote *RemoteApprovals
	// RemotePool runs the whole agent on a worker of this pool (`jazz run
	// --remote`); the gate, events, ledger and envelope stay here.
	RemotePool string
	Reachable  bool // a human can answer approvals (and, at hand, questions)
	Bridge     bool // --interactive-stdin: the stdin protocol
	// TerminalHuman: a person at a terminal answers prompts on Stderr.
	TerminalHuman bool
	Stdin         io.Reader
	// Stderr gets the run's diagnostics: notices as `⚠` lines, or, with
	// events selected or a bridge, every line as a JSON object. Nil
	// discards notices and leaves events to Run.Events.
	Stderr     io.Writer
	Getenv     func(string) string
	Cwd        string
	RetrySleep func(ctx context.Context, d time.Duration) error
	// Timezone is the run's IANA timezone (--timezone) for get_time; ""
	// is UTC.
	Timezone string
	// History is prior conversation passed inline (no memory key).
	History []messages.ChatMessage
	// Traceparent (--traceparent) makes the run a child of the caller's
	// trace; empty falls back to TRACEPARENT.
	Traceparent string
	// TeardownBudget bounds a stopped run's end (Ctrl-C, timeout, a
	// crash) from the stop to Wait returning; 0 means
	// actors.DefaultTeardownBudget plus a reserve for closing the bus.
	TeardownBudget time.Duration
	// Faults injects crashes for the fault tests; nil in real runs.
	Faults *faults.Plan
	// RunID names the run (its bus subjects, events, envelope); empty
	// mints one (NewRunID). A caller sets it to name the run before it
	// starts, as `jazz run`'s header does.
	RunID string
	// FailOn, when set, is asked about a run that ended well; a non-empty
	// answer fails the run with that message (--fail-on-decline,
	// --fail-on-max-iterations), its run_end event included.
	FailOn func(messages.RunFinished) string
	// AppendSystemPrompt (--append-system-prompt) is added to the end of
	// the agent's standing instructions for this run.
	AppendSystemPrompt string
	// KeyFiles are credential files outside the config (--creds, --nkey):
	// like JAZZ_HOME, the read tools refuse them and no program the run
	// starts sees them. Empty entries are ignored.
	KeyFiles []string
}

// NewRunID mints a run id for an agent: run-<agentId>-<epochMs>-<random>.
// The run id names the run's subjects on a shared bus (events, approvals,
// work) and its trace, so two runs of one agent started in the same
// millisecond (a chat bot, cron, a worker pool) must not share it: the
// random part keeps one run from hearing another's approvals.
func NewRunID(agentID string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("run-%s-%d-%s", agentID, time.Now().UnixMilli(), hex.EncodeToString(b[:]))
}

// Outcome is how a run ended: what the CLI prints.
type Outcome struct {
	messages.RunFinished
	// SaveErr is set when the conversation could not be saved; the run
	// itself still succeeded.
	SaveErr error
}

// TimeoutError is a run stopped by --timeout.
type TimeoutError struct{ Timeout time.Duration }

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("Run exceeded the %dms timeout.", e.Timeout.Milliseconds())
}

// ErrCancelled is a run stopped by a signal or its caller.
var ErrCancelled = errors.New("Run cancelled before it finished.")

// ErrFinished is returned by Approve once the run is over.
var ErrFinished = errors.New("the run has finished")

// RunAndWait runs one run to its end: Start, Wait, Close.
func RunAndWait(ctx context.Context, o RunOptions) (Outcome, error) {
	r, err := Start(ctx, o)
	if err != nil {
		return Outcome{}, err
	}
	defer r.Close()
	return r.Wait()
}

// getenvOf is o.Getenv, or the process environment.
func getenvOf(o RunOptions) func(string) string {
	if o.Getenv != nil {
		return o.Getenv
	}
	return os.Getenv
}

// teardownBudget is the run's one bound on a stop.
func teardownBudget(o RunOptions) time.Duration {
	if o.TeardownBudget > 0 {
		return o.TeardownBudget
	}
	return actors.DefaultTeardownBudget + closeReserve
}

// closeReserve is the part of the budget kept for closing the bus and
// the engine once the root has its outcome.
const closeReserve = 500 * time.Millisecond

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
// Its HTTP client carries the run's model-call bounds (modelLimits).
func openModel(ctx context.Context, o RunOptions, getenv func(string) string, name, model string) (provider.Provider, error) {
	s := providerSettings(o, getenv, name)
	l, err := modelLimits(o.Config)
	if err != nil {
		return nil, err
	}
	s.HTTPClient = httpClient(l, getenv)
	p, err := registry.Open(ctx, name, model, s)
	if err != nil {
		return nil, fmt.Errorf("open provider %s: %w", name, err)
	}
	return p, nil
}

// providerSettings are the agent's and the config's keys and settings
// for provider name.
func providerSettings(o RunOptions, getenv func(string) string, name string) registry.Settings {
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
	return s
}
