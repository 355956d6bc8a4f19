package telemetry

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/jazz-run/jazz/messages"
)

// Span names (telemetry.md §3, plus jazz's own iteration, gate and subagent spans).
const (
	spanAgent     = "agent"
	spanChat      = "chat"
	spanRetry     = "llm retry"
	spanTool      = "tool"
	spanIteration = "iteration"
	spanGate      = "gate"
	spanSubagent  = "subagent"
)

// Run outcomes for RunResult.Outcome and the jazz.runs metric.
const (
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
)

// Error kinds: what a failed span says with captureContent off, in
// place of its error text.
const (
	errTool      = "tool_error"
	errDeclined  = "declined"
	errLLM       = "llm_error"
	errRetry     = "llm_retry"
	errIteration = "iteration_failed"
	// unknownTool names a tool call whose name is not a registered tool.
	unknownTool = "unknown"
)

// Approval outcomes for ToolOutcome.Approval, GateDecision.Outcome and the
// jazz.approvals metric.
const (
	ApprovalNotRequired = "not_required"
	ApprovalApproved    = "approved"
	ApprovalDenied      = "denied"
)

// IDs are the identifiers every span of a run carries (jazz.run.id,
// jazz.agent.id, jazz.conversation.id). StartRun and StartSubagent put them
// in the context; an actor that only has an extracted carrier can put them
// back with WithIDs.
type IDs struct {
	RunID          string
	AgentID        string
	AgentName      string
	ConversationID string
}

type idsKey struct{}

// WithIDs returns ctx carrying ids for the spans started under it.
func WithIDs(ctx context.Context, ids IDs) context.Context {
	return context.WithValue(ctx, idsKey{}, ids)
}

// IDsFrom returns the ids ctx carries, zero when none.
func IDsFrom(ctx context.Context) IDs {
	ids, _ := ctx.Value(idsKey{}).(IDs)
	return ids
}

func (ids IDs) attrs(kv []attribute.KeyValue) []attribute.KeyValue {
	kv = appendNonEmpty(kv, "jazz.run.id", ids.RunID)
	kv = appendNonEmpty(kv, "jazz.agent.id", ids.AgentID)
	return appendNonEmpty(kv, "jazz.conversation.id", ids.ConversationID)
}

func appendNonEmpty(kv []attribute.KeyValue, key, value string) []attribute.KeyValue {
	if value == "" {
		return kv
	}
	return append(kv, attribute.String(key, value))
}

// instruments are the metrics of telemetry.md, created once per Telemetry.
type instruments struct {
	tokens    metric.Int64Counter
	cost      metric.Float64Counter
	toolMs    metric.Float64Histogram
	approvals metric.Int64Counter
	runs      metric.Int64Counter
}

func newInstruments(m metric.Meter) instruments {
	// The SDK returns a working no-op instrument alongside any error, so
	// errors (only possible for invalid names, which these are not) are
	// ignored rather than turned into a failed run.
	var in instruments
	in.tokens, _ = m.Int64Counter("jazz.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Model tokens, by type (input or output)."))
	in.cost, _ = m.Float64Counter("jazz.cost.usd", metric.WithUnit("USD"),
		metric.WithDescription("Estimated model cost in US dollars."))
	in.toolMs, _ = m.Float64Histogram("jazz.tool.duration", metric.WithUnit("ms"),
		metric.WithDescription("Tool call duration."))
	in.approvals, _ = m.Int64Counter("jazz.approvals", metric.WithUnit("{decision}"),
		metric.WithDescription("Gate decisions, by outcome and decider."))
	in.runs, _ = m.Int64Counter("jazz.runs", metric.WithUnit("{run}"),
		metric.WithDescription("Finished runs, by outcome."))
	return in
}

