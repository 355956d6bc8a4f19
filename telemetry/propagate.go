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

// Bounds of a trace context from outside. W3C asks a vendor to propagate
// a tracestate of up to 512 characters; a traceparent of version 00 is 55,
// and later versions may only append fields.
const (
	maxTraceparent = 512
	maxTracestate  = maxTraceState
)

// Extract returns ctx with the remote span context the carrier holds as the
// parent of spans started under it; ctx unchanged when the carrier holds
// none (or a malformed one). A tracestate longer than W3C's 512 characters
// is ignored (the traceparent still counts): it would ride on every span
// and message of the run.
func Extract(ctx context.Context, c messages.Trace) context.Context {
	if len(c) == 0 {
		return ctx
	}
	return w3c().Extract(ctx, bounded(c))
}

// bounded is the part of c the propagator may read: the W3C keys only,
// an overlong traceparent read as none and an overlong tracestate dropped.
func bounded(c messages.Trace) messages.Trace {
	tp := c[HeaderTraceparent]
	if tp == "" || len(tp) > maxTraceparent {
		return nil
	}
	out := messages.Trace{HeaderTraceparent: tp}
	if ts := c[HeaderTracestate]; ts != "" && len(ts) <= maxTracestate {
		out[HeaderTracestate] = ts
	}
	return out
}

// Clean returns the trace context of a carrier from outside (a remote
// task, a bus message, a caller) as jazz passes it on: a valid traceparent,
// re-encoded, and its tracestate when that is valid and within bounds;
// nil when there is no valid traceparent. Nothing else survives: a
// carrier becomes NATS headers on every message it rides on, so an extra
// key (a Nats-Msg-Id, a seal) or a huge value would ride along too.
func Clean(c messages.Trace) messages.Trace {
	if len(c) == 0 {
		return nil
	}
	return Inject(Extract(context.Background(), c))
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
	clean := Clean(c)
	if clean == nil {
		return nil, fmt.Errorf("traceparent %q: %w (want 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>)", cut(traceparent, 80), ErrTraceparent)
	}
	return clean, nil
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
