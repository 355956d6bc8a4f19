package telemetry_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/telemetry"
	"github.com/jazz-run/jazz/telemetry/otlptest"
)

// warnings records what Setup and Shutdown report.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) add(s string) {
	w.mu.Lock()
	w.msgs = append(w.msgs, s)
	w.mu.Unlock()
}

func (w *warnings) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// setup resolves settings for the receiver and builds a Telemetry.
func setup(t testing.TB, r *otlptest.Receiver, protocol string, cfg telemetry.Settings) (*telemetry.Telemetry, *warnings) {
	t.Helper()
	cfg.Endpoint = r.HTTPURL
	if protocol == telemetry.ProtocolGRPC {
		cfg.Endpoint = r.GRPCURL
	}
	cfg.Protocol = protocol
	s, warns := telemetry.Resolve(cfg, env(nil))
	if len(warns) > 0 || !s.On() {
		t.Fatalf("Resolve: on=%v warnings %q", s.On(), warns)
	}
	w := &warnings{}
	tel := telemetry.Setup(context.Background(), s, w.add)
	if !tel.Enabled() {
		t.Fatalf("Setup returned a disabled Telemetry; warnings %q", w.list())
	}
	return tel, w
}

func waitCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func waitSpans(t testing.TB, r *otlptest.Receiver, n int) otlptest.Spans {
	t.Helper()
	spans, err := r.WaitSpans(waitCtx(t), n)
	if err != nil {
		t.Fatal(err)
	}
	return spans
}

