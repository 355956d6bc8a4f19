package telemetry

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// The collector misbehaves in each of these tests; the exporter must give
// up or succeed within a bound, retry only what the rules say, and never
// show a header value.

const testSecret = "s3cr3t-token-value"

var testHeaders = map[string]string{"authorization": "Bearer " + testSecret, "x-api-key": "key-" + testSecret}

// testSpans is one small batch.
func testSpans(t *testing.T) []sdktrace.ReadOnlySpan { return diffSpans(t)[:2] }

// spanExporterFor builds our exporter with a short attempt timeout.
func spanExporterFor(t *testing.T, protocol, url string, timeout time.Duration) *otlpSpanExporter {
	t.Helper()
	e, err := newOTLPSpanExporter(Settings{Protocol: protocol, TracesEndpoint: url, Headers: testHeaders}, timeout, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

// export runs one export under a deadline that only turns a hang into a
// failure, and checks the error never leaks a header value.
func export(t *testing.T, e *otlpSpanExporter) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	began := time.Now()
	err := e.ExportSpans(ctx, testSpans(t))
	took := time.Since(began)
	if ctx.Err() != nil {
		t.Fatalf("export did not end within its bounds (took %v): %v", took, err)
	}
	if err != nil && strings.Contains(err.Error(), testSecret) {
		t.Errorf("error shows a header value: %v", err)
	}
	return took, err
}

// echoHandler answers status with a body that echoes the request's
// headers, as a careless proxy might, and counts requests.
func echoHandler(n *atomic.Int32, status int, extra http.Header) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		for k, v := range extra {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, "denied: authorization=%q x-api-key=%q", r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
	}
}

func TestHTTPStatusRetries(t *testing.T) {
	tests := []struct {
		status   int
		attempts int32
	}{
		{200, 1}, {204, 1},
		{400, 1}, {401, 1}, {403, 1}, {404, 1}, {413, 1},
		{408, 3}, {429, 3}, {500, 3}, {502, 3}, {503, 3}, {504, 3},
		{301, 1}, {307, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			srv := httptest.NewServer(echoHandler(&n, tt.status, http.Header{"Location": {"http://elsewhere.invalid/v1/traces"}}))
			defer srv.Close()
			took, err := export(t, spanExporterFor(t, ProtocolHTTPProtobuf, srv.URL+"/v1/traces", 2*time.Second))
			if got := n.Load(); got != tt.attempts {
				t.Errorf("%d attempts, want %d (err %v)", got, tt.attempts, err)
			}
			if (err == nil) != (tt.status < 300) {
				t.Fatalf("status %d: err %v", tt.status, err)
			}
			if err == nil {
				return
			}
			if !strings.Contains(err.Error(), fmt.Sprint(tt.status)) {
				t.Errorf("error does not name the status: %v", err)
			}
			if tt.attempts == 3 && took < 750*time.Millisecond {
				t.Errorf("3 attempts in %v: the 250 ms and 500 ms waits were skipped", took)
			}
			if tt.status/100 == 3 && !strings.Contains(err.Error(), "not followed") {
				t.Errorf("redirect error does not say it was not followed: %v", err)
			}
		})
	}
}

func TestRetryAfterTooLongStopsRetrying(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(echoHandler(&n, http.StatusTooManyRequests, http.Header{"Retry-After": {"3600"}}))
	defer srv.Close()
	_, err := export(t, spanExporterFor(t, ProtocolHTTPProtobuf, srv.URL, 2*time.Second))
	if n.Load() != 1 || err == nil || !strings.Contains(err.Error(), "asks to wait") {
		t.Errorf("attempts %d, err %v; want one attempt and the collector's wait named", n.Load(), err)
	}
}

func TestRetryAfterIsHonored(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	took, err := export(t, spanExporterFor(t, ProtocolHTTPProtobuf, srv.URL, 2*time.Second))
	if err != nil || n.Load() != 2 {
		t.Fatalf("attempts %d, err %v; want success on the second", n.Load(), err)
	}
	if took < time.Second {
		t.Errorf("retried after %v, before the collector's Retry-After of 1 s", took)
	}
}

func TestCollectorDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	for _, protocol := range diffProtocols {
		t.Run(protocol, func(t *testing.T) {
			took, err := export(t, spanExporterFor(t, protocol, url+"/v1/traces", 2*time.Second))
			if err == nil || !strings.Contains(err.Error(), "after 3 attempts") {
				t.Errorf("err %v, want a failure after 3 attempts", err)
			}
			t.Logf("down: %v in %v", err, took)
		})
	}
}

// hangServer accepts requests and never answers until the test ends.
func hangServer(t *testing.T, h2c bool) (string, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	stop := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	if h2c {
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetHTTP1(true)
		srv.Config.Protocols.SetUnencryptedHTTP2(true)
	}
	srv.Start()
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv.URL, &n
}

func TestHangingCollector(t *testing.T) {
	for _, protocol := range diffProtocols {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			url, n := hangServer(t, protocol == ProtocolGRPC)
			took, err := export(t, spanExporterFor(t, protocol, url, 300*time.Millisecond))
			if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
				t.Errorf("err %v, want a timeout", err)
			}
			if n.Load() != 3 {
				t.Errorf("%d attempts, want 3", n.Load())
			}
			// 3 × 300 ms + 250 ms + 500 ms, with room for a loaded machine.
			if took > 6*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
}

func TestShutdownEndsExportInFlight(t *testing.T) {
	url, n := hangServer(t, false)
	e := spanExporterFor(t, ProtocolHTTPProtobuf, url, 10*time.Second)
	done := make(chan error, 1)
	go func() { done <- e.ExportSpans(context.Background(), testSpans(t)) }()
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	e.c.close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a canceled export reported success")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("close did not end the export in flight")
	}
	_ = e.Shutdown(context.Background())
	if err := e.ExportSpans(context.Background(), testSpans(t)); !errors.Is(err, errShutdown) {
		t.Errorf("export after Shutdown: %v", err)
	}
}

// traceServer is a gRPC TraceService answering with export.
type traceServer struct {
	coltracepb.UnimplementedTraceServiceServer
	n      atomic.Int32
	export func(n int32) (*coltracepb.ExportTraceServiceResponse, error)
}

func (s *traceServer) Export(_ context.Context, _ *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	return s.export(s.n.Add(1))
}

func startGRPC(t *testing.T, s *traceServer) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(g, s)
	go func() { _ = g.Serve(l) }()
	t.Cleanup(g.Stop)
	return "http://" + l.Addr().String()
}

func withRetryInfo(t *testing.T, code codes.Code, delay time.Duration) error {
	st, err := status.New(code, "slow down").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

func TestGRPCStatusRetries(t *testing.T) {
	tests := []struct {
		name     string
		err      func(t *testing.T) error
		attempts int32
		want     string
	}{
		{"unavailable", func(*testing.T) error { return status.Error(codes.Unavailable, "down for maintenance, 100% sure") }, 3, "Unavailable: down for maintenance, 100% sure"},
		{"deadline", func(*testing.T) error { return status.Error(codes.DeadlineExceeded, "late") }, 3, "DeadlineExceeded"},
		{"aborted", func(*testing.T) error { return status.Error(codes.Aborted, "x") }, 3, "Aborted"},
		{"data loss", func(*testing.T) error { return status.Error(codes.DataLoss, "x") }, 3, "DataLoss"},
		{"invalid", func(*testing.T) error { return status.Error(codes.InvalidArgument, "bad span") }, 1, "InvalidArgument: bad span"},
		{"unauthenticated", func(*testing.T) error {
			return status.Error(codes.Unauthenticated, "bad token Bearer "+testSecret)
		}, 1, "Unauthenticated: bad token"},
		{"permission", func(*testing.T) error { return status.Error(codes.PermissionDenied, "x") }, 1, "PermissionDenied"},
		{"exhausted, no hint", func(*testing.T) error { return status.Error(codes.ResourceExhausted, "quota") }, 1, "ResourceExhausted"},
		{"exhausted, hint", func(t *testing.T) error { return withRetryInfo(t, codes.ResourceExhausted, 300*time.Millisecond) }, 3, "ResourceExhausted"},
		{"unavailable, long hint", func(t *testing.T) error { return withRetryInfo(t, codes.Unavailable, time.Hour) }, 1, "asks to wait"},
		{"unimplemented", func(*testing.T) error { return status.Error(codes.Unimplemented, "x") }, 1, "Unimplemented"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &traceServer{export: func(int32) (*coltracepb.ExportTraceServiceResponse, error) { return nil, tt.err(t) }}
			url := startGRPC(t, s)
			took, err := export(t, spanExporterFor(t, ProtocolGRPC, url, 2*time.Second))
			if got := s.n.Load(); got != tt.attempts {
				t.Errorf("%d attempts, want %d (err %v)", got, tt.attempts, err)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want it to contain %q", err, tt.want)
			}
			if tt.name == "exhausted, hint" && took < 600*time.Millisecond {
				t.Errorf("retried after %v, sooner than the server's RetryInfo", took)
			}
		})
	}
}