// start opens a span under ctx with the run ids and the given attributes,
// all passed through the content filter.
func (t *Telemetry) start(ctx context.Context, name string, at time.Time, kv ...attribute.KeyValue) (context.Context, trace.Span) {
	all := IDsFrom(ctx).attrs(make([]attribute.KeyValue, 0, len(kv)+3))
	all = filter(t.capture, append(all, kv...))
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(all...)}
	if !at.IsZero() {
		opts = append(opts, trace.WithTimestamp(at))
	}
	// Names carry model text only with capture on; the exporter takes
	// the run's secrets out of them.
	return t.Tracer.Start(ctx, name, opts...)
}

// Attrs passes attributes through the content filter: content keys dropped
// unless captureContent is on, strings cut. Every attribute jazz sets goes
// through it; use it for attributes set on spans directly.
func (t *Telemetry) Attrs(kv ...attribute.KeyValue) []attribute.KeyValue {
	if t == nil {
		return filter(false, kv)
	}
	return filter(t.capture, kv)
}

// callID is a tool-call id as exported: the model chooses those, so with
// captureContent off only a fingerprint keyed per process goes out (equal
// ids still match across spans, the text never leaves).
func (t *Telemetry) callID(id string) string {
	if id == "" || t.capture {
		return id
	}
	m := hmac.New(sha256.New, t.idKey)
	m.Write([]byte(id))
	return "h:" + hex.EncodeToString(m.Sum(nil)[:8])
}

// handle is what every span handle holds. A zero handle is a no-op.
type handle struct {
	t     *Telemetry
	span  trace.Span
	start time.Time
}

func (h handle) ok() bool { return h.span != nil }

// Span returns the underlying span (a no-op span for a no-op handle).
func (h handle) Span() trace.Span {
	if h.span == nil {
		return trace.SpanFromContext(context.Background())
	}
	return h.span
}

// SetAttributes adds attributes to the span through the content filter.
func (h handle) SetAttributes(kv ...attribute.KeyValue) {
	if h.ok() {
		h.span.SetAttributes(filter(h.t.capture, kv)...)
	}
}

// end sets status and ends the span. A failure is exported as its kind
// (a fixed word such as "tool_error") unless captureContent is on: error
// texts carry what the model chose (paths, commands, names), so they are
// content. With capture on the text goes out without the run's secrets
// (the exporter replaces them).
func (h handle) end(kind, errText string, kv ...attribute.KeyValue) {
	if errText != "" {
		msg := kind
		if h.t.capture {
			msg = cut(errText, keepLen(true))
		}
		kv = append(kv, attribute.String("jazz.error", msg))
		h.span.SetStatus(codes.Error, msg)
	}
	h.span.SetAttributes(filter(h.t.capture, kv)...)
	h.span.End()
}

func (h handle) elapsedMs() int64 { return time.Since(h.start).Milliseconds() }

// RunInfo describes a run (or a subagent) as it starts.
type RunInfo struct {
	RunID          string
	AgentID        string
	AgentName      string
	ConversationID string
	// Parent is the caller's trace context (TRACEPARENT, a parent process,
	// a remote request). When it holds a valid traceparent the run is its
	// child; otherwise the run starts a new trace (or, for a subagent,
	// nests under the span in ctx).
	Parent messages.Trace
	// Depth is 0 for the top-level agent, 1+ for subagents.
	Depth int
	// Model is the run's configured model, for the root span.
	Model string
}

// RunResult is how a run (or subagent) ended: rollups for the root span.
type RunResult struct {
	// Outcome is OutcomeCompleted, OutcomeFailed, OutcomeCancelled or a
	// more specific word ("max_iterations"); empty means completed, or
	// failed when Err is set.
	Outcome    string
	Err        string
	Iterations int
	Usage      messages.Usage
	CostUSD    float64
}

// RunSpan is the root span of a run, or the span of a subagent. The zero
// value is a no-op.
type RunSpan struct {
	handle
	subagent bool
}

