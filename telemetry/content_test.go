package telemetry_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/telemetry"
	"github.com/jazz-run/jazz/telemetry/otlptest"
)

// marker is in every string a model could have written below.
const marker = "MODELTEXT"

// modelRun records a run in which the model chose everything it can: the
// name of a tool it made up, call ids, a subagent's name, error texts
// with its paths and commands, and a free-text attribute.
func modelRun(tel *telemetry.Telemetry, secret string) {
	m := func(s string) string { return s + " " + marker + " " + secret }
	ctx, run := tel.StartRun(context.Background(), telemetry.RunInfo{RunID: "run-c", AgentID: "agent-c", AgentName: "coder", Model: "m"})
	ictx, it := tel.StartIteration(ctx, 1)
	cctx, chat := tel.StartChat(ictx, telemetry.ChatInfo{System: "openai", Model: "m"})
	tel.RecordRetry(cctx, telemetry.RetryInfo{System: "openai", Model: "m", Attempt: 1, Err: m("400 invalid tool name in request:")})
	chat.End(telemetry.ChatResult{ResponseModel: m("model"), FinishReason: m("stop"), Err: m("provider said")})

	_, unknown := tel.StartTool(ictx, telemetry.ToolInfo{Name: "steal_" + marker, CallID: "call-" + marker})
	unknown.SetAttributes(attribute.String("jazz.path", m("/home/u")), attribute.StringSlice("jazz.argv", []string{m("rm")}))
	unknown.End(telemetry.ToolOutcome{Err: m("Unknown tool: steal")})

	tctx, read := tel.StartTool(ictx, telemetry.ToolInfo{Name: "read_file", Registered: true, CallID: "call-" + marker, RiskTier: "read-only"})
	tel.RecordGateDecision(tctx, telemetry.GateDecision{ToolName: "read_file", CallID: "call-" + marker, Approved: false,
		DecidedBy: m("someone"), Remember: m("always"), Asked: time.Now()})
	read.End(telemetry.ToolOutcome{Err: m("Path not found: /home/u/plans.txt"), Approval: telemetry.ApprovalDenied, DecidedBy: m("x"), Executed: m("x")})

	sctx, spawn := tel.StartTool(ictx, telemetry.ToolInfo{Name: "spawn_subagent", Registered: true, CallID: "call-3"})
	_, sub := tel.StartSubagent(sctx, telemetry.SubagentInfo{AgentID: "agent-d", AgentName: m("helper"), Depth: 1})
	sub.End(telemetry.RunResult{Outcome: m("weird"), Err: m("child failed")})
	spawn.End(telemetry.ToolOutcome{Success: true})

	it.End(m("iteration failed:"))
	run.End(telemetry.RunResult{Err: m("run failed:")})
}

// exported is everything a collector got, as text: span names, every
// attribute, status messages, metric dimensions.
func exported(t *testing.T, r *otlptest.Receiver, spans otlptest.Spans) string {
	t.Helper()
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "span %q status %q attrs %v\n", s.Name, s.StatusMessage, s.Attrs)
	}
	for _, metric := range []string{"jazz.tool.duration", "jazz.approvals", "jazz.runs"} {
		points, err := r.WaitPoints(waitCtx(t), metric)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range points {
			fmt.Fprintf(&b, "metric %s %v\n", metric, p.Attrs)
		}
	}
	return b.String()
}

// With captureContent off nothing the model wrote reaches the collector:
// not in a span name, an attribute, a status or a metric dimension.
func TestNoModelTextWithoutCapture(t *testing.T) {
	r := otlptest.Start(t)
	tel, _ := setup(t, r, telemetry.ProtocolHTTPProtobuf, telemetry.Settings{})
	modelRun(tel, "")
	tel.Shutdown(context.Background())
	spans := waitSpans(t, r, 9)
	out := exported(t, r, spans)
	if strings.Contains(out, marker) {
		t.Fatalf("model text exported with captureContent off:\n%s", out)
	}
	// What does go out is still useful: the kind of each failure, a
	// fingerprint joining a call to its gate decision, the registered name.
	read, err := spans.One("tool read_file")
	if err != nil {
		t.Fatal(err)
	}
	gate, err := spans.One("gate read_file")
	if err != nil {
		t.Fatal(err)
	}
	if read.StatusMessage != "declined" || read.Str("jazz.toolCallId") != gate.Str("jazz.toolCallId") || read.Str("jazz.toolCallId") == "" {
		t.Errorf("read_file span: status %q, call id %q (gate %q)", read.StatusMessage, read.Str("jazz.toolCallId"), gate.Str("jazz.toolCallId"))
	}
	if _, err := spans.One("tool unknown"); err != nil {
		t.Errorf("the made-up tool: %v", err)
	}
	for name, status := range map[string]string{"agent coder": "failed", "iteration 1": "iteration_failed", "chat m": "llm_error", "llm retry": "llm_retry", "subagent": "failed"} {
		if s, err := spans.One(name); err != nil || s.StatusMessage != status {
			t.Errorf("%s: status %q (%v), want %q", name, s.StatusMessage, err, status)
		}
	}
}

// With captureContent on the text goes out, but never the run's own
// secret values.
func TestCaptureKeepsSecretsOut(t *testing.T) {
	secret := "sk-capture0123456789abcdef"
	r := otlptest.Start(t)
	tel, _ := setup(t, r, telemetry.ProtocolHTTPProtobuf, telemetry.Settings{CaptureContent: true, Secrets: secrets.NewRedactor(secret)})
	modelRun(tel, secret)
	tel.Shutdown(context.Background())
	spans := waitSpans(t, r, 9)
	out := exported(t, r, spans)
	if !strings.Contains(out, marker) {
		t.Fatalf("captureContent on exported no content:\n%s", out)
	}
	if strings.Contains(out, secret) {
		t.Fatalf("a secret value was exported:\n%s", out)
	}
	if !strings.Contains(out, secrets.Placeholder) {
		t.Fatalf("nothing redacted:\n%s", out)
	}
}