func one(t testing.TB, spans otlptest.Spans, name string) otlptest.Span {
	t.Helper()
	s, err := spans.One(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustParent(t testing.TB, traceparent, tracestate string) messages.Trace {
	t.Helper()
	c, err := telemetry.ParseTraceparent(traceparent, tracestate)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var longText = strings.Repeat("é", 300) // 300 characters, 600 bytes

// runTree records the span tree of one run with a subagent and a gate.
func runTree(tel *telemetry.Telemetry, parent messages.Trace) {
	ctx, run := tel.StartRun(context.Background(), telemetry.RunInfo{
		RunID: "run-1", AgentID: "agent-1", AgentName: "coder", ConversationID: "conv-1", Model: "claude-x", Parent: parent,
	})
	ictx, it := tel.StartIteration(ctx, 1)

	_, chat := tel.StartChat(ictx, telemetry.ChatInfo{System: "anthropic", Model: "claude-x", Iteration: 1})
	chat.SetAttributes(
		attribute.String("gen_ai.prompt", "the secret prompt"),
		attribute.String("jazz.completion", "the secret completion"),
		attribute.String("jazz.note", longText),
	)
	chat.End(telemetry.ChatResult{ResponseModel: "claude-x-2", Usage: messages.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, CacheReadTokens: 3}, CostUSD: 0.25})

	tctx, tool := tel.StartTool(ictx, telemetry.ToolInfo{Name: "edit_file", Registered: true, CallID: "call-1", RiskTier: messages.LevelHighRisk, Iteration: 1})
	tel.RecordGateDecision(tctx, telemetry.GateDecision{ToolName: "edit_file", CallID: "call-1", RiskTier: messages.LevelHighRisk,
		Approved: true, DecidedBy: messages.DecidedByHuman, Asked: time.Now().Add(-time.Second)})
	tool.SetAttributes(attribute.String("jazz.arguments", `{"path":"secret.txt"}`), attribute.String("jazz.Result", "secret result"))
	tool.End(telemetry.ToolOutcome{Success: true, Truncated: true, Approval: telemetry.ApprovalApproved, DecidedBy: messages.DecidedByHuman, Executed: "execute_edit_file"})

	_, bad := tel.StartTool(ictx, telemetry.ToolInfo{Name: "read_file", Registered: true, CallID: "call-2"})
	bad.End(telemetry.ToolOutcome{Err: "no such file: " + longText, DurationMs: 7})

	sctx, spawn := tel.StartTool(ictx, telemetry.ToolInfo{Name: "spawn_subagent", Registered: true, CallID: "call-3"})
	subctx, sub := tel.StartSubagent(sctx, telemetry.SubagentInfo{AgentID: "agent-2", AgentName: "researcher", Depth: 1})
	sictx, sit := tel.StartIteration(subctx, 1)
	_, schat := tel.StartChat(sictx, telemetry.ChatInfo{System: "openai", Model: "gpt-x"})
	schat.End(telemetry.ChatResult{Usage: messages.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}})
	sit.End("")
	sub.End(telemetry.RunResult{Iterations: 1})
	spawn.End(telemetry.ToolOutcome{Success: true})

	it.End("")
	run.End(telemetry.RunResult{Iterations: 1, Usage: messages.Usage{PromptTokens: 11, CompletionTokens: 6, TotalTokens: 17}, CostUSD: 0.25})
}

func TestExportSpanTree(t *testing.T) {
	for _, protocol := range []string{telemetry.ProtocolHTTPProtobuf, telemetry.ProtocolHTTPJSON, telemetry.ProtocolGRPC} {
		t.Run(protocol, func(t *testing.T) {
			r := otlptest.Start(t)
			tel, w := setup(t, r, protocol, telemetry.Settings{ServiceVersion: "1.2.3"})
			runTree(tel, nil)
			tel.Shutdown(context.Background())
			if got := w.list(); len(got) > 0 {
				t.Errorf("warnings from a healthy collector: %q", got)
			}
			spans := waitSpans(t, r, 10)
			checkTree(t, spans)
			checkMetrics(t, r)
		})
	}
}

func checkTree(t *testing.T, spans otlptest.Spans) {
	t.Helper()
	if len(spans) != 10 {
		t.Fatalf("got %d spans %v, want 10", len(spans), spans.Names())
	}
	one := func(name string) otlptest.Span { t.Helper(); return one(t, spans, name) }
	parentOf := func(child, parent otlptest.Span) {
		t.Helper()
		if child.ParentSpanID != parent.SpanID || child.TraceID != parent.TraceID {
			t.Errorf("%v is not a child of %v", child, parent)
		}
	}
	root := one("agent coder")
	if root.ParentSpanID != "" {
		t.Errorf("root span has parent %s", root.ParentSpanID)
	}
	its := spans.Named("iteration 1")
	if len(its) != 2 {
		t.Fatalf("want 2 iteration spans, got %d", len(its))
	}
	it := spans.ChildrenOf(root).Named("iteration 1")
	if len(it) != 1 {
		t.Fatalf("want 1 iteration under the root, got %d", len(it))
	}
	chat, edit, read, spawn := one("chat claude-x"), one("tool edit_file"), one("tool read_file"), one("tool spawn_subagent")
	for _, s := range []otlptest.Span{chat, edit, read, spawn} {
		parentOf(s, it[0])
	}
	gate := one("gate edit_file")
	parentOf(gate, edit)
	// A subagent's name is the model's: not exported with capture off.
	sub := one("subagent")
	parentOf(sub, spawn)
	subIt := spans.ChildrenOf(sub)
	if len(subIt) != 1 || subIt[0].Name != "iteration 1" {
		t.Fatalf("subagent children = %v, want [iteration 1]", subIt.Names())
	}
	parentOf(one("chat gpt-x"), subIt[0])

	for _, s := range spans {
		if s.TraceID != root.TraceID {
			t.Errorf("%v is in another trace than the root", s)
		}
		if s.Str("jazz.run.id") != "run-1" || s.Str("jazz.conversation.id") != "conv-1" {
			t.Errorf("%v: run ids %q %q", s, s.Str("jazz.run.id"), s.Str("jazz.conversation.id"))
		}
		if s.Kind != "internal" {
			t.Errorf("%v: kind %s", s, s.Kind)
		}
		if s.Resource["service.name"] != "jazz" || s.Resource["service.version"] != "1.2.3" ||
			s.Resource["telemetry.sdk.language"] != "go" || s.Resource["telemetry.sdk.name"] != "jazz" {
			t.Errorf("%v: resource %v", s, s.Resource)
		}
		if s.Scope != "jazz" || s.ScopeVersion != "1.2.3" {
			t.Errorf("%v: scope %s %s", s, s.Scope, s.ScopeVersion)
		}
		for k, v := range s.Attrs {
			if telemetry.IsContentKey(k) {
				t.Errorf("%v: content attribute %s exported", s, k)
			}
			if str, ok := v.(string); ok && len([]rune(str)) > 256 {
				t.Errorf("%v: attribute %s is %d characters", s, k, len([]rune(str)))
			}
			if strings.HasPrefix(k, "gen_ai.") && !strings.HasPrefix(s.Name, "chat") {
				t.Errorf("%v: gen_ai attribute %s outside a chat span", s, k)
			}
		}
	}
	// Children carry the agent that made them; the subagent's its own.
	if got := subIt[0].Str("jazz.agent.id"); got != "agent-2" {
		t.Errorf("subagent iteration agent id %q, want agent-2", got)
	}
	if got := chat.Str("jazz.agent.id"); got != "agent-1" {
		t.Errorf("chat agent id %q, want agent-1", got)
	}

	wantAttrs := []struct {
		span otlptest.Span
		key  string
		want any
	}{
		{chat, "gen_ai.system", "anthropic"},
		{chat, "gen_ai.request.model", "claude-x"},
		{chat, "gen_ai.response.model", "claude-x-2"},
		{chat, "gen_ai.operation.name", "chat"},
		{chat, "gen_ai.usage.input_tokens", int64(10)},
		{chat, "gen_ai.usage.output_tokens", int64(5)},
		{chat, "jazz.usage.cacheReadTokens", int64(3)},
		{chat, "jazz.costUsd", 0.25},
		{chat, "jazz.event.type", "llm_usage"},

		{edit, "jazz.toolName", "edit_file"},

		{edit, "jazz.riskTier", "high-risk"},
		{edit, "jazz.approval", "approved"},
		{edit, "jazz.decidedBy", "human"},
		{edit, "jazz.truncated", true},
		{edit, "jazz.success", true},
		{edit, "jazz.executed", "execute_edit_file"},
		{edit, "jazz.event.type", "tool_invocation"},
		{read, "jazz.event.type", "tool_error"},
		{read, "jazz.durationMs", int64(7)},
		{gate, "jazz.approved", true},
		{gate, "jazz.outcome", "approved"},
		{gate, "jazz.decidedBy", "human"},
		{root, "jazz.agent.name", "coder"},
		{root, "jazz.event.type", "agent_run_completed"},
		{root, "jazz.outcome", "completed"},
		{root, "jazz.usage.promptTokens", int64(11)},
		{root, "jazz.iterations", int64(1)},
		{sub, "jazz.agent.depth", int64(1)},
		{sub, "jazz.parentAgent.id", "agent-1"},
	}
	for _, w := range wantAttrs {
		if got, ok := w.span.Attr(w.key); !ok || got != w.want {
			t.Errorf("%s %s = %v (set %v), want %v", w.span.Name, w.key, got, ok, w.want)
		}
	}
	// Error texts carry model-chosen paths: with capture off only the
	// kind goes out.
	if read.StatusCode != "error" || read.StatusMessage != "tool_error" || read.Str("jazz.error") != "tool_error" {
		t.Errorf("failed tool status %s %q, jazz.error %q", read.StatusCode, read.StatusMessage, read.Str("jazz.error"))
	}
	// Only string attributes jazz chooses go out: not the free-form note.
	if _, ok := chat.Attr("jazz.note"); ok {
		t.Errorf("untrusted string attribute jazz.note exported: %v", chat.Attrs)
	}
	// The model's call id goes out as a fingerprint that still matches
	// between the tool span and its gate decision.
	if id := edit.Str("jazz.toolCallId"); !strings.HasPrefix(id, "h:") || id != gate.Str("jazz.toolCallId") {
		t.Errorf("call id exported as %q (gate %q), want a shared fingerprint", id, gate.Str("jazz.toolCallId"))
	}
	if _, ok := sub.Attr("jazz.agent.name"); ok {
		t.Errorf("subagent name exported with capture off")
	}
	if edit.StatusCode != "unset" || root.StatusCode != "unset" {
		t.Errorf("status of successful spans: tool %s, run %s", edit.StatusCode, root.StatusCode)
	}
	if d := gate.End.Sub(gate.Start); d < time.Second {
		t.Errorf("gate span lasts %v, want it to start when the gate asked", d)
	}
}

func checkMetrics(t *testing.T, r *otlptest.Receiver) {
	t.Helper()
	ctx := waitCtx(t)
	sum := func(name string, match map[string]any) (v float64, count uint64) {
		points, err := r.WaitPoints(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range points {
			ok := true
			for k, want := range match {
				ok = ok && p.Attrs[k] == want
			}
			if ok {
				v += p.Value
				count += p.Count
			}
		}
		return v, count
	}
	if v, _ := sum("jazz.tokens", map[string]any{"type": "input", "model": "claude-x"}); v != 10 {
		t.Errorf("input tokens for claude-x = %v, want 10", v)
	}
	if v, _ := sum("jazz.tokens", map[string]any{"type": "output"}); v != 6 {
		t.Errorf("output tokens = %v, want 6", v)
	}
	if v, _ := sum("jazz.cost.usd", nil); v != 0.25 {
		t.Errorf("cost = %v, want 0.25", v)
	}
	if _, n := sum("jazz.tool.duration", nil); n != 3 {
		t.Errorf("tool duration count = %d, want 3", n)
	}
	if v, _ := sum("jazz.approvals", map[string]any{"outcome": "approved", "decided_by": "human"}); v != 1 {
		t.Errorf("approvals = %v, want 1", v)
	}
	if v, _ := sum("jazz.runs", map[string]any{"outcome": "completed", "subagent": false}); v != 1 {
		t.Errorf("runs = %v, want 1", v)
	}
}

func TestCaptureContentOn(t *testing.T) {
	r := otlptest.Start(t)
	tel, _ := setup(t, r, telemetry.ProtocolHTTPProtobuf, telemetry.Settings{CaptureContent: true})
	_, chat := tel.StartChat(context.Background(), telemetry.ChatInfo{Model: "m"})
	chat.SetAttributes(attribute.String("gen_ai.prompt", "hello"), attribute.String("jazz.note", strings.Repeat("x", 9000)))
	chat.End(telemetry.ChatResult{})
	tel.Shutdown(context.Background())
	s := one(t, waitSpans(t, r, 1), "chat m")
	if s.Str("gen_ai.prompt") != "hello" {
		t.Errorf("prompt with captureContent on = %q", s.Str("gen_ai.prompt"))
	}
	if n := len(s.Str("jazz.note")); n != 8192 {
		t.Errorf("note length %d, want the 8192 cap", n)
	}
}

func TestTraceparentParent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r := otlptest.Start(t)
	tel, _ := setup(t, r, telemetry.ProtocolHTTPProtobuf, telemetry.Settings{})
	parent := mustParent(t, tp, "vendor=x")
	runTree(tel, parent)
	tel.Shutdown(context.Background())
	spans := waitSpans(t, r, 10)
	root := one(t, spans, "agent coder")
	if root.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || root.ParentSpanID != "00f067aa0ba902b7" {
		t.Errorf("root %v is not a child of the caller's span", root)
	}
	for _, s := range spans {
		if s.TraceID != root.TraceID {
			t.Errorf("%v left the caller's trace", s)
		}
	}
}

func TestParseTraceparentInvalid(t *testing.T) {
	for _, bad := range []string{
		"",
		"garbage",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero span id
		"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",  // short trace id
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // forbidden version
	} {
		t.Run(bad, func(t *testing.T) {
			if _, err := telemetry.ParseTraceparent(bad, ""); !errors.Is(err, telemetry.ErrTraceparent) {
				t.Errorf("ParseTraceparent(%q) error = %v, want ErrTraceparent", bad, err)
			}
		})
	}
}

func TestPropagationRoundTrip(t *testing.T) {
	r := otlptest.Start(t)
	enabled, _ := setup(t, r, telemetry.ProtocolHTTPProtobuf, telemetry.Settings{})
	t.Cleanup(func() { enabled.Shutdown(context.Background()) })
	parent := mustParent(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "")

	for name, tel := range map[string]*telemetry.Telemetry{"enabled": enabled, "noop": telemetry.Noop()} {
		t.Run(name, func(t *testing.T) {
			ctx, run := tel.StartRun(context.Background(), telemetry.RunInfo{AgentName: "a", Parent: parent})
			defer run.End(telemetry.RunResult{})
			want := trace.SpanContextFromContext(ctx)
			if !want.IsValid() {
				t.Fatal("no span context after StartRun")
			}

			carrier := telemetry.Inject(ctx)
			if carrier.Get("traceparent") == "" {
				t.Fatalf("Inject gave %v", carrier)
			}
			got := trace.SpanContextFromContext(telemetry.Extract(context.Background(), carrier))
			if got.TraceID() != want.TraceID() || got.SpanID() != want.SpanID() || !got.IsRemote() {
				t.Errorf("messages.Trace round trip: got %v, want %v", got, want)
			}

		})
	}
	if c := telemetry.Inject(context.Background()); c != nil {
		t.Errorf("Inject without a span = %v, want nil", c)
	}
}

// freeURL returns an http URL nothing listens on.
func freeURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestBadCollector(t *testing.T) {
	tests := []struct {
		name     string
		protocol string
		mode     otlptest.Mode
		down     bool
	}{
		{"http down", telemetry.ProtocolHTTPProtobuf, 0, true},
		{"grpc down", telemetry.ProtocolGRPC, 0, true},
		{"http 503", telemetry.ProtocolHTTPProtobuf, otlptest.ModeUnavailable, false},
		{"grpc unavailable", telemetry.ProtocolGRPC, otlptest.ModeUnavailable, false},
		{"http rejecting", telemetry.ProtocolHTTPProtobuf, otlptest.ModeReject, false},
		{"http hanging", telemetry.ProtocolHTTPProtobuf, otlptest.ModeHang, false},
		{"grpc hanging", telemetry.ProtocolGRPC, otlptest.ModeHang, false},
		{"json down", telemetry.ProtocolHTTPJSON, 0, true},
		{"json 503", telemetry.ProtocolHTTPJSON, otlptest.ModeUnavailable, false},
		{"json rejecting", telemetry.ProtocolHTTPJSON, otlptest.ModeReject, false},
		{"json hanging", telemetry.ProtocolHTTPJSON, otlptest.ModeHang, false},
		{"grpc rejecting", telemetry.ProtocolGRPC, otlptest.ModeReject, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			endpoint := freeURL(t)
			if !tt.down {
				r := otlptest.Start(t)
				r.SetMode(tt.mode)
				endpoint = r.HTTPURL
				if tt.protocol == telemetry.ProtocolGRPC {
					endpoint = r.GRPCURL
				}
			}
			s, _ := telemetry.Resolve(telemetry.Settings{Endpoint: endpoint, Protocol: tt.protocol,
				Headers: map[string]string{"authorization": "Bearer s3cr3t"}}, env(nil))
			w := &warnings{}
			tel := telemetry.Setup(context.Background(), s, w.add)
			for range 3 {
				runTree(tel, nil)
			}
			// Shutdown is bounded by ShutdownTimeout; the deadline here only
			// turns a hang into a failure instead of a stuck test.
			done := make(chan struct{})
			go func() { tel.Shutdown(context.Background()); close(done) }()
			select {
			case <-done:
			case <-time.After(telemetry.ShutdownTimeout + 8*time.Second):
				t.Fatal("Shutdown did not return")
			}
			got := w.list()
			t.Logf("warnings: %q", got)
			if len(got) != 1 {
				t.Fatalf("got %d warnings %q, want exactly one", len(got), got)
			}
			if strings.Contains(got[0], "s3cr3t") {
				t.Errorf("warning leaks a header value: %q", got[0])
			}
			if !strings.HasPrefix(got[0], "telemetry: ") {
				t.Errorf("warning %q does not say it is about telemetry", got[0])
			}
		})
	}
}

