package telemetry

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/jazz-run/jazz/secrets"
)

// Protocols accepted in Settings.Protocol and OTEL_EXPORTER_OTLP_PROTOCOL.
const (
	// ProtocolHTTPProtobuf is OTLP over HTTP with protobuf bodies (the default).
	ProtocolHTTPProtobuf = "http/protobuf"
	// ProtocolHTTPJSON is OTLP over HTTP with JSON bodies. Traces only:
	// metrics fall back to protobuf, which every OTLP/HTTP receiver accepts.
	ProtocolHTTPJSON = "http/json"
	// ProtocolGRPC is OTLP over gRPC.
	ProtocolGRPC = "grpc"
)

// Defaults applied by Resolve.
const (
	DefaultServiceName = "jazz"
	DefaultTimeoutMs   = 10_000
)

// Environment variables Resolve reads.
const (
	EnvEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvMetricsEndpoint = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
	EnvHeaders         = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvServiceName     = "OTEL_SERVICE_NAME"
	EnvProtocol        = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvSDKDisabled     = "OTEL_SDK_DISABLED"
	// EnvMetricsExporter "none" turns metric export off (the standard
	// switch), for a backend that takes traces only, such as Jaeger.
	EnvMetricsExporter = "OTEL_METRICS_EXPORTER"
)

// Settings are the OTLP export settings: config `telemetry.otlp` before
// Resolve, the effective settings after it.
type Settings struct {
	// Enabled nil means "on when an endpoint resolves"; false opts out while
	// keeping the endpoint. After Resolve it is never nil.
	Enabled *bool
	// Endpoint is the base URL; /v1/traces and /v1/metrics are appended for
	// OTLP/HTTP. For gRPC it is the target, used as is.
	Endpoint string
	// TracesEndpoint and MetricsEndpoint are full URLs used verbatim; they
	// win over Endpoint. After Resolve they hold the URLs export will use
	// ("" for a signal that is not exported).
	TracesEndpoint  string
	MetricsEndpoint string
	// Headers are sent with every export request. Config headers replace the
	// environment's as a whole.
	Headers     map[string]string
	ServiceName string
	// ServiceVersion is the jazz version for the resource and the scope.
	ServiceVersion string
	// Protocol is ProtocolHTTPProtobuf (default), ProtocolHTTPJSON or ProtocolGRPC.
	Protocol string
	// CaptureContent exports prompt, completion and argument text. Config
	// only, never implied by the environment.
	CaptureContent bool
	// TimeoutMs bounds one export request.
	TimeoutMs int
	// Secrets are the run's own secret values, replaced in whatever text
	// is exported (with CaptureContent on, error texts go out whole).
	Secrets *secrets.Redactor
}

// On reports whether export is enabled in resolved settings.
func (s Settings) On() bool { return s.Enabled != nil && *s.Enabled && s.TracesEndpoint != "" }

// Resolve applies config, then environment, then defaults, and validates the
// result. A problem never becomes an error: it becomes a warning (worded for
// the person running jazz, never quoting header values) and, when export
// cannot work as configured, export is turned off. getenv is os.Getenv in
// production.
func Resolve(cfg Settings, getenv func(string) string) (Settings, []string) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var warns []string
	warnf := func(format string, a ...any) { warns = append(warns, fmt.Sprintf("telemetry: "+format, a...)) }
	s := Settings{
		Endpoint:        first(cfg.Endpoint, getenv(EnvEndpoint)),
		TracesEndpoint:  first(cfg.TracesEndpoint, getenv(EnvTracesEndpoint)),
		MetricsEndpoint: first(cfg.MetricsEndpoint, getenv(EnvMetricsEndpoint)),
		ServiceName:     first(cfg.ServiceName, getenv(EnvServiceName), DefaultServiceName),
		ServiceVersion:  cfg.ServiceVersion,
		CaptureContent:  cfg.CaptureContent,
		TimeoutMs:       cfg.TimeoutMs,
		Secrets:         cfg.Secrets,
	}
	ok := true

	switch p := strings.ToLower(first(cfg.Protocol, getenv(EnvProtocol), ProtocolHTTPProtobuf)); p {
	case ProtocolHTTPProtobuf, ProtocolHTTPJSON, ProtocolGRPC:
		s.Protocol = p
	default:
		warnf("unknown OTLP protocol %q (want %s, %s or %s); using %s", cut(p, 64), ProtocolHTTPProtobuf, ProtocolHTTPJSON, ProtocolGRPC, ProtocolHTTPProtobuf)
		s.Protocol = ProtocolHTTPProtobuf
	}

	if s.TimeoutMs < 0 {
		warnf("timeoutMs %d is negative; using %d", s.TimeoutMs, DefaultTimeoutMs)
		s.TimeoutMs = 0
	}
	if s.TimeoutMs == 0 {
		s.TimeoutMs = DefaultTimeoutMs
	}

	if cfg.Headers != nil {
		s.Headers = make(map[string]string, len(cfg.Headers))
		for k, v := range cfg.Headers {
			s.Headers[strings.TrimSpace(k)] = v
		}
		delete(s.Headers, "")
		if err := checkHeaders(s.Headers); err != nil {
			warnf("telemetry.otlp.headers: %v; export disabled", err)
			ok = false
		}
	} else if raw := getenv(EnvHeaders); raw != "" {
		h, err := ParseHeaders(raw)
		if err == nil {
			err = checkHeaders(h)
		}
		if err != nil {
			warnf("%s: %v; export disabled", EnvHeaders, err)
			ok = false
		}
		s.Headers = h
	}

	s.Endpoint = strings.TrimRight(strings.TrimSpace(s.Endpoint), "/")
	s.TracesEndpoint = strings.TrimSpace(s.TracesEndpoint)
	s.MetricsEndpoint = strings.TrimSpace(s.MetricsEndpoint)
	baseOK := true
	if s.Endpoint != "" {
		if err := checkEndpoint(s.Endpoint); err != nil {
			warnf("endpoint: %v; export disabled", err)
			ok, baseOK = false, false
		}
	}
	ownTraces, ownMetrics := s.TracesEndpoint != "", s.MetricsEndpoint != ""
	s.TracesEndpoint = signalEndpoint(s.TracesEndpoint, s.Endpoint, s.Protocol, "/v1/traces")
	s.MetricsEndpoint = signalEndpoint(s.MetricsEndpoint, s.Endpoint, s.Protocol, "/v1/metrics")
	if ownTraces {
		if err := checkEndpoint(s.TracesEndpoint); err != nil {
			warnf("traces endpoint: %v; export disabled", err)
			ok = false
		}
	}
	switch {
	case ownMetrics:
		if err := checkEndpoint(s.MetricsEndpoint); err != nil {
			// Metrics are the lesser signal: drop them, keep traces.
			warnf("metrics endpoint: %v; metrics are not exported", err)
			s.MetricsEndpoint = ""
		}
	case !baseOK:
		s.MetricsEndpoint = ""
	}

	if strings.EqualFold(strings.TrimSpace(getenv(EnvMetricsExporter)), "none") {
		s.MetricsEndpoint = ""
	}

	enabled := s.TracesEndpoint != ""
	if v := strings.TrimSpace(getenv(EnvSDKDisabled)); strings.EqualFold(v, "true") {
		enabled = false
	}
	if cfg.Enabled != nil {
		if *cfg.Enabled && s.TracesEndpoint == "" {
			warnf("telemetry.otlp.enabled is true but no traces endpoint is set (telemetry.otlp.endpoint or %s); export disabled", EnvEndpoint)
		}
		enabled = *cfg.Enabled && s.TracesEndpoint != ""
	}
	enabled = enabled && ok
	s.Enabled = &enabled
	return s, warns
}

