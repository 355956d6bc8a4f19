package telemetry_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/telemetry"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name string
		cfg  telemetry.Settings
		env  map[string]string
		want telemetry.Settings // Enabled compared through On()
		on   bool
		warn string // substring of the only warning, "" for none
	}{
		{
			name: "nothing set: disabled, defaults",
			want: telemetry.Settings{ServiceName: "jazz", Protocol: "http/protobuf", TimeoutMs: 10000},
		},
		{
			name: "env endpoint alone turns export on, trailing slash stripped",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"},
			want: telemetry.Settings{Endpoint: "http://collector:4318", TracesEndpoint: "http://collector:4318/v1/traces",
				MetricsEndpoint: "http://collector:4318/v1/metrics", ServiceName: "jazz", Protocol: "http/protobuf", TimeoutMs: 10000},
			on: true,
		},
		{
			name: "config wins over env",
			cfg:  telemetry.Settings{Endpoint: "https://cfg:4318", ServiceName: "svc", Protocol: "grpc", TimeoutMs: 500},
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318", "OTEL_SERVICE_NAME": "envsvc",
				"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
			want: telemetry.Settings{Endpoint: "https://cfg:4318", TracesEndpoint: "https://cfg:4318", MetricsEndpoint: "https://cfg:4318",
				ServiceName: "svc", Protocol: "grpc", TimeoutMs: 500},
			on: true,
		},
		{
			name: "signal endpoints are verbatim and win over the base",
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://base:4318",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":  "http://t:1/custom/traces/",
				"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m:2/m"},
			want: telemetry.Settings{Endpoint: "http://base:4318", TracesEndpoint: "http://t:1/custom/traces/", MetricsEndpoint: "http://m:2/m",
				ServiceName: "jazz", Protocol: "http/protobuf", TimeoutMs: 10000},
			on: true,
		},
		{
			name: "traces endpoint alone: no metrics",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/v1/traces"},
			want: telemetry.Settings{TracesEndpoint: "http://t:1/v1/traces", ServiceName: "jazz", Protocol: "http/protobuf", TimeoutMs: 10000},
			on:   true,
		},
		{
			name: "OTEL_METRICS_EXPORTER=none: traces only",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318", "OTEL_METRICS_EXPORTER": "None"},
			want: telemetry.Settings{Endpoint: "http://jaeger:4318", TracesEndpoint: "http://jaeger:4318/v1/traces",
				ServiceName: "jazz", Protocol: "http/protobuf", TimeoutMs: 10000},
			on: true,
		},
		{
			name: "env protocol grpc, case-insensitive",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "GRPC"},
			want: telemetry.Settings{Endpoint: "http://c:4317", TracesEndpoint: "http://c:4317", MetricsEndpoint: "http://c:4317",
				ServiceName: "jazz", Protocol: "grpc", TimeoutMs: 10000},
			on: true,
		},
		{
			name: "unknown protocol warns and falls back",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"},
			want: telemetry.Settings{ServiceName: "jazz", Protocol: "http/protobuf", TimeoutMs: 10000},
			warn: "unknown OTLP protocol",
		},
		{
			name: "enabled false opts out, keeping the endpoint",
			cfg:  telemetry.Settings{Enabled: telemetry.Bool(false), Endpoint: "http://c:4318"},
			want: telemetry.Settings{Endpoint: "http://c:4318", TracesEndpoint: "http://c:4318/v1/traces", MetricsEndpoint: "http://c:4318/v1/metrics",
				ServiceName: "jazz", Protocol: "http/protobuf", TimeoutMs: 10000},
		},
		{
			name: "OTEL_SDK_DISABLED=true turns export off",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "TRUE"},
			want: telemetry.Settings{Endpoint: "http://c:4318", TracesEndpoint: "http://c:4318/v1/traces", MetricsEndpoint: "http://c:4318/v1/metrics",
				ServiceName: "jazz", Protocol: "http/protobuf", TimeoutMs: 10000},
		},
		{
			name: "config enabled true overrides OTEL_SDK_DISABLED",
			cfg:  telemetry.Settings{Enabled: telemetry.Bool(true)},
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"},
			want: telemetry.Settings{Endpoint: "http://c:4318", TracesEndpoint: "http://c:4318/v1/traces", MetricsEndpoint: "http://c:4318/v1/metrics",
				ServiceName: "jazz", Protocol: "http/protobuf", TimeoutMs: 10000},
			on: true,
		},
		{
			name: "enabled true without endpoint warns",
			cfg:  telemetry.Settings{Enabled: telemetry.Bool(true)},
			want: telemetry.Settings{ServiceName: "jazz", Protocol: "http/protobuf", TimeoutMs: 10000},
			warn: "no traces endpoint",
		},
		{
			name: "malformed endpoint warns and disables",
			cfg:  telemetry.Settings{Endpoint: "http://[::1"},
			want: telemetry.Settings{Endpoint: "http://[::1", TracesEndpoint: "http://[::1/v1/traces", MetricsEndpoint: "",
				ServiceName: "jazz", Protocol: "http/protobuf", TimeoutMs: 10000},
			warn: "not a valid URL",
		},
		{
			name: "endpoint without scheme warns and disables",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
			want: telemetry.Settings{Endpoint: "collector:4318", TracesEndpoint: "collector:4318/v1/traces",
				ServiceName: "jazz", Protocol: "http/protobuf", TimeoutMs: 10000},
			warn: "must start with http",
		},
		{
			name: "malformed metrics endpoint drops metrics only",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "ftp://m"},
			want: telemetry.Settings{Endpoint: "http://c:4318", TracesEndpoint: "http://c:4318/v1/traces",
				ServiceName: "jazz", Protocol: "http/protobuf", TimeoutMs: 10000},
			on:   true,
			warn: "metrics are not exported",
		},
		{
			name: "captureContent is never implied by env",
			env:  map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
			want: telemetry.Settings{ServiceName: "jazz", Protocol: "http/protobuf", TimeoutMs: 10000},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warns := telemetry.Resolve(tt.cfg, env(tt.env))
			if got.Enabled == nil {
				t.Fatal("Enabled is nil after Resolve")
			}
			if got.On() != tt.on {
				t.Errorf("On() = %v, want %v", got.On(), tt.on)
			}
			got.Enabled = nil
			if got.Headers == nil {
				got.Headers = tt.want.Headers
			}
			if !equalSettings(got, tt.want) {
				t.Errorf("Resolve =\n %+v\nwant\n %+v", got, tt.want)
			}
			switch {
			case tt.warn == "" && len(warns) > 0:
				t.Errorf("unexpected warnings %q", warns)
			case tt.warn != "" && (len(warns) != 1 || !strings.Contains(warns[0], tt.warn)):
				t.Errorf("warnings %q, want one containing %q", warns, tt.warn)
			}
		})
	}
}