// StartRun opens the root span of a run: `agent <agentName>`, a new trace
// unless info.Parent carries the caller's traceparent. The returned ctx
// carries the span and the run ids for every child span.
func (t *Telemetry) StartRun(ctx context.Context, info RunInfo) (context.Context, RunSpan) {
	if len(info.Parent) > 0 {
		ctx = Extract(ctx, info.Parent)
	}
	if !t.Enabled() {
		return ctx, RunSpan{}
	}
	ctx = WithIDs(ctx, IDs{RunID: info.RunID, AgentID: info.AgentID, AgentName: info.AgentName, ConversationID: info.ConversationID})
	ctx, span := t.start(ctx, joinName(spanAgent, info.AgentName, "run"), time.Time{}, runAttrs(info, true)...)
	return ctx, RunSpan{handle: handle{t: t, span: span, start: time.Now()}}
}

// SubagentInfo describes a subagent as it is spawned.
type SubagentInfo = RunInfo

// StartSubagent opens `subagent <name>` under ctx, which should be the
// ctx of the `tool spawn_subagent` span that spawned it, so the subagent's
// iterations, model requests and tools nest under that tool call. Empty
// ids are inherited from ctx (a subagent shares its parent's run id).
func (t *Telemetry) StartSubagent(ctx context.Context, info SubagentInfo) (context.Context, RunSpan) {
	if len(info.Parent) > 0 {
		ctx = Extract(ctx, info.Parent)
	}
	if !t.Enabled() {
		return ctx, RunSpan{}
	}
	parent := IDsFrom(ctx)
	ids := IDs{
		RunID:          firstNonEmpty(info.RunID, parent.RunID),
		AgentID:        firstNonEmpty(info.AgentID, parent.AgentID),
		AgentName:      firstNonEmpty(info.AgentName, parent.AgentName),
		ConversationID: firstNonEmpty(info.ConversationID, parent.ConversationID),
	}
	ctx = WithIDs(ctx, ids)
	// A subagent's name is the model's choice (spawn_subagent's name):
	// content, exported only with captureContent on.
	kv := runAttrs(info, t.capture)
	kv = appendNonEmpty(kv, "jazz.parentAgent.id", parent.AgentID)
	name := spanSubagent
	if t.capture {
		name = joinName(spanSubagent, info.AgentName, "")
	}
	ctx, span := t.start(ctx, name, time.Time{}, kv...)
	return ctx, RunSpan{handle: handle{t: t, span: span, start: time.Now()}, subagent: true}
}

func runAttrs(info RunInfo, withName bool) []attribute.KeyValue {
	kv := []attribute.KeyValue{attribute.Int("jazz.agent.depth", info.Depth)}
	if withName {
		kv = appendNonEmpty(kv, "jazz.agent.name", info.AgentName)
	}
	return appendNonEmpty(kv, "jazz.model", info.Model)
}

// End closes the run span with its rollups (no gen_ai.* here, so backends
// do not count tokens twice) and counts the run in jazz.runs. Call it once.
func (r RunSpan) End(res RunResult) {
	if !r.ok() {
		return
	}
	outcome := word(res.Outcome, OutcomeFailed)
	if res.Outcome == "" {
		outcome = OutcomeCompleted
		if res.Err != "" {
			outcome = OutcomeFailed
		}
	}
	eventType := "agent_run_completed"
	if res.Err != "" || outcome == OutcomeFailed {
		eventType = "agent_run_failed"
	}
	errText := res.Err
	if errText == "" && outcome == OutcomeFailed {
		errText = "run failed"
	}
	r.end(outcome, errText,
		attribute.String("jazz.event.type", eventType),
		attribute.String("jazz.outcome", outcome),
		attribute.Int("jazz.iterations", res.Iterations),
		attribute.Int64("jazz.durationMs", r.elapsedMs()),
		attribute.Int("jazz.usage.promptTokens", res.Usage.PromptTokens),
		attribute.Int("jazz.usage.completionTokens", res.Usage.CompletionTokens),
		attribute.Int("jazz.usage.totalTokens", res.Usage.TotalTokens),
		attribute.Float64("jazz.costUsd", res.CostUSD),
	)
	r.t.inst.runs.Add(context.Background(), 1, metric.WithAttributes(r.t.Attrs(
		attribute.String("outcome", outcome),
		attribute.Bool("subagent", r.subagent),
	)...))
}

