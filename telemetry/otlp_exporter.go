package telemetry

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// errShutdown answers an export after Shutdown; the SDK does not make one.
var errShutdown = errors.New("the exporter is shut down")

// otlpSpanExporter is the SDK's span exporter for the three OTLP protocols
// (http/protobuf, http/json, grpc), written with protowire and net/http
// instead of otel's exporters, whose gRPC dependency alone cost every jazz
// process about a millisecond of package initialization, and without the
// generated OTLP message packages, whose descriptors every process
// registered at start-up.
type otlpSpanExporter struct {
	c    *otlpClient
	sc   scrubber
	json bool
	down atomic.Bool
}

var _ sdktrace.SpanExporter = (*otlpSpanExporter)(nil)

func newOTLPSpanExporter(s Settings, timeout time.Duration, version string) (*otlpSpanExporter, error) {
	c, err := newOTLPClient(s.TracesEndpoint, s.Protocol, grpcTracePath, s.Headers, timeout, version, s.Secrets)
	if err != nil {
		return nil, err
	}
	return &otlpSpanExporter{c: c, sc: newScrubber(s.Secrets, s.CaptureContent), json: s.Protocol == ProtocolHTTPJSON}, nil
}

// ExportSpans sends one batch; it returns when the collector has answered,
// the retries are spent, or ctx ends.
func (e *otlpSpanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.down.Load() {
		return errShutdown
	}
	rss := spansToOTLP(e.sc, spans)
	if len(rss) == 0 {
		return nil
	}
	var body []byte
	if e.json {
		body = jsonTraces(rss)
	} else {
		body = protoTraces(rss)
	}
	p, err := e.c.send(ctx, body)
	if err != nil {
		return err
	}
	// The collector's own words, which may echo what it was sent.
	return e.c.scrub(p.err("spans"))
}

// Shutdown ends exports in flight at once; the SDK has flushed before.
func (e *otlpSpanExporter) Shutdown(context.Context) error {
	if !e.down.Swap(true) {
		e.c.close()
	}
	return nil
}

// otlpMetricExporter is otlpSpanExporter for metrics, with the SDK's
// default temporality (cumulative) and aggregations.
type otlpMetricExporter struct {
	c    *otlpClient
	sc   scrubber
	json bool
	down atomic.Bool
}

var _ sdkmetric.Exporter = (*otlpMetricExporter)(nil)

func newOTLPMetricExporter(s Settings, timeout time.Duration, version string) (*otlpMetricExporter, error) {
	c, err := newOTLPClient(s.MetricsEndpoint, s.Protocol, grpcMetricPath, s.Headers, timeout, version, s.Secrets)
	if err != nil {
		return nil, err
	}
	return &otlpMetricExporter{c: c, sc: newScrubber(s.Secrets, s.CaptureContent), json: s.Protocol == ProtocolHTTPJSON}, nil
}

func (e *otlpMetricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (e *otlpMetricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

// Export sends one collection. What cannot be converted is named in the
// error and the rest is sent all the same. rm is not kept: the SDK reuses it.
func (e *otlpMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if e.down.Load() {
		return errShutdown
	}
	if rm == nil {
		return nil
	}
	m, convErr := metricsToOTLP(e.sc, rm)
	var body []byte
	if e.json {
		body = jsonMetrics(m)
	} else {
		body = protoMetrics(m)
	}
	p, err := e.c.send(ctx, body)
	if err != nil {
		return errors.Join(convErr, err)
	}
	return errors.Join(convErr, e.c.scrub(p.err("data points")))
}

// ForceFlush has nothing to do: Export holds nothing back.
func (e *otlpMetricExporter) ForceFlush(context.Context) error { return nil }

func (e *otlpMetricExporter) Shutdown(context.Context) error {
	if !e.down.Swap(true) {
		e.c.close()
	}
	return nil
}
