package e2e_test

// Telemetry tests (prefix tel): the built binary exports one trace per run
// to an in-process OTLP receiver (telemetry/otlptest) over HTTP and gRPC;
// a collector that is down, rejecting or hanging costs a run one warning
// and no wait for export timeouts; bad settings give a warning, not a
// failed run.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/telemetry/otlptest"
)

func telJazz(t *testing.T) string {
	t.Helper()
	return jazzBin
}

// telWorld is a JAZZ_HOME with one replay agent, and a working directory.
type telWorld struct {
	t    *testing.T
	bin  string
	home string
	cwd  string
}

func telNewWorld(t *testing.T, script any, tools ...string) *telWorld {
	t.Helper()
	w := &telWorld{t: t, bin: telJazz(t), home: t.TempDir(), cwd: t.TempDir()}
	data, err := json.Marshal(script)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(w.home, "tel.replay.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.home, "config.json"), []byte(`{"maxRetries": 0}`), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"agent", "create", "--name", "tel", "--model", "replay/" + p}
	if len(tools) > 0 {
		args = append(args, "--tools", strings.Join(tools, ","))
	}
	r := w.run(nil, args...)
	if r.code != 0 {
		t.Fatalf("agent create: exit %d\n%s", r.code, r.stderr)
	}
	return w
}

// run runs the binary with a clean environment plus env.
func (w *telWorld) run(env []string, args ...string) result {
	w.t.Helper()
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "JAZZ_HOME=" + w.home, "NO_COLOR=1"}
	return runJazz(w.t, w.cwd, append(base, env...), "", args...)
}

func telUsage(in, out int) map[string]any {
	return map[string]any{"promptTokens": in, "completionTokens": out}
}

// telTreeScript: the parent lists the directory and writes a file (a gated
// call, approved by policy), then delegates two tasks at once; child
// "alpha" answers at once, child "beta" lists the directory first.
func telTreeScript() map[string]any {
	spawn := func(name, task string) map[string]any {
		return map[string]any{"name": "spawn_subagent", "arguments": map[string]any{"name": name, "task": task}}
	}
	return map[string]any{"conversations": []map[string]any{
		{"match": "alpha task", "turns": []map[string]any{{"text": "alpha done", "usage": telUsage(50, 5)}}},
		{"match": "beta task", "turns": []map[string]any{
			{"toolCalls": []map[string]any{{"name": "ls", "arguments": map[string]any{"path": "."}}}, "usage": telUsage(60, 6)},
			{"text": "beta done", "usage": telUsage(70, 7)},
		}},
		{"turns": []map[string]any{
			{"toolCalls": []map[string]any{
				{"name": "ls", "arguments": map[string]any{"path": "."}},
				{"name": "write_file", "arguments": map[string]any{"path": "notes.txt", "content": "hello\n"}},
			}, "usage": telUsage(100, 10)},
			{"toolCalls": []map[string]any{spawn("alpha", "the alpha task"), spawn("beta", "the beta task")}, "usage": telUsage(200, 20)},
			{"text": "all done", "usage": telUsage(300, 30)},
		}},
	}}
}

// TestTelTraceTree drives a run with tools, a policy approval and two
// subagents, over OTLP/HTTP and OTLP/gRPC, and checks the whole span tree:
// one trace, names, parent links and the attributes the issue names.
func TestTelTraceTree(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			rcv := otlptest.Start(t)
			endpoint := rcv.HTTPURL
			if proto == "grpc" {
				endpoint = rcv.GRPCURL
			}
			w := telNewWorld(t, telTreeScript(), "ls", "write_file", "spawn_subagent")
			r := w.run([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL=" + proto},
				"run", "--agent", "tel", "--json", "--approval-policy", "high-risk", "do the thing")
			e := wantSuccess(t, r)
			if e.Answer != "all done" {
				t.Fatalf("answer %q\nstderr: %s", e.Answer, r.stderr)
			}
			if strings.Contains(r.stderr, "telemetry:") {
				t.Fatalf("unexpected telemetry warning:\n%s", r.stderr)
			}
			// The process has exited, so everything was flushed already.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			spans, err := rcv.WaitSpans(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			telCheckTree(t, spans)
			telCheckMetrics(t, rcv)
		})
	}
}