func TestMalformedSettingsRunWithoutExport(t *testing.T) {
	tests := []struct {
		name string
		cfg  telemetry.Settings
		env  map[string]string
		want string
	}{
		{name: "endpoint", cfg: telemetry.Settings{Endpoint: "http://[::1"}, want: "not a valid URL"},
		{name: "env endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://[::1"}, want: "not a valid URL"},
		{name: "header string", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_HEADERS": "Authorization"}, want: "no '='"},
		{name: "hand-built settings skip Resolve", cfg: telemetry.Settings{Enabled: telemetry.Bool(true), TracesEndpoint: "http://[::1"}, want: "not a valid URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &warnings{}
			s := tt.cfg
			if s.Enabled == nil {
				var warns []string
				s, warns = telemetry.Resolve(tt.cfg, env(tt.env))
				for _, m := range warns {
					w.add(m)
				}
			}
			tel := telemetry.Setup(context.Background(), s, w.add)
			if tel.Enabled() {
				t.Error("export enabled with malformed settings")
			}
			if got := w.list(); len(got) != 1 || !strings.Contains(got[0], tt.want) {
				t.Errorf("warnings %q, want one containing %q", got, tt.want)
			}
			// The run goes on: the API works and costs nothing.
			runTree(tel, nil)
			tel.Shutdown(context.Background())
		})
	}
}