// Span is a plain child span (an iteration). The zero value is a no-op.
type Span struct{ handle }

// StartIteration opens `iteration <n>` under the run (or subagent) in ctx.
func (t *Telemetry) StartIteration(ctx context.Context, n int) (context.Context, Span) {
	if !t.Enabled() {
		return ctx, Span{}
	}
	ctx, span := t.start(ctx, spanIteration+" "+strconv.Itoa(n), time.Time{}, attribute.Int("jazz.iteration", n))
	return ctx, Span{handle{t: t, span: span, start: time.Now()}}
}

// End closes the span; errText, when set, marks it failed.
func (s Span) End(errText string) {
	if s.ok() {
		s.end(errIteration, errText)
	}
}

// ChatInfo describes one model request.
type ChatInfo struct {
	// System is the provider ("anthropic", "openai", …): gen_ai.system.
	System string
	// Model is the requested model: gen_ai.request.model.
	Model     string
	Iteration int
	// Attempt is the 1-based attempt number when the call is retried.
	Attempt int
}

// ChatResult is how a model request ended.
type ChatResult struct {
	// ResponseModel is the model that answered, when the provider says.
	ResponseModel string
	Usage         messages.Usage
	CostUSD       float64
	FinishReason  string
	Err           string
}

// ChatSpan is the span of one model request. The zero value is a no-op.
type ChatSpan struct {
	handle
	info ChatInfo
}

// StartChat opens `chat <model>` with the GenAI semantic-convention
// attributes (only chat and retry spans carry gen_ai.*).
func (t *Telemetry) StartChat(ctx context.Context, info ChatInfo) (context.Context, ChatSpan) {
	if !t.Enabled() {
		return ctx, ChatSpan{}
	}
	kv := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.system", info.System),
		attribute.String("gen_ai.request.model", info.Model),
	}
	if info.Iteration > 0 {
		kv = append(kv, attribute.Int("jazz.iteration", info.Iteration))
	}
	if info.Attempt > 0 {
		kv = append(kv, attribute.Int("jazz.attempt", info.Attempt))
	}
	ctx, span := t.start(ctx, joinName(spanChat, info.Model, ""), time.Time{}, kv...)
	return ctx, ChatSpan{handle: handle{t: t, span: span, start: time.Now()}, info: info}
}

