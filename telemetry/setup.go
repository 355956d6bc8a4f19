package telemetry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Bounds of the export pipeline.
const (
	// ShutdownTimeout bounds Shutdown, whatever the collector does.
	ShutdownTimeout = 2 * time.Second
	// MaxQueueSize bounds the spans waiting for export; more are dropped.
	MaxQueueSize = 2048
	// BatchTimeout is how long a span may wait before its batch is sent.
	BatchTimeout = 5 * time.Second
	// MetricInterval is the periodic metric export interval.
	MetricInterval = 30 * time.Second
	// ScopeName is the instrumentation scope of every span and instrument.
	ScopeName = "jazz"
)

// Bounds of one span (see spanLimits). jazz's own spans set at most a
// dozen attributes and no events.
const (
	maxAttrs     = 64
	maxEvents    = 32
	maxLinks     = 8
	maxAttrDepth = 4
)

// Retry schedule per telemetry.md §2: 3 attempts (maxAttempts), 250 ms ×
// 2^(n−1) apart. retryElapsed is what the SDK allows an export beyond one
// request's timeout, for the waits between attempts.
const (
	retryInitial = 250 * time.Millisecond
	retryElapsed = time.Second
)

// Telemetry is the export pipeline of one process: injected tracer and meter
// (never the OpenTelemetry globals) and the instrumentation API. A Telemetry
// from a disabled configuration does no SDK work at all; its Tracer and
// Meter are no-ops and Start* return no-op handles.
type Telemetry struct {
	// Tracer creates spans in the "jazz" scope.
	Tracer trace.Tracer
	// Meter creates instruments in the "jazz" scope.
	Meter metric.Meter
	// TracerProvider and MeterProvider are the providers behind Tracer and
	// Meter, for libraries that take a provider.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider

	enabled bool
	capture bool
	// idKey keys the fingerprints of model-chosen ids.
	idKey []byte
	inst  instruments
	rep   *reporter
	tp    *sdktrace.TracerProvider
	mp    *sdkmetric.MeterProvider
	// clients are the exporters' connections, closed by Shutdown.
	clients []*otlpClient
	once    sync.Once
}

// Noop returns a Telemetry that exports nothing and costs next to nothing.
func Noop() *Telemetry {
	t := &Telemetry{
		TracerProvider: tracenoop.NewTracerProvider(),
		MeterProvider:  metricnoop.NewMeterProvider(),
	}
	t.Tracer = t.TracerProvider.Tracer(ScopeName)
	t.Meter = t.MeterProvider.Meter(ScopeName)
	t.inst = newInstruments(t.Meter)
	return t
}

// Enabled reports whether spans and metrics are exported.
func (t *Telemetry) Enabled() bool { return t != nil && t.enabled }

// Setup builds the export pipeline from resolved settings (see Resolve;
// unresolved settings are resolved without the environment). It never fails
// a run: a disabled configuration, a malformed endpoint or header, or an
// exporter that cannot be built gives a warning through warn (when there is
// something to say) and a no-op Telemetry. Export errors later are reported
// through warn once per Telemetry; the rest are swallowed. warn may be nil.
func Setup(ctx context.Context, s Settings, warn func(string)) *Telemetry {
	if warn == nil {
		warn = func(string) {}
	}
	if s.Enabled == nil {
		var warns []string
		s, warns = Resolve(s, nil)
		for _, w := range warns {
			warn(w)
		}
	}
	if !s.On() {
		return Noop()
	}
	// Resolve validated these already; Setup checks again because settings
	// may be built by hand, and the exporters silently fall back to
	// localhost on a URL they cannot parse.
	for _, ep := range []string{s.TracesEndpoint, s.MetricsEndpoint} {
		if ep == "" {
			continue
		}
		if err := checkEndpoint(ep); err != nil {
			warn(fmt.Sprintf("telemetry: endpoint: %v; export disabled", err))
			return Noop()
		}
	}
	if err := checkHeaders(s.Headers); err != nil {
		warn(fmt.Sprintf("telemetry: headers: %v; export disabled", err))
		return Noop()
	}

	version := s.ServiceVersion
	if version == "" {
		version = buildVersion()
	}
	timeout := time.Duration(s.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = DefaultTimeoutMs * time.Millisecond
	}
	rep := &reporter{warn: warn}

	spanExp, err := newOTLPSpanExporter(s, timeout, version)
	if err != nil {
		warn(fmt.Sprintf("telemetry: cannot set up trace export: %v; export disabled", err))
		return Noop()
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", s.ServiceName),
		attribute.String("service.version", version),
		attribute.String("telemetry.sdk.name", "jazz"),
		attribute.String("telemetry.sdk.language", "go"),
	)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithRawSpanLimits(spanLimits(s.CaptureContent)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
		sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(
			spanExporter{SpanExporter: spanExp, rep: rep, target: hostOf(s.TracesEndpoint)},
			sdktrace.WithMaxQueueSize(MaxQueueSize),
			sdktrace.WithMaxExportBatchSize(512),
			sdktrace.WithBatchTimeout(BatchTimeout),
			sdktrace.WithExportTimeout(timeout+retryElapsed),
		)),
	)

	t := &Telemetry{
		TracerProvider: tp,
		enabled:        true,
		capture:        s.CaptureContent,
		idKey:          newIDKey(),
		rep:            rep,
		tp:             tp,
		clients:        []*otlpClient{spanExp.c},
	}
	t.Tracer = tp.Tracer(ScopeName, trace.WithInstrumentationVersion(version))

	if s.MetricsEndpoint != "" {
		metricExp, err := newOTLPMetricExporter(s, timeout, version)
		if err != nil {
			warn(fmt.Sprintf("telemetry: cannot set up metric export: %v; metrics are not exported", err))
		} else {
			t.mp = sdkmetric.NewMeterProvider(
				sdkmetric.WithResource(res),
				sdkmetric.WithReader(sdkmetric.NewPeriodicReader(
					metricExporter{Exporter: metricExp, rep: rep, target: hostOf(s.MetricsEndpoint)},
					sdkmetric.WithInterval(MetricInterval),
					sdkmetric.WithTimeout(timeout+retryElapsed),
				)),
			)
			t.MeterProvider = t.mp
			t.clients = append(t.clients, metricExp.c)
		}
	}
	if t.MeterProvider == nil {
		t.MeterProvider = metricnoop.NewMeterProvider()
	}
	t.Meter = t.MeterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(version))
	t.inst = newInstruments(t.Meter)
	return t
}