func TestDisabledIsNoop(t *testing.T) {
	s, _ := telemetry.Resolve(telemetry.Settings{}, env(nil))
	tel := telemetry.Setup(context.Background(), s, func(m string) { t.Errorf("warning from disabled telemetry: %s", m) })
	if tel.Enabled() {
		t.Fatal("enabled without an endpoint")
	}
	ctx, run := tel.StartRun(context.Background(), telemetry.RunInfo{AgentName: "a"})
	if trace.SpanContextFromContext(ctx).IsValid() || run.Span().IsRecording() {
		t.Error("disabled telemetry records spans")
	}
	run.End(telemetry.RunResult{})
	var zero telemetry.ToolSpan // zero handles are no-ops too
	zero.End(telemetry.ToolOutcome{})
	tel.Shutdown(context.Background())
}

func BenchmarkSpanNoop(b *testing.B) {
	tel := telemetry.Setup(context.Background(), resolveNoWarn(b, telemetry.Settings{}), nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		tctx, tool := tel.StartTool(ctx, telemetry.ToolInfo{Name: "read_file", CallID: "c"})
		tel.RecordGateDecision(tctx, telemetry.GateDecision{ToolName: "read_file", Approved: true})
		tool.End(telemetry.ToolOutcome{Success: true})
	}
}