// End closes the chat span with usage and cost and adds them to the
// jazz.tokens and jazz.cost.usd metrics. Call it once.
func (c ChatSpan) End(res ChatResult) {
	if !c.ok() {
		return
	}
	kv := []attribute.KeyValue{
		attribute.String("jazz.event.type", "llm_usage"),
		attribute.Int("gen_ai.usage.input_tokens", res.Usage.PromptTokens),
		attribute.Int("gen_ai.usage.output_tokens", res.Usage.CompletionTokens),
		attribute.Int("jazz.usage.totalTokens", res.Usage.TotalTokens),
		attribute.Int64("jazz.durationMs", c.elapsedMs()),
		attribute.Float64("jazz.costUsd", res.CostUSD),
	}
	kv = appendNonEmpty(kv, "gen_ai.response.model", word(res.ResponseModel, ""))
	if res.FinishReason != "" {
		kv = append(kv, attribute.String("jazz.finishReason", word(res.FinishReason, "other")))
	}
	if res.Usage.ReasoningTokens > 0 {
		kv = append(kv, attribute.Int("jazz.usage.reasoningTokens", res.Usage.ReasoningTokens))
	}
	if res.Usage.CacheReadTokens > 0 {
		kv = append(kv, attribute.Int("jazz.usage.cacheReadTokens", res.Usage.CacheReadTokens))
	}
	if res.Usage.CacheWriteTokens > 0 {
		kv = append(kv, attribute.Int("jazz.usage.cacheWriteTokens", res.Usage.CacheWriteTokens))
	}
	c.end(errLLM, res.Err, kv...)

	ctx := context.Background()
	model := c.t.Attrs(attribute.String("model", c.info.Model), attribute.String("system", c.info.System))
	if n := res.Usage.PromptTokens; n > 0 {
		c.t.inst.tokens.Add(ctx, int64(n), metric.WithAttributes(append(model, attribute.String("type", "input"))...))
	}
	if n := res.Usage.CompletionTokens; n > 0 {
		c.t.inst.tokens.Add(ctx, int64(n), metric.WithAttributes(append(model[:len(model):len(model)], attribute.String("type", "output"))...))
	}
	if res.CostUSD > 0 {
		c.t.inst.cost.Add(ctx, res.CostUSD, metric.WithAttributes(model...))
	}
}

// RetryInfo describes one failed model attempt that will be retried.
type RetryInfo struct {
	System  string
	Model   string
	Attempt int
	Err     string
	DelayMs int64
}

// RecordRetry records an `llm retry` span under ctx (the chat span's ctx).
func (t *Telemetry) RecordRetry(ctx context.Context, info RetryInfo) {
	if !t.Enabled() {
		return
	}
	_, span := t.start(ctx, spanRetry, time.Time{},
		attribute.String("jazz.event.type", "llm_retry"),
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.system", info.System),
		attribute.String("gen_ai.request.model", info.Model),
		attribute.Int("jazz.attempt", info.Attempt),
		attribute.Int64("jazz.delayMs", info.DelayMs),
	)
	handle{t: t, span: span}.end(errRetry, info.Err)
}

// ToolInfo describes one tool call as it starts.
type ToolInfo struct {
	// Name is the tool the model called. Unless Registered, it is the
	// model's own text and is exported as "unknown" with captureContent off.
	Name string
	// Registered says Name is a tool of the agent's registry.
	Registered bool
	// CallID is the model's id for the call (exported as a fingerprint
	// with captureContent off).
	CallID string
	// RiskTier is the tool's level (messages.LevelReadOnly, …).
	RiskTier  string
	Iteration int
}

// ToolOutcome is how a tool call ended.
type ToolOutcome struct {
	Success   bool
	Truncated bool
	// Approval is ApprovalNotRequired, ApprovalApproved or ApprovalDenied.
	Approval string
	// DecidedBy is who decided (messages.DecidedByHuman, …).
	DecidedBy string
	// Executed names the tool that finally ran (the twin after approval).
	Executed string
	Err      string
	// DurationMs overrides the measured duration when the caller timed it.
	DurationMs int64
}

// ToolSpan is the span of one tool call. The zero value is a no-op.
type ToolSpan struct {
	handle
	name string
}

// StartTool opens `tool <name>`. Gate decisions and, for spawn_subagent,
// the subagent nest under the returned ctx.
func (t *Telemetry) StartTool(ctx context.Context, info ToolInfo) (context.Context, ToolSpan) {
	if !t.Enabled() {
		return ctx, ToolSpan{}
	}
	name := info.Name
	if !info.Registered && !t.capture && name != "" {
		name = unknownTool
	}
	kv := []attribute.KeyValue{attribute.String("jazz.toolName", name)}
	kv = appendNonEmpty(kv, "jazz.toolCallId", t.callID(info.CallID))
	kv = appendNonEmpty(kv, "jazz.riskTier", word(info.RiskTier, ""))
	if info.Iteration > 0 {
		kv = append(kv, attribute.Int("jazz.iteration", info.Iteration))
	}
	ctx, span := t.start(ctx, joinName(spanTool, name, ""), time.Time{}, kv...)
	return ctx, ToolSpan{handle: handle{t: t, span: span, start: time.Now()}, name: name}
}

