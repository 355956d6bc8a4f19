package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/jazz-run/jazz/messages"
)

// Header names of W3C trace context.
const (
	HeaderTraceparent = "traceparent"
	HeaderTracestate  = "tracestate"
)

// ErrTraceparent is returned (wrapped) by ParseTraceparent for a value that
// is not a W3C traceparent.
var ErrTraceparent = errors.New("not a valid W3C traceparent")

// Inject returns a carrier holding the trace context of the span in ctx, for
// a message's Trace field. It is nil when ctx has no valid span context, so
// `omitempty` leaves it off the wire. It works whether export is on or not.
func Inject(ctx context.Context) messages.Trace {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := make(messages.Trace, 2)
	w3c().Inject(ctx, c)
	return c
}

// Extract returns ctx with the remote span context the carrier holds as the
// parent of spans started under it; ctx unchanged when the carrier holds
// none (or a malformed one).
func Extract(ctx context.Context, c messages.Trace) context.Context {
	if len(c) == 0 {
		return ctx
	}
	return w3c().Extract(ctx, c)
}

// InjectHeader writes the trace context of the span in ctx into NATS
// headers (traceparent, tracestate), for messages crossing processes.
func InjectHeader(ctx context.Context, h nats.Header) {
	if h == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	w3c().Inject(ctx, natsCarrier(h))
}

// ExtractHeader is Extract for NATS headers.
func ExtractHeader(ctx context.Context, h nats.Header) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return w3c().Extract(ctx, natsCarrier(h))
}

// natsCarrier adapts nats.Header, whose keys are case-sensitive, to the
// propagator: lowercase keys are written, and reads fall back to a
// case-insensitive match so a peer that wrote "Traceparent" still joins.
type natsCarrier nats.Header

func (c natsCarrier) Get(key string) string {
	if v := nats.Header(c).Get(key); v != "" {
		return v
	}
	for k, vs := range c {
		if strings.EqualFold(k, key) && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

func (c natsCarrier) Set(key, value string) { nats.Header(c).Set(key, value) }

func (c natsCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// ParseTraceparent validates a traceparent given to `jazz run` (the
// TRACEPARENT variable or the flag) and returns it as a carrier for
// RunInfo.Parent, so the run becomes a child of the caller's trace.
// tracestate may be empty. An invalid value is an error for a warning: the
// run then starts its own trace.
func ParseTraceparent(traceparent, tracestate string) (messages.Trace, error) {
	traceparent = strings.TrimSpace(traceparent)
	c := messages.Trace{HeaderTraceparent: traceparent}
	if ts := strings.TrimSpace(tracestate); ts != "" {
		c[HeaderTracestate] = ts
	}
	if !trace.SpanContextFromContext(w3c().Extract(context.Background(), c)).IsValid() {
		return nil, fmt.Errorf("traceparent %q: %w (want 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>)", cut(traceparent, 80), ErrTraceparent)
	}
	return c, nil
}

// w3c is the W3C trace-context propagator. It is a stateless value: using
// it directly keeps propagation off the OpenTelemetry globals.
func w3c() propagation.TraceContext { return propagation.TraceContext{} }

// Within returns ctx, keeping its deadline and cancellation, with the span
// and run ids of from: work started under it (a tool handler, a subagent)
// nests under from's span. ctx is returned unchanged when from holds no
// span.
func Within(ctx, from context.Context) context.Context {
	if !trace.SpanContextFromContext(from).IsValid() {
		return ctx
	}
	ctx = trace.ContextWithSpan(ctx, trace.SpanFromContext(from))
	if ids := IDsFrom(from); ids != (IDs{}) {
		ctx = WithIDs(ctx, ids)
	}
	return ctx
}