func BenchmarkSpanExport(b *testing.B) {
	r := otlptest.Start(b)
	tel, _ := setup(b, r, telemetry.ProtocolHTTPProtobuf, telemetry.Settings{})
	ctx, run := tel.StartRun(context.Background(), telemetry.RunInfo{RunID: "r", AgentName: "a"})
	b.ReportAllocs()
	for b.Loop() {
		tctx, tool := tel.StartTool(ctx, telemetry.ToolInfo{Name: "read_file", CallID: "c"})
		tel.RecordGateDecision(tctx, telemetry.GateDecision{ToolName: "read_file", Approved: true})
		tool.End(telemetry.ToolOutcome{Success: true})
	}
	b.StopTimer()
	run.End(telemetry.RunResult{})
	tel.Shutdown(context.Background())
}

func resolveNoWarn(tb testing.TB, cfg telemetry.Settings) telemetry.Settings {
	s, warns := telemetry.Resolve(cfg, env(nil))
	if len(warns) > 0 {
		tb.Fatalf("warnings: %q", warns)
	}
	return s
}

func TestFailedRunAndRetry(t *testing.T) {
	r := otlptest.Start(t)
	tel, _ := setup(t, r, telemetry.ProtocolHTTPProtobuf, telemetry.Settings{})
	ctx, run := tel.StartRun(context.Background(), telemetry.RunInfo{RunID: "run-2"})
	cctx, chat := tel.StartChat(ctx, telemetry.ChatInfo{System: "openai", Model: "gpt-x", Attempt: 2})
	tel.RecordRetry(cctx, telemetry.RetryInfo{System: "openai", Model: "gpt-x", Attempt: 1, Err: "429 too many requests", DelayMs: 250})
	chat.End(telemetry.ChatResult{Err: "provider down"})
	run.End(telemetry.RunResult{Err: "provider down"})
	tel.Shutdown(context.Background())

	spans := waitSpans(t, r, 3)
	root, c, retry := one(t, spans, "agent run"), one(t, spans, "chat gpt-x"), one(t, spans, "llm retry")
	if retry.ParentSpanID != c.SpanID || c.ParentSpanID != root.SpanID {
		t.Errorf("parentage: retry %v, chat %v, root %v", retry, c, root)
	}
	if root.StatusCode != "error" || root.StatusMessage != "failed" || root.Str("jazz.event.type") != "agent_run_failed" || root.Str("jazz.outcome") != "failed" {
		t.Errorf("failed run: status %s %q, attrs %v", root.StatusCode, root.StatusMessage, root.Attrs)
	}
	if retry.StatusCode != "error" || retry.Str("gen_ai.system") != "openai" || retry.Str("jazz.event.type") != "llm_retry" {
		t.Errorf("retry span: status %s, attrs %v", retry.StatusCode, retry.Attrs)
	}
	if c.StatusCode != "error" {
		t.Errorf("failed chat status %s", c.StatusCode)
	}
	points, err := r.WaitPoints(waitCtx(t), "jazz.runs")
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 1 || points[0].Attrs["outcome"] != "failed" || points[0].Value != 1 {
		t.Errorf("jazz.runs points %+v, want one failed run", points)
	}
}
