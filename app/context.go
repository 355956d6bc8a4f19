package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/agentsmd"
	"github.com/jazz-run/jazz/catalog"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/ctxmgr"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/provider/httpx"
	"github.com/jazz-run/jazz/provider/registry"
	"github.com/jazz-run/jazz/provider/retry"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/telemetry"
	"github.com/jazz-run/jazz/workstate"
)

// ModelCallKey is the optional top-level config object bounding model
// calls: connectTimeoutMs, firstByteTimeoutMs, idleTimeoutMs (each HTTP
// request), stepTimeoutMs (one model step, retries included),
// slowNoticeMs (the "taking longer than expected" notice) and
// maxResponseBytes (one response's body).
const ModelCallKey = "modelCall"

// ContextSwitchEnv turns context management off when set to "off": a
// diagnostic switch (and the tests' proof that the rungs are what keeps a
// long run under its window).
const ContextSwitchEnv = "JAZZ_CONTEXT_MANAGEMENT"

// localProbe bounds asking a local server for its window at start-up.
const localProbe = 2 * time.Second

// ModelLimits bound every model call of a run.
type ModelLimits struct {
	HTTP httpx.Limits
	// Step bounds one model step, retries included; Slow is when the
	// slow notice is given.
	Step, Slow time.Duration
}

// modelLimits reads ModelCallKey over the defaults. A value that is not a
// whole positive number in range is a config error naming the key.
func modelLimits(c *config.Config) (ModelLimits, error) {
	l := ModelLimits{HTTP: httpx.DefaultLimits(), Step: retry.StepCeiling, Slow: retry.SlowHint}
	if c == nil {
		return l, nil
	}
	raw, ok := c.Raw[ModelCallKey]
	if !ok || string(raw) == "null" {
		return l, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return l, fmt.Errorf("config: %s must be an object: %w", ModelCallKey, err)
	}
	ms := func(key string, dst *time.Duration) error {
		v, ok := doc[key]
		if !ok {
			return nil
		}
		n, err := wholeNumber(v, 1, float64(24*time.Hour/time.Millisecond))
		if err != nil {
			return fmt.Errorf("config: %s.%s %v", ModelCallKey, key, err)
		}
		*dst = time.Duration(n) * time.Millisecond
		return nil
	}
	for key, dst := range map[string]*time.Duration{
		"connectTimeoutMs": &l.HTTP.Connect, "firstByteTimeoutMs": &l.HTTP.FirstByte, "idleTimeoutMs": &l.HTTP.Idle,
		"stepTimeoutMs": &l.Step, "slowNoticeMs": &l.Slow,
	} {
		if err := ms(key, dst); err != nil {
			return l, err
		}
	}
	if v, ok := doc["maxResponseBytes"]; ok {
		n, err := wholeNumber(v, 1024, 1<<30)
		if err != nil {
			return l, fmt.Errorf("config: %s.maxResponseBytes %v", ModelCallKey, err)
		}
		l.HTTP.MaxBytes = int64(n)
	}
	for key := range doc {
		switch key {
		case "connectTimeoutMs", "firstByteTimeoutMs", "idleTimeoutMs", "stepTimeoutMs", "slowNoticeMs", "maxResponseBytes":
		default:
			return l, fmt.Errorf("config: %s.%s is not a known key (known: connectTimeoutMs, firstByteTimeoutMs, idleTimeoutMs, stepTimeoutMs, slowNoticeMs, maxResponseBytes)", ModelCallKey, key)
		}
	}
	return l, nil
}

func wholeNumber(raw json.RawMessage, lo, hi float64) (int64, error) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || f < lo || f > hi {
		return 0, fmt.Errorf("must be a whole number between %.0f and %.0f, got %s", lo, hi, string(raw))
	}
	return int64(f), nil
}

// httpClient is the bounded, proxy-aware client of a run's outbound calls.
func httpClient(l ModelLimits, getenv func(string) string) *http.Client {
	return httpx.New(httpx.Options{Limits: l.HTTP, Getenv: getenv})
}

// contextSetup is what start needs to manage the agent's context.
type contextSetup struct {
	limits  ModelLimits
	client  *http.Client
	catalog *catalog.Catalog
	// refresh, when set, fetches a fresher catalog for later runs.
	refresh func(ctx context.Context)
}