// End closes the tool span and records its duration in jazz.tool.duration.
// Call it once.
func (s ToolSpan) End(out ToolOutcome) {
	if !s.ok() {
		return
	}
	ms := out.DurationMs
	if ms <= 0 {
		ms = s.elapsedMs()
	}
	eventType := "tool_invocation"
	errText, kind := "", errTool
	if !out.Success {
		eventType = "tool_error"
		errText = out.Err
		if errText == "" {
			errText = "tool failed"
		}
		if out.Approval == ApprovalDenied {
			kind = errDeclined
		}
	}
	kv := []attribute.KeyValue{
		attribute.String("jazz.event.type", eventType),
		attribute.Bool("jazz.success", out.Success),
		attribute.Bool("jazz.truncated", out.Truncated),
		attribute.Int64("jazz.durationMs", ms),
	}
	kv = appendNonEmpty(kv, "jazz.approval", word(out.Approval, ""))
	kv = appendNonEmpty(kv, "jazz.decidedBy", word(out.DecidedBy, ""))
	kv = appendNonEmpty(kv, "jazz.executed", word(out.Executed, ""))
	s.end(kind, errText, kv...)
	s.t.inst.toolMs.Record(context.Background(), float64(ms), metric.WithAttributes(s.t.Attrs(
		attribute.String("tool", s.name),
		attribute.Bool("success", out.Success),
	)...))
}

// GateDecision is one decision of the approval gate on a gated call.
type GateDecision struct {
	ToolName string
	CallID   string
	RiskTier string
	Approved bool
	// Outcome defaults to ApprovalApproved or ApprovalDenied from Approved.
	Outcome string
	// DecidedBy is who decided (messages.DecidedByPolicy, …).
	DecidedBy string
	Remember  string
	// Asked is when the gate started waiting; zero means now, a
	// zero-length span. The approver's note is content and never exported.
	Asked time.Time
}

// RecordGateDecision records `gate <toolName>` under ctx (the tool span's
// ctx), from Asked to now, and counts it in jazz.approvals.
func (t *Telemetry) RecordGateDecision(ctx context.Context, d GateDecision) {
	if !t.Enabled() {
		return
	}
	outcome := d.Outcome
	if outcome == "" {
		outcome = ApprovalDenied
		if d.Approved {
			outcome = ApprovalApproved
		}
	}
	kv := []attribute.KeyValue{
		attribute.String("jazz.event.type", "gate_decision"),
		attribute.String("jazz.toolName", d.ToolName),
		attribute.Bool("jazz.approved", d.Approved),
		attribute.String("jazz.outcome", outcome),
	}
	kv = appendNonEmpty(kv, "jazz.toolCallId", t.callID(d.CallID))
	kv = appendNonEmpty(kv, "jazz.riskTier", word(d.RiskTier, ""))
	kv = appendNonEmpty(kv, "jazz.decidedBy", word(d.DecidedBy, "other"))
	kv = appendNonEmpty(kv, "jazz.remember", word(d.Remember, "other"))
	_, span := t.start(ctx, joinName(spanGate, d.ToolName, ""), d.Asked, kv...)
	span.End()
	t.inst.approvals.Add(ctx, 1, metric.WithAttributes(t.Attrs(
		attribute.String("outcome", word(outcome, "other")),
		attribute.String("decided_by", word(d.DecidedBy, "other")),
	)...))
}

// joinName is "<kind> <what>", or "<kind> <fallback>" / "<kind>" when what is empty.
func joinName(kind, what, fallback string) string {
	if what == "" {
		what = fallback
	}
	if what == "" {
		return kind
	}
	return kind + " " + cut(what, MaxContentLen)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