func equalSettings(a, b telemetry.Settings) bool {
	return maps.Equal(a.Headers, b.Headers) && (a.Enabled == nil) == (b.Enabled == nil) &&
		a.Endpoint == b.Endpoint && a.TracesEndpoint == b.TracesEndpoint && a.MetricsEndpoint == b.MetricsEndpoint &&
		a.ServiceName == b.ServiceName && a.ServiceVersion == b.ServiceVersion && a.Protocol == b.Protocol &&
		a.CaptureContent == b.CaptureContent && a.TimeoutMs == b.TimeoutMs
}

func TestResolveHeaders(t *testing.T) {
	tests := []struct {
		name   string
		cfg    map[string]string
		env    string
		want   map[string]string
		on     bool
		warn   string
		secret string // must not appear in any warning
	}{
		{name: "split, first =, trimmed", env: " a = 1 , b=x=y ", want: map[string]string{"a": "1", "b": "x=y"}, on: true},
		{name: "percent-decoded", env: "Authorization=Bearer%20abc%2Cdef", want: map[string]string{"Authorization": "Bearer abc,def"}, on: true},
		{name: "raw when decoding fails", env: "k=100%zz", want: map[string]string{"k": "100%zz"}, on: true},
		{name: "empty keys and entries skipped", env: "=v,,a=1,", want: map[string]string{"a": "1"}, on: true},
		{name: "empty value kept", env: "a=", want: map[string]string{"a": ""}, on: true},
		{name: "config replaces env", cfg: map[string]string{"x-team": "jazz"}, env: "a=1,b=2", want: map[string]string{"x-team": "jazz"}, on: true},
		{name: "entry without = is malformed", env: "api-key=s3cr3t,justasecretvalue", want: map[string]string{"api-key": "s3cr3t"},
			warn: "entry 2 has no '='", secret: "s3cr3t"},
		{name: "invalid header name", env: "bad key=s3cr3t", want: map[string]string{"bad key": "s3cr3t"}, warn: "not a valid HTTP header name", secret: "s3cr3t"},
		{name: "control characters in value", cfg: map[string]string{"token": "s3cr3t\r\nx: y"}, want: map[string]string{"token": "s3cr3t\r\nx: y"},
			warn: "control characters", secret: "s3cr3t"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warns := telemetry.Resolve(telemetry.Settings{Endpoint: "http://c:4318", Headers: tt.cfg},
				env(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": tt.env}))
			if !maps.Equal(got.Headers, tt.want) {
				t.Errorf("Headers = %q, want %q", got.Headers, tt.want)
			}
			if got.On() != tt.on {
				t.Errorf("On() = %v, want %v", got.On(), tt.on)
			}
			switch {
			case tt.warn == "" && len(warns) > 0:
				t.Errorf("unexpected warnings %q", warns)
			case tt.warn != "" && (len(warns) != 1 || !strings.Contains(warns[0], tt.warn)):
				t.Errorf("warnings %q, want one containing %q", warns, tt.warn)
			}
			for _, w := range warns {
				if tt.secret != "" && strings.Contains(w, tt.secret) || strings.Contains(w, "justasecretvalue") {
					t.Errorf("warning leaks a header value: %q", w)
				}
			}
		})
	}
}

func TestParseHeaders(t *testing.T) {
	got, err := telemetry.ParseHeaders("a=1,b = two%21")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "1", "b": "two!"}; !maps.Equal(got, want) {
		t.Errorf("ParseHeaders = %q, want %q", got, want)
	}
	if _, err := telemetry.ParseHeaders("a=1,oops"); err == nil {
		t.Error("ParseHeaders accepted an entry without '='")
	}
}