// prepareContext reads the limits and the catalog (no network: the cache
// or the embedded snapshot) and says whether a background refresh is due.
func prepareContext(ctx context.Context, o RunOptions, getenv func(string) string, warn func(string)) (contextSetup, error) {
	l, err := modelLimits(o.Config)
	if err != nil {
		return contextSetup{}, err
	}
	for _, w := range httpx.ProxyWarnings(getenv) {
		warn(w)
	}
	cs := contextSetup{limits: l, client: httpClient(l, getenv)}
	src := catalog.Source{Home: o.Config.Home, Getenv: getenv, Client: cs.client}
	cat, stale, warning := src.Load(ctx)
	if warning != "" {
		warn(warning)
	}
	cs.catalog = cat
	p := o.Agent.Config.LLMProvider
	if stale && !src.Offline() && !registry.Local(p) && p != "replay" {
		cs.refresh = func(ctx context.Context) {
			// For the runs after this one: never awaited, ended with the run.
			_, _, _ = src.Refresh(ctx)
		}
	}
	return cs, nil
}

// catalogRefreshDelay is how long a run lives before it starts fetching a
// fresher catalog. The fetch (a DNS lookup, a TLS handshake, a document of
// about a megabyte) cannot finish inside a shorter run, which exits first;
// started at once, it cost every one-turn run ~2% of its CPU (resolver
// goroutines, sockets) and bought nothing.
const catalogRefreshDelay = 500 * time.Millisecond

// refreshLater runs refresh(ctx) once ctx has lived for after, and never if
// ctx ends first (its timer is then stopped, so a long-lived process keeps
// nothing of an ended run).
func refreshLater(ctx context.Context, after time.Duration, refresh func(context.Context)) {
	t := time.AfterFunc(after, func() {
		if ctx.Err() == nil {
			refresh(ctx)
		}
	})
	context.AfterFunc(ctx, func() { t.Stop() })
}

// contextConfig is the top-level agent's context management, nil when
// ContextSwitchEnv turns it off. call is the agent's own model call, used
// for the summarizer unless summarizerModel names another.
func (r *Run) contextConfig(ctx context.Context, cs contextSetup, call actors.ModelCaller, emitter *events.Emitter,
	warnAs func(agent, msg string), getenv func(string) string) (*actors.ContextConfig, error) {
	if strings.EqualFold(strings.TrimSpace(getenv(ContextSwitchEnv)), "off") {
		return nil, nil
	}
	warn := func(msg string) { warnAs("", msg) }
	o := r.opts
	a := o.Agent.Config
	budget := r.budget(ctx, cs, a.LLMProvider, a.LLMModel, getenv, warn)
	cc := &actors.ContextConfig{
		Settings:         ctxmgr.Settings{Budget: budget, Warn: o.Config.Context.WarnThresholdRatio, Compact: o.Config.Context.CompactThresholdRatio},
		Summarize:        call,
		SummarizerModel:  a.LLMModel,
		SummarizerWindow: budget,
	}
	sm := strings.TrimSpace(a.SummarizerModel)
	if sm == "" {
		return cc, nil
	}
	sp, smodel, err := provider.ParseModelID(sm)
	if err != nil {
		warn(fmt.Sprintf("summarizerModel: %v; the agent's own model summarizes", err))
		return cc, nil
	}
	if sp == a.LLMProvider && smodel == a.LLMModel {
		return cc, nil
	}
	prov, err := openModel(ctx, o, getenv, sp, smodel)
	if err != nil {
		warn(fmt.Sprintf("summarizerModel %s: %v; the agent's own model summarizes", sm, err))
		return cc, nil
	}
	cc.Summarize = r.caller(prov, sp, emitter, warnAs)
	cc.SummarizerModel = smodel
	if w := cs.catalog.Window(sp, smodel); w > 0 {
		cc.SummarizerWindow = w
	}
	return cc, nil
}