func TestGRPCRecoversAfterUnavailable(t *testing.T) {
	s := &traceServer{export: func(n int32) (*coltracepb.ExportTraceServiceResponse, error) {
		if n < 3 {
			return nil, status.Error(codes.Unavailable, "warming up")
		}
		return &coltracepb.ExportTraceServiceResponse{}, nil
	}}
	url := startGRPC(t, s)
	if _, err := export(t, spanExporterFor(t, ProtocolGRPC, url, 2*time.Second)); err != nil || s.n.Load() != 3 {
		t.Errorf("attempts %d, err %v; want success on the third", s.n.Load(), err)
	}
}

func TestPartialSuccessIsReported(t *testing.T) {
	partial := &coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 2, ErrorMessage: "spans too old"}}
	t.Run("grpc", func(t *testing.T) {
		s := &traceServer{export: func(int32) (*coltracepb.ExportTraceServiceResponse, error) { return partial, nil }}
		_, err := export(t, spanExporterFor(t, ProtocolGRPC, startGRPC(t, s), 2*time.Second))
		if err == nil || !strings.Contains(err.Error(), "rejected 2 spans: spans too old") || s.n.Load() != 1 {
			t.Errorf("attempts %d, err %v", s.n.Load(), err)
		}
	})
	for _, protocol := range []string{ProtocolHTTPProtobuf, ProtocolHTTPJSON} {
		t.Run(protocol, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if protocol == ProtocolHTTPJSON {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, `{"partialSuccess":{"rejectedSpans":"2","errorMessage":"spans too old"}}`)
					return
				}
				b, _ := proto.Marshal(partial)
				w.Header().Set("Content-Type", "application/x-protobuf")
				_, _ = w.Write(b)
			}))
			defer srv.Close()
			_, err := export(t, spanExporterFor(t, protocol, srv.URL, 2*time.Second))
			if err == nil || !strings.Contains(err.Error(), "rejected 2 spans: spans too old") {
				t.Errorf("err %v", err)
			}
		})
	}
}

