package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
