package app

import (
	"context"
	"errors"
	"strings"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/telemetry"
)

// Environment variables through which a caller makes a run part of its
// trace (the W3C names, as other tools read them).
const (
	EnvTraceparent = "TRACEPARENT"
	EnvTracestate  = "TRACESTATE"
)

// openTelemetry resolves `telemetry.otlp` and the OTEL_* environment into
// the run's export pipeline. Every problem is a warning and a run without
// export, never an error; with export off nothing of the SDK is built, so
// start-up stays cheap.
func openTelemetry(ctx context.Context, c *config.Config, getenv func(string) string, red *secrets.Redactor, warn func(string)) *telemetry.Telemetry {
	if c == nil || (c.Telemetry.Enabled != nil && !*c.Telemetry.Enabled) {
		return telemetry.Noop() // telemetry.enabled=false stops export too
	}
	ot := c.Telemetry.OTLP
	s, warns := telemetry.Resolve(telemetry.Settings{
		Enabled:        ot.Enabled,
		Endpoint:       ot.Endpoint,
		TracesEndpoint: ot.TracesEndpoint,
		Headers:        ot.Headers,
		ServiceName:    ot.ServiceName,
		CaptureContent: ot.CaptureContent,
		TimeoutMs:      ot.TimeoutMs,
		Secrets:        red,
	}, getenv)
	for _, w := range warns {
		warn(w)
	}
	if !s.On() {
		return telemetry.Noop()
	}
	return telemetry.Setup(ctx, s, warn)
}

// runParent is the caller's trace context for the run: the --traceparent
// flag, else TRACEPARENT (with TRACESTATE). A malformed one is a warning
// and the run starts its own trace.
func runParent(flag string, getenv func(string) string, warn func(string)) messages.Trace {
	tp, ts := strings.TrimSpace(flag), ""
	if tp == "" {
		tp, ts = strings.TrimSpace(getenv(EnvTraceparent)), getenv(EnvTracestate)
	}
	if tp == "" {
		return nil
	}
	parent, err := telemetry.ParseTraceparent(tp, ts)
	if err != nil {
		warn("telemetry: " + err.Error() + "; the run starts its own trace")
		return nil
	}
	return parent
}

// runResult is how the run ended, for its root span.
func runResult(out messages.RunFinished, runErr error) telemetry.RunResult {
	r := telemetry.RunResult{Iterations: out.Iterations, Usage: out.Usage, CostUSD: out.CostUSD}
	var te *TimeoutError
	switch {
	case errors.Is(runErr, ErrCancelled):
		r.Outcome, r.Err = telemetry.OutcomeCancelled, runErr.Error()
	case errors.As(runErr, &te):
		r.Outcome, r.Err = "timeout", runErr.Error()
	case runErr != nil:
		r.Outcome, r.Err = telemetry.OutcomeFailed, runErr.Error()
	case !out.OK:
		r.Outcome, r.Err = telemetry.OutcomeFailed, out.Error
		if r.Err == "" {
			r.Err = "run failed"
		}
	default:
		r.Outcome = telemetry.OutcomeCompleted
	}
	return r
}

// decisionTrace is the trace context of a decision that came over the
// bus: the one in the message, else the one its NATS headers carried (a
// process in another language may only set those), if it is valid.
func decisionTrace(d, header messages.Trace) messages.Trace {
	if len(d) > 0 || len(header) == 0 {
		return d
	}
	return telemetry.Inject(telemetry.Extract(context.Background(), header))
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
