package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/ctxmgr"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/telemetry"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/workstate"
)

// ContextConfig is how an agent keeps its history inside its model's
// window (agent-loop.md §4). The agent calls into it at the points the
// loop names: clear, warn and compact before each request, trim after
// each answer (and, so that no request is sent over the window, before a
// request too), calibrate on each usage report.
type ContextConfig struct {
	// Settings are the budget and ratios.
	Settings ctxmgr.Settings
	// Summarize is the summarizer's model call, made without tools; nil
	// leaves compaction out (clearing and trimming still apply).
	Summarize ModelCaller
	// SummarizerModel is the model Summarize is asked for.
	SummarizerModel string
	// SummarizerWindow is the summarizer's own window in tokens; its input
	// is at most ctxmgr.SummarizerShare of it.
	SummarizerWindow int
}

// window is an agent's context state; only the agent's Receive touches
// mgr and measure, and link is what its tool handlers read.
type window struct {
	cfg     *ContextConfig
	mgr     *ctxmgr.Manager
	measure ctxmgr.Measure
	link    *contextLink
}

// compactDone brings an automatic compaction's summary back into the
// actor; the summary is already in the journal.
type compactDone struct {
	iteration int
	plan      ctxmgr.Plan
	summary   string
	err       error
}

// compactApplied asks the agent to apply a summarize_context call's
// compaction, planned on the history as it was when the batch started.
type compactApplied struct {
	iteration int
	plan      ctxmgr.Plan
	summary   string
}

// startWindow sets up context management, when the agent has it, and
// gives the agent's tools their view of it.
func (a *Agent) startWindow(c *actor.Context) {
	cc := a.cfg.Context
	if cc == nil {
		return
	}
	w := &window{cfg: cc, mgr: ctxmgr.NewManager(cc.Settings)}
	w.link = &contextLink{engine: c.Engine(), self: c.PID(), summarize: a.summarizer()}
	w.link.budget.Store(int64(w.mgr.Settings().Budget))
	a.cx = w
	if a.cfg.Env != nil {
		env := *a.cfg.Env // the agent's own copy: the link is this agent's
		env.Context = w.link
		a.cfg.Env = &env
	}
}

// beforeRequest runs rungs 1–3 on the history; true means a compaction
// is under way and the request waits for its compactDone.
func (a *Agent) beforeRequest(c *actor.Context) bool {
	w := a.cx
	if w == nil {
		return false
	}
	used := w.mgr.Usage(a.history)
	if h, st, ok := w.mgr.Clear(a.history, used); ok {
		a.history = h
		a.rung(st, "")
		used = st.TokensAfter
	}
	if msg := w.mgr.Warning(used); msg != "" {
		a.warn(msg)
		a.rung(ctxmgr.Step{Rung: ctxmgr.RungWarn, TokensBefore: used, TokensAfter: used,
			MessagesBefore: len(a.history), MessagesAfter: len(a.history)}, "")
	}
	if !w.mgr.CompactDue(used) || w.cfg.Summarize == nil {
		return false
	}
	plan, ok := w.mgr.Plan(a.history, false)
	if !ok {
		return false
	}
	a.warn(w.mgr.CompactingNotice(used))
	engine, self, iter := c.Engine(), c.PID(), a.iteration
	summarize, ctx := w.link.summarize, a.iterCtx
	a.modelBusy = true // the summarizer is a model call: a stop waits for it
	supervisor.Go(func() {
		summary, err := summarize(ctx, plan)
		engine.Send(self, compactDone{iteration: iter, plan: plan, summary: summary, err: err})
	}, func(reason string) {
		engine.Send(self, compactDone{iteration: iter, plan: plan, err: fmt.Errorf("the summarizer crashed: %s", reason)})
	})
	return true
}

// compactDone applies an automatic compaction and sends the request
// that waited for it.
func (a *Agent) compactDone(c *actor.Context, m compactDone) {
	if a.finished || m.iteration != a.iteration || a.cx == nil {
		return
	}
	a.modelBusy = false
	if a.stopping != "" {
		a.stopped(c)
		return
	}
	if m.err != nil {
		a.warn(fmt.Sprintf("could not compact the context (%v); older messages will be dropped instead", m.err))
		a.rung(ctxmgr.Step{Rung: ctxmgr.RungCompact, MessagesBefore: len(a.history), MessagesAfter: len(a.history)}, m.err.Error())
	} else {
		a.applyCompaction(m.plan, m.summary)
	}
	a.request(c)
}