func telCheckTree(t *testing.T, spans otlptest.Spans) {
	t.Helper()
	must := func(s otlptest.Span, err error) otlptest.Span {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	one := func(ss otlptest.Spans, name string) otlptest.Span { t.Helper(); return must(ss.One(name)) }
	wantAttr := func(s otlptest.Span, key string, want any) {
		t.Helper()
		if i, ok := want.(int); ok {
			want = int64(i)
		}
		if got, ok := s.Attr(key); !ok || got != want {
			t.Errorf("%s: %s = %v (set %v), want %v", s, key, got, ok, want)
		}
	}
	hasAttr := func(s otlptest.Span, keys ...string) {
		t.Helper()
		for _, k := range keys {
			if _, ok := s.Attr(k); !ok {
				t.Errorf("%s: attribute %s missing; has %v", s, k, s.Attrs)
			}
		}
	}

	root := one(spans.Roots(), "agent tel")
	for _, s := range spans {
		if s.TraceID != root.TraceID {
			t.Errorf("%s is not in the run's trace %s", s, root.TraceID)
		}
		if s.StatusCode == "error" {
			t.Errorf("%s has status error: %s", s, s.StatusMessage)
		}
	}
	if len(spans.Roots()) != 1 || root.ParentSpanID != "" {
		t.Fatalf("want one root span with no parent, got roots %v", spans.Roots())
	}
	wantAttr(root, "jazz.outcome", "completed")
	wantAttr(root, "jazz.iterations", 3)
	hasAttr(root, "jazz.run.id", "jazz.agent.id", "jazz.costUsd", "jazz.usage.promptTokens")
	for k := range root.Attrs {
		if strings.HasPrefix(k, "gen_ai.") {
			t.Errorf("the root span carries %s: rollups must not double-count", k)
		}
	}

	iters := spans.ChildrenOf(root)
	if got := iters.Names(); len(got) != 3 {
		t.Fatalf("root children = %v, want 3 iterations", got)
	}
	it1, it2, it3 := one(iters, "iteration 1"), one(iters, "iteration 2"), one(iters, "iteration 3")

	// Each iteration has its model request with the GenAI attributes.
	for i, it := range []otlptest.Span{it1, it2, it3} {
		chats := spans.ChildrenOf(it).Where(func(s otlptest.Span) bool { return strings.HasPrefix(s.Name, "chat ") })
		if len(chats) != 1 {
			t.Fatalf("%s: want one chat span, got %v", it, spans.ChildrenOf(it).Names())
		}
		c := chats[0]
		wantAttr(c, "gen_ai.system", "replay")
		wantAttr(c, "gen_ai.operation.name", "chat")
		wantAttr(c, "gen_ai.usage.input_tokens", 100*(i+1))
		wantAttr(c, "gen_ai.usage.output_tokens", 10*(i+1))
		hasAttr(c, "gen_ai.request.model", "jazz.costUsd", "jazz.durationMs")
	}

	// Iteration 1: ls (read-only, no approval) and write_file (approved
	// by policy, with its gate decision under it).
	kids1 := spans.ChildrenOf(it1)
	ls := one(kids1, "tool ls")
	wantAttr(ls, "jazz.riskTier", "read-only")
	wantAttr(ls, "jazz.approval", "not_required")
	wantAttr(ls, "jazz.success", true)
	hasAttr(ls, "jazz.durationMs", "jazz.truncated", "jazz.toolCallId")
	wf := one(kids1, "tool write_file")
	wantAttr(wf, "jazz.approval", "approved")
	wantAttr(wf, "jazz.decidedBy", "policy")
	wantAttr(wf, "jazz.executed", "execute_write_file")
	wantAttr(wf, "jazz.success", true)
	hasAttr(wf, "jazz.riskTier", "jazz.durationMs", "jazz.truncated")
	gate := one(spans.ChildrenOf(wf), "gate write_file")
	wantAttr(gate, "jazz.approved", true)
	wantAttr(gate, "jazz.decidedBy", "policy")
	wantAttr(gate, "jazz.outcome", "approved")

	// Iteration 2: two spawn_subagent calls, each with its subagent under
	// it, and the child's own iterations, model requests and tools below.
	spawns := spans.ChildrenOf(it2).Named("tool spawn_subagent")
	if len(spawns) != 2 {
		t.Fatalf("iteration 2 children = %v, want two tool spawn_subagent", spans.ChildrenOf(it2).Names())
	}
	// A subagent's name is the model's text, so with captureContent off
	// its span is just "subagent": beta is the one that worked longer.
	subs := map[string]otlptest.Span{}
	for _, sp := range spawns {
		wantAttr(sp, "jazz.approval", "approved")
		one(spans.ChildrenOf(sp), "gate spawn_subagent")
		k := one(spans.ChildrenOf(sp), "subagent")
		name := "alpha"
		if len(spans.ChildrenOf(k).Named("iteration 2")) > 0 {
			name = "beta"
		}
		subs[name] = k
	}
	for _, name := range []string{"alpha", "beta"} {
		sub, ok := subs[name]
		if !ok {
			t.Fatalf("no subagent span for %s under the spawn_subagent calls; found %v", name, subs)
		}
		wantAttr(sub, "jazz.agent.depth", 1)
		wantAttr(sub, "jazz.outcome", "completed")
		if sub.Str("jazz.run.id") != root.Str("jazz.run.id") || sub.Str("jazz.agent.id") == root.Str("jazz.agent.id") {
			t.Errorf("%s: run id %q (want the parent's %q), agent id %q (want its own)", sub,
				sub.Str("jazz.run.id"), root.Str("jazz.run.id"), sub.Str("jazz.agent.id"))
		}
		it := one(spans.ChildrenOf(sub), "iteration 1")
		if c := spans.ChildrenOf(it).Where(func(s otlptest.Span) bool { return strings.HasPrefix(s.Name, "chat ") }); len(c) != 1 {
			t.Errorf("%s iteration 1: want one chat span, got %v", sub, spans.ChildrenOf(it).Names())
		}
		if name == "beta" {
			one(spans.ChildrenOf(it), "tool ls")
			one(spans.ChildrenOf(sub), "iteration 2")
		}
	}
	if t.Failed() {
		t.Logf("spans:\n%s", telDump(spans))
	}
}

// telCheckMetrics: tokens, cost, tool latency, approvals and runs arrive.
func telCheckMetrics(t *testing.T, rcv *otlptest.Receiver) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, m := range []string{"jazz.tokens", "jazz.tool.duration", "jazz.approvals", "jazz.runs"} {
		if _, err := rcv.WaitPoints(ctx, m); err != nil {
			t.Error(err)
		}
	}
	var in float64
	for _, p := range rcv.Points("jazz.tokens") {
		if p.Attrs["type"] == "input" {
			in += p.Value
		}
	}
	// 100+200+300 (parent) + 50 (alpha) + 60+70 (beta)
	if in != 780 {
		t.Errorf("jazz.tokens input = %v, want 780", in)
	}
	var approved float64
	for _, p := range rcv.Points("jazz.approvals") {
		if p.Attrs["outcome"] == "approved" && p.Attrs["decided_by"] == "policy" {
			approved += p.Value
		}
	}
	if approved != 3 { // write_file and two spawn_subagent
		t.Errorf("jazz.approvals approved by policy = %v, want 3", approved)
	}
	var completed float64
	for _, p := range rcv.Points("jazz.runs") {
		if p.Attrs["outcome"] == "completed" && p.Attrs["subagent"] == false {
			completed += p.Value
		}
	}
	if completed != 1 {
		t.Errorf("jazz.runs completed top-level = %v, want 1", completed)
	}
}