// spanLimits bound what one span holds until it is exported, whoever
// sets it (the instrumentation API cuts its own strings already; a span
// reached through Span() or a library's does not): strings to keepLen
// (the exporter cuts further, after replacing secrets), and a fixed number
// of attributes, events and links. Raw limits, so OTEL_SPAN_*_LIMIT in
// the environment cannot lift them.
func spanLimits(capture bool) sdktrace.SpanLimits {
	return sdktrace.SpanLimits{
		AttributeValueLengthLimit:   keepLen(capture),
		AttributeValueDepthLimit:    maxAttrDepth,
		AttributeCountLimit:         maxAttrs,
		EventCountLimit:             maxEvents,
		LinkCountLimit:              maxLinks,
		AttributePerEventCountLimit: maxAttrs,
		AttributePerLinkCountLimit:  maxAttrs,
	}
}

// newIDKey is a random per-process key for id fingerprints.
func newIDKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // crypto/rand never fails on supported systems
	return k
}

// Shutdown flushes what is queued and stops export. It returns within
// ShutdownTimeout (or ctx, when sooner) whatever the collector does; spans
// still unsent then are dropped with a warning (the one warning, if none
// was given yet). Calls after the first do nothing.
func (t *Telemetry) Shutdown(ctx context.Context) {
	if t == nil || !t.enabled {
		return
	}
	t.once.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, ShutdownTimeout)
		defer cancel()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Go(func() { errs[0] = t.tp.Shutdown(ctx) })
		if t.mp != nil {
			wg.Go(func() { errs[1] = t.mp.Shutdown(ctx) })
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			// A provider that ignores ctx must not hold the process.
		}
		if ctx.Err() != nil || errors.Is(errors.Join(errs...), context.DeadlineExceeded) {
			t.rep.report(fmt.Sprintf("export did not finish within %v at exit; unsent spans and metrics were dropped", ShutdownTimeout))
		}
		// An export still in flight (a hung collector, a retry waiting)
		// ends now instead of outliving Shutdown by up to its timeout.
		for _, c := range t.clients {
			c.close()
		}
	})
}

// reporter turns export failures into at most one warning per Telemetry:
// a collector that is down would otherwise print one line per batch.
type reporter struct {
	once sync.Once
	warn func(string)
}

func (r *reporter) report(msg string) {
	r.once.Do(func() {
		r.warn("telemetry: " + msg + " (the run is not affected; further telemetry errors are not shown)")
	})
}

func (r *reporter) exportFailed(signal, target string, err error) {
	r.report(fmt.Sprintf("cannot export %s to %s: %s", signal, target, cut(err.Error(), 512)))
}

// spanExporter reports the first failure and hides every failure from the
// SDK, which would otherwise hand it to the global error handler.
type spanExporter struct {
	sdktrace.SpanExporter
	rep    *reporter
	target string
}

func (e spanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := e.SpanExporter.ExportSpans(ctx, spans); err != nil {
		e.rep.exportFailed("traces", e.target, err)
	}
	return nil
}

func (e spanExporter) Shutdown(ctx context.Context) error {
	if err := e.SpanExporter.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		e.rep.exportFailed("traces", e.target, err)
	}
	return nil
}

// metricExporter is spanExporter for metrics.
type metricExporter struct {
	sdkmetric.Exporter
	rep    *reporter
	target string
}

func (e metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if err := e.Exporter.Export(ctx, rm); err != nil {
		e.rep.exportFailed("metrics", e.target, err)
	}
	return nil
}

func (e metricExporter) ForceFlush(ctx context.Context) error {
	_ = e.Exporter.ForceFlush(ctx)
	return nil
}

func (e metricExporter) Shutdown(ctx context.Context) error {
	_ = e.Exporter.Shutdown(ctx)
	return nil
}

// hostOf names the collector in warnings without path, query or user info.
func hostOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "the collector"
	}
	return u.Scheme + "://" + u.Host
}

// buildVersion is the main module's version, for a ServiceVersion left empty.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "dev"
}
