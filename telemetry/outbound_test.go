package telemetry_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/telemetry"
	"github.com/jazz-run/jazz/telemetry/otlptest"
)

// outbound is every byte the collector was sent: each request as protobuf,
// whatever protocol carried it, so no field (a link's attribute, an
// event's name, the resource) is left out of a check.
func outbound(t *testing.T, r *otlptest.Receiver) []byte {
	t.Helper()
	var all []byte
	for _, raw := range r.RawRequests() {
		var m proto.Message = raw.Traces
		if raw.Metrics != nil {
			m = raw.Metrics
		}
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// leakedPiece returns a piece of secret (any 6 characters of it in a row)
// found in out: a key cut in half still shows its first half.
func leakedPiece(out []byte, secret string) string {
	for i := 0; i+6 <= len(secret); i++ {
		if strings.Contains(string(out), secret[i:i+6]) {
			return secret[i : i+6]
		}
	}
	return ""
}

// TestNoSecretLeavesTheProcess: the run's secrets are replaced in what
// reaches the collector, whoever set the text and wherever it sits: the
// instrumentation API's attributes (across the cut, too), span names,
// statuses, and what the instrumentation API does not filter at all: a
// span's events, links, raw attributes and errors reached through Span(),
// spans a library starts on the TracerProvider, the resource, the
// caller's tracestate and metric dimensions.
func TestNoSecretLeavesTheProcess(t *testing.T) {
	const secret = "Zq9Xw7Vv5Kk3Jj1Hh8Gg6"
	for _, capture := range []bool{false, true} {
		for _, protocol := range []string{telemetry.ProtocolHTTPProtobuf, telemetry.ProtocolHTTPJSON} {
			t.Run(protocol+map[bool]string{false: "", true: "+capture"}[capture], func(t *testing.T) {
				r := otlptest.Start(t)
				tel, _ := setup(t, r, protocol, telemetry.Settings{
					CaptureContent: capture,
					ServiceName:    "svc-" + secret,
					Secrets:        secrets.NewRedactor(secret),
				})
				parent := mustParent(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor="+secret)
				ctx, run := tel.StartRun(context.Background(), telemetry.RunInfo{RunID: "run-" + secret, AgentName: "agent-" + secret, Model: "m", Parent: parent})
				// A secret wherever the 256- and 8192-character cuts may fall.
				for _, limit := range []int{telemetry.MaxAttrLen, telemetry.MaxContentLen} {
					for off := limit - len(secret); off <= limit; off += 3 {
						_, s := tel.StartIteration(ctx, off)
						s.SetAttributes(attribute.String("jazz.agent.name", strings.Repeat("a", off)+secret))
						s.End(strings.Repeat("e", off) + secret)
					}
				}
				tctx, tool := tel.StartTool(ctx, telemetry.ToolInfo{Name: "t-" + secret, Registered: true, CallID: secret})
				raw := tool.Span()
				raw.SetName("tool " + secret)
				raw.SetAttributes(attribute.String("jazz.toolName", secret), attribute.StringSlice("jazz.argv", []string{secret}),
					attribute.Map("jazz.m", attribute.String(secret, secret)))
				raw.AddEvent("event "+secret, trace.WithAttributes(attribute.String("jazz.toolName", secret)))
				raw.RecordError(errors.New("error " + secret))
				raw.SetStatus(codes.Error, "status "+secret)
				_, lib := tel.Tracer.Start(tctx, "library "+secret, trace.WithLinks(trace.Link{
					SpanContext: trace.SpanContextFromContext(tctx),
					Attributes:  []attribute.KeyValue{attribute.String("link", secret)},
				}))
				lib.End()
				tool.End(telemetry.ToolOutcome{Err: "failed: " + secret})
				run.End(telemetry.RunResult{Err: "run " + secret})
				tel.Shutdown(context.Background())

				out := outbound(t, r)
				if len(out) == 0 {
					t.Fatal("nothing was exported")
				}
				if p := leakedPiece(out, secret); p != "" {
					t.Fatalf("the collector was sent %q of the secret", p)
				}
				if !strings.Contains(string(out), secrets.Placeholder) {
					t.Error("nothing was replaced: was the secret exported at all?")
				}
			})
		}
	}
}

// TestModelTextIsBounded: a model's 10 MB text (an error, an argument)
// is no 10 MB attribute, however it is set: every exported string is cut
// to the limit at a character boundary, and a span holds a bounded number
// of attributes and events.
func TestModelTextIsBounded(t *testing.T) {
	huge := strings.Repeat("é", 5<<20) // 10 MB, two bytes a character
	for _, capture := range []bool{false, true} {
		limit := telemetry.MaxAttrLen
		if capture {
			limit = telemetry.MaxContentLen
		}
		t.Run(map[bool]string{false: "default", true: "capture"}[capture], func(t *testing.T) {
			r := otlptest.Start(t)
			tel, w := setup(t, r, telemetry.ProtocolHTTPProtobuf, telemetry.Settings{CaptureContent: capture})
			defer func() { t.Logf("warnings %q", w.list()) }()
			ctx, run := tel.StartRun(context.Background(), telemetry.RunInfo{AgentName: "a" + huge})
			_, tool := tel.StartTool(ctx, telemetry.ToolInfo{Name: "t" + huge, Registered: true, CallID: huge})
			raw := tool.Span()
			for i := range 1000 {
				raw.SetAttributes(attribute.String("jazz.toolName", huge), attribute.Int("n"+strings.Repeat("x", i), i))
				raw.AddEvent(huge, trace.WithAttributes(attribute.String("k", huge)))
			}
			raw.SetStatus(codes.Error, huge)
			tool.End(telemetry.ToolOutcome{Err: huge})
			run.End(telemetry.RunResult{Err: huge})
			tel.Shutdown(context.Background())

			raws := r.RawRequests()
			if len(raws) == 0 {
				t.Fatal("nothing was exported")
			}
			check := func(what, s string) {
				if n := utf8.RuneCountInString(s); n > limit || !utf8.ValidString(s) || strings.HasSuffix(s, "\uFFFD") {
					t.Errorf("%s: %d characters (valid UTF-8 %v), want at most %d, cut between characters", what, n, utf8.ValidString(s), limit)
				}
			}
			spans := 0
			for _, raw := range raws {
				for _, rs := range raw.Traces.GetResourceSpans() {
					for _, ss := range rs.GetScopeSpans() {
						for _, s := range ss.GetSpans() {
							spans++
							check("name", s.GetName())
							check("status", s.GetStatus().GetMessage())
							if n := len(s.GetAttributes()); n > 64 {
								t.Errorf("%d attributes on one span", n)
							}
							if n := len(s.GetEvents()); n > 32 {
								t.Errorf("%d events on one span", n)
							}
							for _, a := range s.GetAttributes() {
								check("attribute "+a.GetKey(), a.GetValue().GetStringValue())
							}
							for _, e := range s.GetEvents() {
								check("event", e.GetName())
								for _, a := range e.GetAttributes() {
									check("event attribute", a.GetValue().GetStringValue())
								}
							}
						}
					}
				}
			}
			if spans != 2 {
				t.Errorf("%d spans exported, want 2", spans)
			}
		})
	}
}

// TestSpansDoNotHoldModelText: a span waiting for export (here in the
// batch, which goes out at 512 spans or after telemetry.BatchTimeout)
// holds no more of a model's text than it will send: not a slice of the
// 1 MB original, which would keep all of it alive.
func TestSpansDoNotHoldModelText(t *testing.T) {
	r := otlptest.Start(t)
	tel, _ := setup(t, r, telemetry.ProtocolHTTPProtobuf, telemetry.Settings{CaptureContent: true})
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	ctx, run := tel.StartRun(context.Background(), telemetry.RunInfo{AgentName: "a"})
	defer run.End(telemetry.RunResult{})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const calls = 200
	for i := range calls {
		_, tool := tel.StartTool(ctx, telemetry.ToolInfo{Name: "t", Registered: true})
		tool.End(telemetry.ToolOutcome{Err: strings.Repeat(string(rune('a'+i%26)), 1<<20)})
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 40<<20 {
		t.Errorf("%d finished tool spans hold %d MB", calls, grew>>20)
	}
}
