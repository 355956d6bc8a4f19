// Package otlptest is an in-process OTLP receiver for tests: it listens on
// 127.0.0.1 for OTLP/HTTP (protobuf or JSON bodies on /v1/traces and
// /v1/metrics) and OTLP/gRPC (TraceService and MetricsService), keeps what
// it receives in a thread-safe store, and lets a test wait for spans and
// metrics with a deadline instead of sleeping. It can also answer 503 (gRPC
// Unavailable), reject, or hang, to test how an exporter copes with a bad
// collector.
package otlptest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Mode is how the receiver answers export requests.
type Mode int

const (
	// ModeOK accepts and stores everything (the default).
	ModeOK Mode = iota
	// ModeUnavailable answers HTTP 503 / gRPC Unavailable (retryable).
	ModeUnavailable
	// ModeReject answers HTTP 400 / gRPC InvalidArgument (not retryable).
	ModeReject
	// ModeHang never answers: the request waits until the client gives up
	// or the receiver closes.
	ModeHang
)

// Receiver is an OTLP collector in the test process. Its methods are safe
// for concurrent use.
type Receiver struct {
	// HTTPURL is the OTLP/HTTP base URL (http://127.0.0.1:port); signals
	// are at HTTPURL+"/v1/traces" and HTTPURL+"/v1/metrics".
	HTTPURL string
	// GRPCURL is the OTLP/gRPC endpoint URL (http://127.0.0.1:port).
	GRPCURL string

	httpSrv *http.Server
	grpcSrv *grpc.Server
	stop    chan struct{}
	wg      sync.WaitGroup
	close   sync.Once

	mu       sync.Mutex
	mode     Mode
	spans    []Span
	points   []Point
	requests int
	headers  map[string]string
	raw      []Raw
	changed  chan struct{} // closed and replaced on every change
}

// Start starts a Receiver and closes it when the test ends.
func Start(tb testing.TB) *Receiver {
	tb.Helper()
	r, err := New()
	if err != nil {
		tb.Fatalf("otlptest: %v", err)
	}
	tb.Cleanup(r.Close)
	return r
}

// New starts a Receiver listening on two ephemeral 127.0.0.1 ports.
func New() (*Receiver, error) {
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for OTLP/HTTP: %w", err)
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		hl.Close()
		return nil, fmt.Errorf("listen for OTLP/gRPC: %w", err)
	}
	r := &Receiver{
		HTTPURL: "http://" + hl.Addr().String(),
		GRPCURL: "http://" + gl.Addr().String(),
		stop:    make(chan struct{}),
		changed: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.handleTraces)
	mux.HandleFunc("POST /v1/metrics", r.handleMetrics)
	r.httpSrv = &http.Server{Handler: mux}
	r.grpcSrv = grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(r.grpcSrv, traceService{r: r})
	colmetricpb.RegisterMetricsServiceServer(r.grpcSrv, metricsService{r: r})
	r.wg.Go(func() { _ = r.httpSrv.Serve(hl) })
	r.wg.Go(func() { _ = r.grpcSrv.Serve(gl) })
	return r, nil
}

// Raw is one accepted export request as the receiver decoded it, for
// tests that compare exporters message by message.
type Raw struct {
	// Protocol is "http/protobuf", "http/json" or "grpc".
	Protocol string
	// Path is the HTTP path or the gRPC method.
	Path string
	// Traces or Metrics holds the request, by its signal.
	Traces  *coltracepb.ExportTraceServiceRequest
	Metrics *colmetricpb.ExportMetricsServiceRequest
}

// RawRequests returns the accepted requests so far, in arrival order.
func (r *Receiver) RawRequests() []Raw {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Raw(nil), r.raw...)
}

// Close stops both servers, releasing hung requests first.
func (r *Receiver) Close() {
	r.close.Do(func() {
		close(r.stop)
		r.grpcSrv.Stop()
		_ = r.httpSrv.Close()
		r.wg.Wait()
	})
}

// SetMode changes how later requests are answered.
func (r *Receiver) SetMode(m Mode) {
	r.mu.Lock()
	r.mode = m
	r.mu.Unlock()
}