// TestGRPCToNonGRPCServer: an HTTP/2 server that is not gRPC (a web
// server, a proxy's error page) fails clearly, and retries only when its
// HTTP status says the condition is transient.
func TestGRPCToNonGRPCServer(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		ct       string
		attempts int32
		want     string
	}{
		{"html 200", 200, "text/html", 1, "not a gRPC server"},
		{"404", 404, "text/plain", 1, "Unimplemented"},
		{"401", 401, "text/plain", 1, "Unauthenticated"},
		{"503", 503, "text/plain", 3, "Unavailable"},
		{"grpc without status", 200, "application/grpc", 3, "without a gRPC status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				if r.ProtoMajor != 2 {
					t.Errorf("gRPC request over %s", r.Proto)
				}
				w.Header().Set("Content-Type", tt.ct)
				w.WriteHeader(tt.status)
				fmt.Fprint(w, "<html>not grpc</html>")
			}))
			srv.Config.Protocols = new(http.Protocols)
			srv.Config.Protocols.SetUnencryptedHTTP2(true)
			srv.Start()
			defer srv.Close()
			_, err := export(t, spanExporterFor(t, ProtocolGRPC, srv.URL, 2*time.Second))
			if n.Load() != tt.attempts {
				t.Errorf("%d attempts, want %d (err %v)", n.Load(), tt.attempts, err)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestGRPCToHTTP1Server: speaking HTTP/2 to an HTTP/1-only server fails
// within the bounds instead of hanging.
func TestGRPCToHTTP1Server(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(echoHandler(&n, 200, nil))
	defer srv.Close()
	_, err := export(t, spanExporterFor(t, ProtocolGRPC, srv.URL, 2*time.Second))
	if err == nil {
		t.Fatal("gRPC to an HTTP/1 server succeeded")
	}
	t.Logf("HTTP/1 server: %v", err)
}

// TestGRPCOverTLS sends through TLS with ALPN h2 to a gRPC server.
func TestGRPCOverTLS(t *testing.T) {
	s := &traceServer{export: func(int32) (*coltracepb.ExportTraceServiceResponse, error) {
		return &coltracepb.ExportTraceServiceResponse{}, nil
	}}
	g := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(g, s)
	srv := httptest.NewUnstartedServer(g)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	e := spanExporterFor(t, ProtocolGRPC, srv.URL, 2*time.Second)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	e.c.hc.Transport.(*http.Transport).TLSClientConfig.RootCAs = roots
	if _, err := export(t, e); err != nil || s.n.Load() != 1 {
		t.Fatalf("attempts %d, err %v", s.n.Load(), err)
	}
}

func TestGRPCTimeoutHeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	h := grpcTimeout(ctx)
	if !strings.HasSuffix(h, "m") || len(h) > 9 || h == "0m" {
		t.Errorf("grpc-timeout %q", h)
	}
	if got := grpcTimeout(context.Background()); got != "99999999m" {
		t.Errorf("no deadline: %q", got)
	}
}

// FuzzJSONString: our JSON string writer decodes to what encoding/json's
// own encoding of the same Go string decodes to, invalid UTF-8 included.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote\" back\\", "\x00\x01\x1f\x7f", "é✓𝄞", "\xff\xfe", "a\xc3", "\u2028\u2029", "</script>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w := &jsonw{}
		w.string(s)
		var got, want string
		if err := json.Unmarshal(w.b, &got); err != nil {
			t.Fatalf("%q encodes to invalid JSON %s: %v", s, w.b, err)
		}
		ref, _ := json.Marshal(s)
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%q: got %q, want %q", s, got, want)
		}
	})
}

// TestCollectorWordsNeverShowAHeaderValue: what a collector says back (a
// partial success's message, an error's text) may echo the credentials it
// was sent, however short; the warning jazz prints must not.
func TestCollectorWordsNeverShowAHeaderValue(t *testing.T) {
	const short = "k3y!9" // under secrets.MinSecretLen
	headers := map[string]string{"authorization": "Bearer abc12", "x-api-key": short}
	for _, protocol := range []string{ProtocolHTTPProtobuf, ProtocolHTTPJSON} {
		t.Run(protocol, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				echo := "rejected for " + r.Header.Get("Authorization") + " and " + r.Header.Get("X-Api-Key")
				if protocol == ProtocolHTTPJSON {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"partialSuccess":{"rejectedSpans":"1","errorMessage":%q}}`, echo)
					return
				}
				b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 1, ErrorMessage: echo}})
				w.Header().Set("Content-Type", "application/x-protobuf")
				_, _ = w.Write(b)
			}))
			defer srv.Close()
			e, err := newOTLPSpanExporter(Settings{Protocol: protocol, TracesEndpoint: srv.URL, Headers: headers}, 2*time.Second, "test")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = e.Shutdown(context.Background()) }()
			_, err = export(t, e)
			if err == nil || !strings.Contains(err.Error(), "rejected 1 spans") {
				t.Fatalf("err %v, want the partial success reported", err)
			}
			for _, v := range []string{"abc12", short} {
				if strings.Contains(err.Error(), v) {
					t.Errorf("the warning shows a header value %q: %v", v, err)
				}
			}
		})
	}
}
