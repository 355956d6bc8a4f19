package telemetry_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/telemetry"
	"github.com/jazz-run/jazz/telemetry/otlptest"
)

const validParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// hugeState is a tracestate the W3C grammar accepts (32 members of 250
// characters) but no vendor need propagate: 8 KB on every span and message.
func hugeState() string {
	members := make([]string, 32)
	for i := range members {
		members[i] = fmt.Sprintf("k%d=%s", i, strings.Repeat("v", 250))
	}
	return strings.Join(members, ",")
}

// TestTraceContextFromOutsideIsBounded: a carrier from outside (a remote
// task, a bus message, TRACEPARENT) is passed on as a valid traceparent
// and a bounded tracestate, nothing else; a malformed or huge one is
// ignored, never an error or a parent.
func TestTraceContextFromOutsideIsBounded(t *testing.T) {
	tests := []struct {
		name      string
		carrier   messages.Trace
		parent    bool   // the run becomes a child of the caller
		wantState string // the tracestate passed on
	}{
		{"valid", messages.Trace{"traceparent": validParent, "tracestate": "a=1"}, true, "a=1"},
		{"huge tracestate", messages.Trace{"traceparent": validParent, "tracestate": hugeState()}, true, ""},
		{"extra keys", messages.Trace{"traceparent": validParent, "Nats-Msg-Id": "dup", "jazz-seal": "forged", "authorization": "Bearer x"}, true, ""},
		{"huge traceparent", messages.Trace{"traceparent": "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-" + strings.Repeat("f", 10<<20)}, false, ""},
		{"malformed traceparent", messages.Trace{"traceparent": "00-xyz-00f067aa0ba902b7-01", "tracestate": "a=1"}, false, ""},
		{"newline in tracestate", messages.Trace{"traceparent": validParent, "tracestate": "a=1\nb=2"}, true, ""},
		{"no traceparent", messages.Trace{"tracestate": "a=1", "x": "y"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := telemetry.Extract(context.Background(), tt.carrier)
			sc := trace.SpanContextFromContext(ctx)
			if sc.IsValid() != tt.parent {
				t.Fatalf("Extract: a parent is %v, want %v", sc.IsValid(), tt.parent)
			}
			if got := sc.TraceState().String(); got != tt.wantState {
				t.Errorf("Extract: tracestate of %d bytes, want %q", len(got), tt.wantState)
			}
			c := telemetry.Clean(tt.carrier)
			if !tt.parent {
				if c != nil {
					t.Errorf("Clean = %v, want nil", c)
				}
				return
			}
			for k := range c {
				if k != telemetry.HeaderTraceparent && k != telemetry.HeaderTracestate {
					t.Errorf("Clean kept the key %q", k)
				}
			}
			if c[telemetry.HeaderTraceparent] != validParent || c[telemetry.HeaderTracestate] != tt.wantState {
				t.Errorf("Clean = %v", c)
			}
			// TRACEPARENT and TRACESTATE go through the same gate.
			parsed, err := telemetry.ParseTraceparent(tt.carrier["traceparent"], tt.carrier["tracestate"])
			if err != nil || parsed[telemetry.HeaderTracestate] != tt.wantState {
				t.Errorf("ParseTraceparent = %v, %v; want tracestate %q", parsed, err, tt.wantState)
			}
		})
	}
}

// TestHugeTracestateIsNotExported: even a span whose parent carries an
// overlong tracestate (one set in code, past Extract) exports none.
func TestHugeTracestateIsNotExported(t *testing.T) {
	r := otlptest.Start(t)
	tel, _ := setup(t, r, telemetry.ProtocolHTTPProtobuf, telemetry.Settings{})
	ts, err := trace.ParseTraceState(hugeState())
	if err != nil {
		t.Fatal(err)
	}
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	_, span := tel.Tracer.Start(trace.ContextWithRemoteSpanContext(context.Background(), parent), "s")
	span.End()
	tel.Shutdown(context.Background())
	waitSpans(t, r, 1)
	for _, raw := range r.RawRequests() {
		for _, rs := range raw.Traces.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					if n := len(s.GetTraceState()); n != 0 {
						t.Errorf("a tracestate of %d bytes was exported", n)
					}
				}
			}
		}
	}
}