func telDump(spans otlptest.Spans) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	return b.String()
}

// TestTelTraceparent: a caller's traceparent (flag or env) makes the run a
// child of the caller's span; a malformed one is a warning and a new trace.
func TestTelTraceparent(t *testing.T) {
	t.Parallel()
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		spanID  = "00f067aa0ba902b7"
		tp      = "00-" + traceID + "-" + spanID + "-01"
	)
	script := map[string]any{"turns": []map[string]any{{"text": "hi", "usage": telUsage(1, 1)}}}
	cases := []struct {
		name       string
		env        []string
		args       []string
		wantParent bool
		wantWarn   string
	}{
		{name: "env", env: []string{"TRACEPARENT=" + tp}, wantParent: true},
		{name: "flag", args: []string{"--traceparent", tp}, wantParent: true},
		{name: "flag wins", env: []string{"TRACEPARENT=00-11111111111111111111111111111111-2222222222222222-01"}, args: []string{"--traceparent", tp}, wantParent: true},
		{name: "malformed", env: []string{"TRACEPARENT=not-a-traceparent"}, wantWarn: "not a valid W3C traceparent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rcv := otlptest.Start(t)
			w := telNewWorld(t, script)
			args := append([]string{"run", "--agent", "tel", "--json"}, c.args...)
			r := w.run(append([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.HTTPURL}, c.env...), append(args, "hello")...)
			wantSuccess(t, r)
			if c.wantWarn != "" && !strings.Contains(r.stderr, c.wantWarn) {
				t.Errorf("stderr lacks %q:\n%s", c.wantWarn, r.stderr)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			spans, err := rcv.WaitSpans(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			root, err := spans.One("agent tel")
			if err != nil {
				t.Fatal(err)
			}
			joined := root.TraceID == traceID && root.ParentSpanID == spanID
			if joined != c.wantParent {
				t.Fatalf("root %s: joined the caller's trace = %v, want %v", root, joined, c.wantParent)
			}
			if !c.wantParent && root.ParentSpanID != "" {
				t.Fatalf("root %s has a parent", root)
			}
		})
	}
}