// ParseHeaders parses an OTEL_EXPORTER_OTLP_HEADERS value: pairs split on
// ",", each at its first "=", key and value trimmed, the value
// percent-decoded (kept raw if decoding fails); empty entries and empty keys
// are skipped. An entry with no "=" is an error; the error names its
// position, never its text, since it may hold a secret.
func ParseHeaders(raw string) (map[string]string, error) {
	h := make(map[string]string)
	for i, entry := range strings.Split(raw, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		k, v, found := strings.Cut(entry, "=")
		if !found {
			return h, fmt.Errorf("entry %d has no '=' (want key=value pairs separated by ',')", i+1)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "" {
			continue
		}
		if d, err := url.PathUnescape(v); err == nil {
			v = d
		}
		h[k] = v
	}
	return h, nil
}

// checkHeaders rejects headers that every export request would fail on. Its
// errors name the header, never the value.
func checkHeaders(h map[string]string) error {
	for k, v := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("header name %q is not a valid HTTP header name", cut(k, 64))
		}
		if !httpguts.ValidHeaderFieldValue(v) {
			return fmt.Errorf("the value of header %q has control characters", k)
		}
	}
	return nil
}

// checkEndpoint accepts an absolute http or https URL with a host. Its
// errors show no more of the URL than shownURL does.
func checkEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("the endpoint is not a valid URL: %w", unwrapURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		if shown := shownURL(raw); shown != "" {
			return fmt.Errorf("%q must start with http:// or https://", shown)
		}
		return errors.New("the endpoint must start with http:// or https://")
	}
	if u.Host == "" {
		return errors.New("the endpoint has no host")
	}
	return nil
}

// shownURL is what a message may show of an endpoint: its scheme and
// host. User info, path, query and fragment are left out, since vendors
// put credentials in each (https://key@…, ?api_key=…, /v1/<token>/…);
// "" when there is no host to show.
func shownURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return ""
	}
	return cut(u.Scheme, 16) + "://" + cut(u.Host, 128)
}

// urlCredentials are the parts of an endpoint that may be credentials
// (the user info, the query's values), for the client to hide in what a
// collector says back: an error page may echo the request URL. A
// password counts however short; a user name or a query value from
// secrets.MinSecretLen characters on, since "?v=1" is no credential and
// hiding every "1" would garble the message.
func urlCredentials(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var vals []string
	long := func(v string) {
		if len(v) >= secrets.MinSecretLen {
			vals = append(vals, v)
		}
	}
	if u.User != nil {
		long(u.User.Username())
		p, ok := u.User.Password()
		if ok {
			vals = append(vals, p)
		}
		// As net/http sends it: Authorization: Basic base64(user:password).
		vals = append(vals, base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+p)))
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			long(v)
		}
	}
	return vals
}

func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// signalEndpoint picks a signal's URL: its own, else the base with the
// signal path (OTLP/HTTP) or the base as is (gRPC).
func signalEndpoint(own, base, protocol, path string) string {
	switch {
	case own != "":
		return own
	case base == "":
		return ""
	case protocol == ProtocolGRPC:
		return base
	default:
		return base + path
	}
}

func first(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Bool returns a pointer to b, for Settings.Enabled.
func Bool(b bool) *bool { return &b }