// Requests counts the export requests received, whatever the answer.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// LastHeaders returns the headers (gRPC metadata) of the last request,
// keys lowercased, first value only.
func (r *Receiver) LastHeaders() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(r.headers))
	for k, v := range r.headers {
		out[k] = v
	}
	return out
}

// Spans returns a copy of the spans received so far.
func (r *Receiver) Spans() Spans {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(Spans(nil), r.spans...)
}

// Points returns a copy of the metric data points received for the named
// metric ("" for all).
func (r *Receiver) Points(metric string) []Point {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Point
	for _, p := range r.points {
		if metric == "" || p.Metric == metric {
			out = append(out, p)
		}
	}
	return out
}

// WaitSpans waits until at least n spans have arrived and returns them, or
// fails with what arrived when ctx ends first.
func (r *Receiver) WaitSpans(ctx context.Context, n int) (Spans, error) {
	var got Spans
	err := r.waitFor(ctx, func() bool {
		got = append(Spans(nil), r.spans...)
		return len(got) >= n
	})
	if err != nil {
		return got, fmt.Errorf("waiting for %d spans, got %d %v: %w", n, len(got), got.Names(), err)
	}
	return got, nil
}

// WaitPoints waits until data points of the named metric have arrived.
func (r *Receiver) WaitPoints(ctx context.Context, metric string) ([]Point, error) {
	var got []Point
	err := r.waitFor(ctx, func() bool {
		got = got[:0]
		for _, p := range r.points {
			if p.Metric == metric {
				got = append(got, p)
			}
		}
		return len(got) > 0
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for metric %q: %w", metric, err)
	}
	return got, nil
}

// WaitRequests waits until at least n export requests have arrived.
func (r *Receiver) WaitRequests(ctx context.Context, n int) error {
	return r.waitFor(ctx, func() bool { return r.requests >= n })
}

// waitFor re-checks cond (under the lock) after every change until it
// holds or ctx ends.
func (r *Receiver) waitFor(ctx context.Context, cond func() bool) error {
	for {
		r.mu.Lock()
		ok, ch := cond(), r.changed
		r.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// admit counts a request and says how to answer it; it blocks for ModeHang
// until ctx ends or the receiver closes.
func (r *Receiver) admit(ctx context.Context, headers map[string]string) Mode {
	r.mu.Lock()
	r.requests++
	r.headers = headers
	mode := r.mode
	r.notifyLocked()
	r.mu.Unlock()
	if mode == ModeHang {
		select {
		case <-ctx.Done():
		case <-r.stop:
		}
	}
	return mode
}

func (r *Receiver) add(raw Raw, spans []Span, points []Point) {
	r.mu.Lock()
	r.raw = append(r.raw, raw)
	r.spans = append(r.spans, spans...)
	r.points = append(r.points, points...)
	r.notifyLocked()
	r.mu.Unlock()
}

func (r *Receiver) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *Receiver) handleTraces(w http.ResponseWriter, req *http.Request) {
	var msg coltracepb.ExportTraceServiceRequest
	protocol, ok := r.serveHTTP(w, req, &msg, &coltracepb.ExportTraceServiceResponse{})
	if !ok {
		return
	}
	r.add(Raw{Protocol: protocol, Path: req.URL.Path, Traces: &msg}, convertSpans(msg.GetResourceSpans()), nil)
}

func (r *Receiver) handleMetrics(w http.ResponseWriter, req *http.Request) {
	var msg colmetricpb.ExportMetricsServiceRequest
	protocol, ok := r.serveHTTP(w, req, &msg, &colmetricpb.ExportMetricsServiceResponse{})
	if !ok {
		return
	}
	r.add(Raw{Protocol: protocol, Path: req.URL.Path, Metrics: &msg}, nil, convertMetrics(msg.GetResourceMetrics()))
}

// serveHTTP decodes one OTLP/HTTP request into msg and answers it per the
// mode; it reports the protocol and whether msg should be stored.
func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request, msg, resp proto.Message) (string, bool) {
	headers := make(map[string]string, len(req.Header))
	for k, v := range req.Header {
		headers[strings.ToLower(k)] = v[0]
	}
	switch r.admit(req.Context(), headers) {
	case ModeUnavailable:
		http.Error(w, "collector unavailable (otlptest)", http.StatusServiceUnavailable)
		return "", false
	case ModeReject:
		http.Error(w, "rejected (otlptest)", http.StatusBadRequest)
		return "", false
	case ModeHang:
		return "", false
	}
	body, err := readBody(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return "", false
	}
	ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	var out []byte
	protocol := "http/protobuf"
	switch ct {
	case "application/x-protobuf":
		err = proto.Unmarshal(body, msg)
		if err == nil {
			out, err = proto.Marshal(resp)
		}
	case "application/json":
		protocol = "http/json"
		err = unmarshalOTLPJSON(body, msg)
		if err == nil {
			out, err = protojson.Marshal(resp)
		}
	default:
		http.Error(w, "unsupported content type "+ct, http.StatusUnsupportedMediaType)
		return "", false
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return "", false
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(out)
	return protocol, true
}

func readBody(req *http.Request) ([]byte, error) {
	var rd io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		defer zr.Close()
		rd = zr
	}
	return io.ReadAll(rd)
}

// unmarshalOTLPJSON decodes OTLP/JSON, which differs from plain protojson
// in one way: trace and span ids are hex, not base64.
func unmarshalOTLPJSON(body []byte, msg proto.Message) error {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("OTLP/JSON body: %w", err)
	}
	if err := hexIDsToBase64(doc); err != nil {
		return err
	}
	fixed, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(fixed, msg)
}