// applyCompaction puts a summary in place of the middle it summarizes.
func (a *Agent) applyCompaction(p ctxmgr.Plan, summary string) {
	before := a.history
	a.history = ctxmgr.Apply(a.history, p, summary)
	st := a.cx.mgr.Compacted(before, a.history)
	a.warn(ctxmgr.CompactedNotice(st))
	a.rung(st, "")
}

// compactApplied applies a summarize_context compaction, if the history
// is still the one it was planned on.
func (a *Agent) compactApplied(m compactApplied) {
	if a.finished || a.cx == nil || m.iteration != a.iteration || a.results == nil || len(a.history) < m.plan.End {
		return
	}
	a.applyCompaction(m.plan, m.summary)
}

// trim is rung 4 (and the last guard before a request): above the trim
// ratio, drop old messages.
func (a *Agent) trim() {
	w := a.cx
	if w == nil {
		return
	}
	h, st, ok := w.mgr.Trim(a.history, w.mgr.Usage(a.history))
	if !ok {
		return
	}
	a.history = h
	a.warn(ctxmgr.TrimWarning(st.MessagesBefore - st.MessagesAfter))
	a.rung(st, "")
}

// contextPressure is the context line of the next request, "" when
// there is none; it also records how big the request is, for the
// calibration its usage brings.
func (a *Agent) contextPressure(specs []messages.ToolSpec) string {
	w := a.cx
	if w == nil {
		return ""
	}
	n := 0
	for _, s := range specs {
		n += len(s.Name) + len(s.Description) + len(s.Parameters) + 32
	}
	w.mgr.ToolBytes = n
	used := w.mgr.Usage(a.history)
	w.link.used.Store(int64(used))
	return w.mgr.Pressure(used)
}

// measured notes the request as sent, for calibrate.
func (a *Agent) measured(msgs []messages.ChatMessage) {
	if w := a.cx; w != nil {
		w.measure = w.mgr.Counter().Measure(msgs, w.mgr.ToolBytes)
	}
}

// calibrate learns from the answer's usage how the model counts.
func (a *Agent) calibrate(m modelDone) {
	if w := a.cx; w != nil && m.resp.UsageReported && m.refused == nil {
		w.mgr.Counter().Calibrate(w.measure, m.resp.Usage.PromptTokens)
	}
}

// batchStarted lets a summarize_context call in the batch plan on the
// history as it is now, without the assistant message whose calls are
// running.
func (a *Agent) batchStarted() {
	w := a.cx
	if w == nil || len(a.history) == 0 {
		return
	}
	w.link.used.Store(int64(w.mgr.Usage(a.history)))
	w.link.setSnapshot(a.history[:len(a.history)-1], *w.mgr.Counter(), w.mgr.Settings().Budget, a.iteration)
}

// rung reports one context step as an event and a span.
func (a *Agent) rung(st ctxmgr.Step, errText string) {
	budget := 0
	if a.cx != nil {
		budget = a.cx.mgr.Settings().Budget
	}
	body := &messages.EventContext{Rung: st.Rung, TokensBefore: st.TokensBefore, TokensAfter: st.TokensAfter, TokensSaved: max(st.Saved(), 0),
		MessagesBefore: st.MessagesBefore, MessagesAfter: st.MessagesAfter, Budget: budget}
	for _, cl := range st.Cleared {
		body.Cleared = append(body.Cleared, messages.EventCleared{ToolCallID: cl.CallID, ToolName: cl.Tool, Tokens: cl.Tokens})
	}
	a.cfg.Events.Emit(messages.Event{Type: messages.EventContextManaged, Place: a.cfg.Place, Trace: a.trace, Context: body})
	a.cfg.Telemetry.RecordContext(a.iterCtx, telemetry.ContextInfo{Rung: st.Rung, TokensBefore: st.TokensBefore, TokensAfter: st.TokensAfter,
		MessagesBefore: st.MessagesBefore, MessagesAfter: st.MessagesAfter, Budget: budget, Cleared: len(st.Cleared), Err: errText})
}