// closedEndpoint is an http URL on 127.0.0.1 where nothing listens.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// TestTelBadCollector: whatever the collector does, the run succeeds,
// prints exactly one telemetry warning, and does not wait for the export
// timeout (10 s by default): loosely, it finishes within a few seconds of
// a run without telemetry. Also bad settings: a warning, then a run
// without export.
func TestTelBadCollector(t *testing.T) {
	script := map[string]any{"turns": []map[string]any{
		{"toolCalls": []map[string]any{{"name": "ls", "arguments": map[string]any{"path": "."}}}, "usage": telUsage(1, 1)},
		{"text": "done", "usage": telUsage(1, 1)},
	}}
	w := telNewWorld(t, script, "ls")
	args := []string{"run", "--agent", "tel", "--json", "list"}
	base := w.run(nil, args...)
	wantSuccess(t, base)
	if strings.Contains(base.stderr, "telemetry") {
		t.Fatalf("a run without telemetry mentions it:\n%s", base.stderr)
	}

	cases := []struct {
		name     string
		mode     otlptest.Mode
		env      func(rcv *otlptest.Receiver) []string
		wantWarn string
	}{
		{name: "down", env: func(*otlptest.Receiver) []string {
			return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + closedEndpoint(t)}
		}, wantWarn: "cannot export"},
		{name: "down grpc", env: func(*otlptest.Receiver) []string {
			return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + closedEndpoint(t), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}
		}, wantWarn: "telemetry:"},
		{name: "unavailable", mode: otlptest.ModeUnavailable, env: func(r *otlptest.Receiver) []string {
			return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.HTTPURL}
		}, wantWarn: "cannot export"},
		{name: "rejecting", mode: otlptest.ModeReject, env: func(r *otlptest.Receiver) []string {
			return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.HTTPURL}
		}, wantWarn: "cannot export"},
		{name: "hanging", mode: otlptest.ModeHang, env: func(r *otlptest.Receiver) []string {
			return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.HTTPURL}
		}, wantWarn: "telemetry:"},
		{name: "malformed endpoint", env: func(*otlptest.Receiver) []string {
			return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=localhost:4318"}
		}, wantWarn: "must start with http:// or https://"},
		{name: "malformed headers", env: func(r *otlptest.Receiver) []string {
			return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.HTTPURL, "OTEL_EXPORTER_OTLP_HEADERS=api-key=s3cret,broken"}
		}, wantWarn: "OTEL_EXPORTER_OTLP_HEADERS: entry 2 has no '='"},
		{name: "unknown protocol", env: func(r *otlptest.Receiver) []string {
			return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.HTTPURL, "OTEL_EXPORTER_OTLP_PROTOCOL=carrier-pigeon"}
		}, wantWarn: "unknown OTLP protocol"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rcv := otlptest.Start(t)
			rcv.SetMode(c.mode)
			r := w.run(c.env(rcv), args...)
			e := wantSuccess(t, r)
			if e.Answer != "done" {
				t.Fatalf("answer %q", e.Answer)
			}
			if n := strings.Count(r.stderr, "telemetry:"); n != 1 {
				t.Fatalf("want exactly one telemetry warning, got %d:\n%s", n, r.stderr)
			}
			if !strings.Contains(r.stderr, c.wantWarn) {
				t.Fatalf("stderr lacks %q:\n%s", c.wantWarn, r.stderr)
			}
			if strings.Contains(r.stderr, "s3cret") {
				t.Fatalf("a header value leaked into stderr:\n%s", r.stderr)
			}
			// Loose on purpose (2 shared cores): the bound is export's own
			// shutdown limit plus slack, far below the 10 s export timeout.
			if limit := base.took + 4*time.Second; r.took > limit {
				t.Fatalf("run took %v, want under %v (no telemetry: %v)", r.took, limit, base.took)
			}
		})
	}
}