func hexIDsToBase64(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "traceId" || k == "spanId" || k == "parentSpanId") {
				b, err := hex.DecodeString(s)
				if err != nil {
					return fmt.Errorf("OTLP/JSON %s %q is not hex: %w", k, s, err)
				}
				v[k] = base64.StdEncoding.EncodeToString(b)
				continue
			}
			if err := hexIDsToBase64(x); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := hexIDsToBase64(x); err != nil {
				return err
			}
		}
	}
	return nil
}

type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	if err := s.r.admitGRPC(ctx); err != nil {
		return nil, err
	}
	s.r.add(Raw{Protocol: "grpc", Path: method(ctx), Traces: req}, convertSpans(req.GetResourceSpans()), nil)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type metricsService struct {
	colmetricpb.UnimplementedMetricsServiceServer
	r *Receiver
}

func (s metricsService) Export(ctx context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	if err := s.r.admitGRPC(ctx); err != nil {
		return nil, err
	}
	s.r.add(Raw{Protocol: "grpc", Path: method(ctx), Metrics: req}, nil, convertMetrics(req.GetResourceMetrics()))
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// method is the gRPC method the client called.
func method(ctx context.Context) string {
	m, _ := grpc.Method(ctx)
	return m
}

func (r *Receiver) admitGRPC(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	headers := make(map[string]string, len(md))
	for k, v := range md {
		if len(v) > 0 {
			headers[strings.ToLower(k)] = v[0]
		}
	}
	switch r.admit(ctx, headers) {
	case ModeUnavailable:
		return status.Error(codes.Unavailable, "collector unavailable (otlptest)")
	case ModeReject:
		return status.Error(codes.InvalidArgument, "rejected (otlptest)")
	case ModeHang:
		if err := ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		return status.Error(codes.Unavailable, "receiver closed (otlptest)")
	}
	return nil
}

// errNotFound is wrapped by lookups that find nothing.
var errNotFound = errors.New("not found")

// DecodeJSONTraces decodes an OTLP/JSON trace request body as the receiver
// does.
func DecodeJSONTraces(body []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	var msg coltracepb.ExportTraceServiceRequest
	return &msg, unmarshalOTLPJSON(body, &msg)
}

// DecodeJSONMetrics decodes an OTLP/JSON metrics request body as the
// receiver does.
func DecodeJSONMetrics(body []byte) (*colmetricpb.ExportMetricsServiceRequest, error) {
	var msg colmetricpb.ExportMetricsServiceRequest
	return &msg, unmarshalOTLPJSON(body, &msg)
}