// summarizer is the agent's compaction call: the plan's middle goes to
// the summarizer model with no tools and never the system prompt, its
// spend is recorded, and the summary is journaled before it is returned
// (and so before it enters the context). It runs off the actor.
func (a *Agent) summarizer() func(ctx context.Context, p ctxmgr.Plan) (string, error) {
	cc := a.cfg.Context
	call, model, led, dl, tel := cc.Summarize, cc.SummarizerModel, a.ledger, a.cfg.Deadline, a.cfg.Telemetry
	prov := a.cfg.Provider
	maxChars := int(ctxmgr.SummarizerShare * float64(summarizerWindow(cc)) * 3) // 3 bytes a token: the input stays under its share
	var journal *workstate.Store
	if env := a.cfg.Env; env != nil && a.cfg.Place.Depth == 0 {
		journal = &workstate.Store{Home: env.JazzHome, AgentID: env.AgentID, ConversationID: env.ConversationID, Redact: env.Secrets.RedactJSON}
	}
	warn := a.warn
	return func(ctx context.Context, p ctxmgr.Plan) (string, error) {
		if call == nil {
			return "", errors.New("no summarizer is configured")
		}
		defer dl.Busy()()
		req := provider.Request{Model: model, Messages: []messages.ChatMessage{
			{Role: messages.RoleSystem, Content: ctxmgr.SummarizerSystem},
			{Role: messages.RoleUser, Content: ctxmgr.SummarizerInput(p, maxChars)},
		}}
		cctx, chat := tel.StartChat(ctx, telemetry.ChatInfo{System: prov, Model: model})
		resp, err := call(cctx, req, nil)
		chat.End(chatResult(resp, err, nil))
		if err != nil {
			return "", err
		}
		_ = led.RecordUsage(resp.Usage, resp.UsageReported)
		summary := strings.TrimSpace(resp.Message.Content)
		if summary == "" {
			return "", errors.New("the summarizer returned nothing")
		}
		if journal != nil {
			if err := journal.Append(ctx, workstate.Entry{Summary: summary, MessagesBefore: p.End}); err != nil && !errors.Is(err, workstate.ErrNoConversation) {
				warn(fmt.Sprintf("could not journal the context summary: %v", err))
			}
		}
		return summary, nil
	}
}

func summarizerWindow(cc *ContextConfig) int {
	if cc.SummarizerWindow > 0 {
		return cc.SummarizerWindow
	}
	return cc.Settings.Budget
}

// contextLink is an agent's tools.ContextWindow, called from its tool
// handlers' goroutines: what it reads is set by the agent at the start of
// each batch, and a compaction it makes reaches the agent as a message.
type contextLink struct {
	engine    *actor.Engine
	self      *actor.PID
	summarize func(ctx context.Context, p ctxmgr.Plan) (string, error)
	used      atomic.Int64
	budget    atomic.Int64

	mu         sync.Mutex
	snapshot   []messages.ChatMessage
	counter    ctxmgr.Counter
	iteration  int
	compacting bool
}

var _ tools.ContextWindow = (*contextLink)(nil)

func (l *contextLink) setSnapshot(h []messages.ChatMessage, c ctxmgr.Counter, budget, iteration int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.snapshot = append([]messages.ChatMessage(nil), h...)
	l.counter = c
	l.iteration = iteration
	l.budget.Store(int64(budget))
}

// Usage is the agent's estimate of its next request and its budget.
func (l *contextLink) Usage() (int, int) { return int(l.used.Load()), int(l.budget.Load()) }

// Compact summarizes the older part of the history as it was when this
// call's batch started, and has the agent put the summary in its place.
// One compaction per batch: a second call in the same batch finds nothing
// to do.
func (l *contextLink) Compact(ctx context.Context) (tools.Compaction, error) {
	l.mu.Lock()
	if l.compacting || l.snapshot == nil {
		l.mu.Unlock()
		return tools.Compaction{Nothing: true}, nil
	}
	l.compacting = true
	h, counter, iter, budget := l.snapshot, l.counter, l.iteration, int(l.budget.Load())
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.compacting = false
		l.snapshot = nil // used: the history changes under it
		l.mu.Unlock()
	}()
	nonSystem := 0
	for _, m := range h {
		if m.Role != messages.RoleSystem {
			nonSystem++
		}
	}
	if nonSystem <= 1 {
		return tools.Compaction{Empty: true}, nil
	}
	p, ok := ctxmgr.PlanCompaction(h, &counter, budget)
	if !ok {
		return tools.Compaction{Nothing: true}, nil
	}
	summary, err := l.summarize(ctx, p)
	if err != nil {
		return tools.Compaction{}, err
	}
	after := len(ctxmgr.Apply(h, p, summary))
	l.engine.Send(l.self, compactApplied{iteration: iter, plan: p, summary: summary})
	replaced := p.To - p.From
	if p.Task >= 0 {
		replaced--
	}
	// The assistant message whose batch is running counts on both sides.
	return tools.Compaction{Before: len(h) + 1, After: after + 1, Summarized: replaced}, nil
}