// TestTelRemoteApproval: a gated call is answered by another process over
// an external NATS server. The request reaches it with the tool call's
// trace context in its NATS headers, so the approver joins the run's
// trace, and the gate span records who decided.
func TestTelRemoteApproval(t *testing.T) {
	t.Parallel()
	script := map[string]any{"turns": []map[string]any{
		{"toolCalls": []map[string]any{{"name": "write_file", "arguments": map[string]any{"path": "a.txt", "content": "x\n"}}}},
		{"text": "written"},
	}}
	w := telNewWorld(t, script, "write_file")
	// The shared bus, and an approver on it in "another process": it
	// reads the request's trace header and signs its decision.
	_, seed, err := approvals.AddApprover(w.home, "alice", "high-risk", false)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := busserver.Start(context.Background(), busserver.Options{Home: w.home, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	seedFile := filepath.Join(t.TempDir(), "alice.nk")
	_ = os.WriteFile(seedFile, seed, 0o600)
	b, err := busclient.Connect(context.Background(), busclient.Options{URL: srv.ClientURL(), Nkey: seedFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.CloseNow)
	nc := b.Conn()
	headers := make(chan nats.Header, 1)
	_, err = nc.Subscribe("jazz.run.*.approval.required", func(m *nats.Msg) {
		select {
		case headers <- m.Header:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	store, err := approvals.OpenStore(context.Background(), b, false)
	if err != nil {
		t.Fatal(err)
	}
	wctx0, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	updates, err := store.Watch(wctx0)
	if err != nil {
		t.Fatal(err)
	}
	kp, _ := nkeys.FromSeed(seed)
	go func() {
		for r := range updates {
			if r.Status != approvals.StatusPending {
				continue
			}
			q := r.Request
			d, _ := approvals.DecisionFor(q, true, "")
			d.SignerName = "alice"
			env, _ := approvals.SignDecision(kp, d, time.Now(), 0)
			_ = env.Open(&d)
			_, _ = store.Decide(wctx0, q.RunID, q.RequestID, env, d, time.Now())
		}
	}()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	rcv := otlptest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// --remote-approvals on the local bus: the gate asks over NATS, and
	// only the approver's signed decision answers.
	cmd := exec.CommandContext(ctx, w.bin, "run", "--agent", "tel", "--json", "--remote-approvals",
		"--approval-policy", "read-only", "write it")
	cmd.Dir = w.cwd
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "JAZZ_HOME=" + w.home, "OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.HTTPURL}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("jazz: %v\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
	}
	e := wantSuccess(t, result{stdout: out.String(), stderr: errb.String()})
	if e.Answer != "written" {
		t.Fatalf("answer %q\nstderr: %s", e.Answer, errb.String())
	}

	wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer wcancel()
	spans, err := rcv.WaitSpans(wctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	tool, err := spans.One("tool write_file")
	if err != nil {
		t.Fatal(err)
	}
	var h nats.Header
	select {
	case h = <-headers:
	default:
		t.Fatal("the approver got no request")
	}
	if want := "00-" + tool.TraceID + "-" + tool.SpanID + "-01"; h.Get("traceparent") != want {
		t.Fatalf("approval.required traceparent header = %q, want the tool span's %q", h.Get("traceparent"), want)
	}
	gate, err := spans.ChildrenOf(tool).One("gate write_file")
	if err != nil {
		t.Fatal(err)
	}
	// The span says who approved: the approver's name, as the run's
	// registry knows their key.
	if by := "remote:alice"; gate.Str("jazz.decidedBy") != by || tool.Str("jazz.decidedBy") != by ||
		tool.Str("jazz.approval") != "approved" {
		t.Fatalf("gate %v, tool %v: want approved by %s", gate.Attrs, tool.Attrs, by)
	}
}

// TestTelRetry: a model request that fails once and is retried records an
// `llm retry` span, failed with the provider's error, under its chat span.
func TestTelRetry(t *testing.T) {
	t.Parallel()
	script := map[string]any{"turns": []map[string]any{
		{"error": map[string]any{"status": 503, "message": "overloaded"}, "text": "made it", "usage": telUsage(5, 1)},
	}}
	w := telNewWorld(t, script)
	if err := os.WriteFile(filepath.Join(w.home, "config.json"), []byte(`{"maxRetries": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rcv := otlptest.Start(t)
	r := w.run([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.HTTPURL}, "run", "--agent", "tel", "--json", "hi")
	if e := wantSuccess(t, r); e.Answer != "made it" {
		t.Fatalf("answer %q", e.Answer)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	spans, err := rcv.WaitSpans(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	retry, err := spans.One("llm retry")
	if err != nil {
		t.Fatal(err)
	}
	parent := spans.Where(func(s otlptest.Span) bool { return s.SpanID == retry.ParentSpanID })
	if len(parent) != 1 || !strings.HasPrefix(parent[0].Name, "chat ") {
		t.Fatalf("llm retry's parent is %v, want the chat span", parent.Names())
	}
	// With captureContent off a failure goes out as its kind, not the
	// provider's text (which may quote the request).
	if retry.StatusCode != "error" || retry.StatusMessage != "llm_retry" ||
		retry.Str("gen_ai.system") != "replay" || retry.Str("jazz.event.type") != "llm_retry" {
		t.Fatalf("llm retry span: status %s %q, attrs %v", retry.StatusCode, retry.StatusMessage, retry.Attrs)
	}
	if n, _ := parent[0].Int("gen_ai.usage.input_tokens"); n != 5 || parent[0].StatusCode == "error" {
		t.Fatalf("chat span after a successful retry: %v status %s", parent[0].Attrs, parent[0].StatusCode)
	}
}