// budget resolves the agent's token budget (agent-loop.md §4), asking a
// local server for its window when nothing pins it.
func (r *Run) budget(ctx context.Context, cs contextSetup, prov, model string, getenv func(string) string, warn func(string)) int {
	a := r.opts.Agent.Config
	w := ctxmgr.Window{Local: registry.Local(prov), Catalog: cs.catalog.Window(prov, model)}
	if a.NumCtx != nil {
		w.Pinned = *a.NumCtx
	}
	if a.MaxContextTokens != nil {
		w.MaxContextTokens = *a.MaxContextTokens
	}
	if w.Local && w.Pinned == 0 {
		pctx, done := context.WithTimeout(ctx, localProbe)
		defer done()
		base := registry.BaseURL(prov, providerSettings(r.opts, getenv, prov))
		var lw catalog.LocalWindow
		var err error
		if prov == "ollama" {
			lw, err = catalog.OllamaWindow(pctx, cs.client, base, model)
		} else {
			lw, err = catalog.LlamacppWindow(pctx, cs.client, base)
		}
		if err == nil {
			w.Server, w.ModelMax = lw.Server, lw.Max
		}
	}
	budget, _ := ctxmgr.Budget(w)
	if prov == "ollama" && w.Pinned == 0 {
		warn(fmt.Sprintf("numCtx is not set, so %s runs with Ollama's own context window; jazz budgets %d tokens. Set numCtx on the agent to pin it.", model, budget))
	}
	return budget
}

// caller is a model call of this run through prov (the provider named
// system): retried per agent-loop.md §6, every retry traced, told and
// sent as a recoverable error event, under the step ceiling, with the
// slow notice.
func (r *Run) caller(prov provider.Provider, system string, emitter *events.Emitter, warn func(agent, msg string)) actors.ModelCaller {
	o, place, tel := r.opts, r.place, r.tel
	l, _ := modelLimits(o.Config) // already checked when the provider was opened
	attempts := 1 + o.Config.MaxRetries
	agentName := o.Agent.Name
	return func(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
		resp, err := retry.Chat(ctx, prov, req, onDelta, retry.Options{
			Attempts:  attempts,
			Sleep:     o.RetrySleep,
			Ceiling:   l.Step,
			SlowAfter: l.Slow,
			Slow:      func(int) { warn("", retry.SlowMessage(agentName)) },
			Notify: func(n retry.Notice) {
				// ctx is the chat span's: the retry nests under it.
				tel.RecordRetry(ctx, telemetry.RetryInfo{System: system, Model: req.Model,
					Attempt: n.Attempt, Err: errText(n.Err), DelayMs: n.Delay.Milliseconds()})
				if n.Reason != "" {
					warn("", n.Message(agentName))
				}
				emitter.Emit(messages.Event{Type: messages.EventErrorType, Place: place,
					Err:         &messages.EventError{Name: "ProviderError", Message: n.Err.Error()},
					Recoverable: messages.Ptr(true)})
			},
		})
		var ce *retry.CeilingError
		if errors.As(err, &ce) {
			warn("", fmt.Sprintf("%s gave up on the model after %s (the step ceiling).", agentName, l.Step))
		}
		return resp, err
	}
}

// preamble is the work-state preamble of a resumed conversation, as a
// message, or false when nothing was kept.
func preamble(ctx context.Context, o RunOptions, set *secrets.Set, warn func(string)) (messages.ChatMessage, bool) {
	if o.Conversation == "" {
		return messages.ChatMessage{}, false
	}
	s := workstate.Store{Home: o.Config.Home, AgentID: o.Agent.ID, ConversationID: o.Conversation}
	text, err := s.Preamble(ctx)
	if err != nil {
		warn(fmt.Sprintf("work state of conversation %q: %v", o.Conversation, err))
	}
	if text == "" {
		return messages.ChatMessage{}, false
	}
	return messages.ChatMessage{Role: messages.RoleUser, Kind: messages.KindPreamble, Content: set.Redact(text)}, true
}

// projectInstructions is the AGENTS.md part of the system prompt.
func projectInstructions(ctx context.Context, o RunOptions, home string, set *secrets.Set, warn func(string)) string {
	files, warns := agentsmd.Discover(ctx, agentsmd.Options{Home: home, Cwd: o.Cwd, Guard: set.Guard(o.Config.Home), Redact: set.Redact})
	for _, w := range warns {
		warn(w)
	}
	return agentsmd.Section(files)
}
