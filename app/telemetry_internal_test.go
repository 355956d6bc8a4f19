package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/messages"
)

func TestRunParent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const other = "00-11111111111111111111111111111111-2222222222222222-01"
	tests := []struct {
		name     string
		flag     string
		env      map[string]string
		want     string
		wantWarn bool
	}{
		{name: "none"},
		{name: "env", env: map[string]string{EnvTraceparent: tp}, want: tp},
		{name: "flag wins over env", flag: tp, env: map[string]string{EnvTraceparent: other}, want: tp},
		{name: "malformed flag", flag: "00-zz", wantWarn: true},
		{name: "all-zero trace id", env: map[string]string{EnvTraceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}, wantWarn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var warns []string
			got := runParent(tt.flag, func(k string) string { return tt.env[k] }, func(m string) { warns = append(warns, m) })
			if got["traceparent"] != tt.want {
				t.Errorf("traceparent = %q, want %q", got["traceparent"], tt.want)
			}
			if (len(warns) > 0) != tt.wantWarn {
				t.Errorf("warnings %q, want some: %v", warns, tt.wantWarn)
			}
		})
	}
}

func TestRunResult(t *testing.T) {
	tests := []struct {
		name    string
		out     messages.RunFinished
		err     error
		outcome string
	}{
		{name: "ok", out: messages.RunFinished{OK: true}, outcome: "completed"},
		{name: "failed", out: messages.RunFinished{Error: "boom"}, outcome: "failed"},
		{name: "cancelled", err: ErrCancelled, outcome: "cancelled"},
		{name: "timeout", err: &TimeoutError{}, outcome: "timeout"},
		{name: "other error", err: errors.New("x"), outcome: "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runResult(tt.out, tt.err)
			if r.Outcome != tt.outcome || (tt.outcome != "completed") != (r.Err != "") {
				t.Fatalf("runResult = %+v, want outcome %s with an error unless completed", r, tt.outcome)
			}
		})
	}
}

func TestDecisionTrace(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	own := messages.Trace{"traceparent": "00-11111111111111111111111111111111-2222222222222222-01"}
	if got := decisionTrace(own, messages.Trace{"traceparent": tp}); got["traceparent"] != own["traceparent"] {
		t.Errorf("the message's own trace must win, got %v", got)
	}
	if got := decisionTrace(nil, messages.Trace{"traceparent": tp}); got["traceparent"] != tp {
		t.Errorf("header trace not taken, got %v", got)
	}
	if got := decisionTrace(nil, messages.Trace{"traceparent": "junk"}); got != nil {
		t.Errorf("a malformed header must give no trace, got %v", got)
	}
}

func TestOpenTelemetryOff(t *testing.T) {
	off := false
	tests := []struct {
		name     string
		cfg      *config.Config
		env      map[string]string
		wantWarn string
	}{
		{name: "no endpoint", cfg: &config.Config{}},
		{name: "telemetry disabled", cfg: &config.Config{Telemetry: config.Telemetry{Enabled: &off}},
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}},
		{name: "otlp disabled", cfg: &config.Config{Telemetry: config.Telemetry{OTLP: config.OTLP{Enabled: &off, Endpoint: "http://127.0.0.1:1"}}}},
		{name: "malformed endpoint", cfg: &config.Config{}, env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318"},
			wantWarn: "export disabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var warns []string
			tel := openTelemetry(context.Background(), tt.cfg, func(k string) string { return tt.env[k] }, nil, func(m string) { warns = append(warns, m) })
			if tel.Enabled() {
				t.Fatal("export is on")
			}
			if got := strings.Join(warns, "\n"); (tt.wantWarn == "") != (got == "") || !strings.Contains(got, tt.wantWarn) {
				t.Fatalf("warnings %q, want %q", got, tt.wantWarn)
			}
		})
	}
}
