package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/jazz-run/jazz/telemetry/otlptest"
)

// The differential tests send the same spans and metrics through otel's
// exporters (the oracle, a test-only import) and through ours, to one
// receiver, and compare what it decoded message by message. otel groups by
// map iteration, so both sides are sorted before comparing.

var diffAttrs = []attribute.KeyValue{
	attribute.String("s", "plain"),
	attribute.String("esc", "quote\" back\\ nl\n tab\t ctl\x01 é ✓ 𝄞 </script>"),
	attribute.String("empty", ""),
	attribute.Bool("t", true),
	attribute.Bool("f", false),
	attribute.Int64("zero", 0),
	attribute.Int64("neg", -42),
	attribute.Int64("max", math.MaxInt64),
	attribute.Int64("min", math.MinInt64),
	attribute.Float64("pi", math.Pi),
	attribute.Float64("fzero", 0),
	attribute.Float64("tiny", 5e-324),
	attribute.Float64("big", 1.7976931348623157e308),
	attribute.Float64("inf", math.Inf(1)),
	attribute.Float64("ninf", math.Inf(-1)),
	attribute.Float64("nan", math.NaN()),
	attribute.ByteSlice("bytes", []byte{0, 1, 2, 0xff, 0xfe}),
	attribute.ByteSlice("nobytes", []byte{}),
	attribute.BoolSlice("bools", []bool{true, false}),
	attribute.Int64Slice("ints", []int64{1, -1, math.MaxInt64}),
	attribute.Float64Slice("floats", []float64{0.5, -2, math.Inf(1)}),
	attribute.StringSlice("strs", []string{"a", "", "ü"}),
	attribute.StringSlice("nostrs", nil),
	attribute.Slice("mixed", attribute.IntValue(1), attribute.StringValue("x"), attribute.SliceValue(attribute.BoolValue(true))),
	attribute.Map("map", attribute.String("k", "v"), attribute.Map("inner", attribute.Int("n", 3))),
	{Key: "unset"},
}

func diffSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	resA := resource.NewSchemaless(attribute.String("service.name", "jazz"), attribute.String("service.version", "v1"))
	resB := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.27.0", attribute.String("service.name", "other"))
	scopeA := instrumentation.Scope{Name: "jazz", Version: "v1"}
	scopeB := instrumentation.Scope{Name: "lib", SchemaURL: "https://example.com/s", Attributes: attribute.NewSet(attribute.Int("scope.n", 2))}
	ts, err := trace.ParseTraceState("vendor=abc,other=x")
	if err != nil {
		t.Fatal(err)
	}
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	sc := func(sid byte, flags trace.TraceFlags, remote bool) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{sid, 0, 0, 0, 0, 0, 0, 1}, TraceFlags: flags, TraceState: ts, Remote: remote})
	}
	start := time.Date(2026, 12, 2, 0, 30, 0, 123456789, time.UTC)
	stubs := tracetest.SpanStubs{
		{
			Name: "root", SpanContext: sc(1, trace.FlagsSampled, false), SpanKind: trace.SpanKindServer,
			StartTime: start, EndTime: start.Add(time.Second), Attributes: diffAttrs,
			Status: sdktrace.Status{Code: otelcodes.Error, Description: "it failed: ✗"}, Resource: resA, InstrumentationScope: scopeA,
			DroppedAttributes: 3, DroppedEvents: 1, DroppedLinks: 2,
			Events: []sdktrace.Event{
				{Name: "ev", Time: start.Add(time.Millisecond), Attributes: diffAttrs[:5], DroppedAttributeCount: 7},
				{Name: "", Time: time.Time{}},
			},
			Links: []sdktrace.Link{
				{SpanContext: sc(9, 0, true), Attributes: []attribute.KeyValue{attribute.String("l", "v")}, DroppedAttributeCount: 1},
				{SpanContext: sc(8, trace.FlagsSampled, false)},
			},
		},
		{
			Name: "child", SpanContext: sc(2, trace.FlagsSampled, false), Parent: sc(1, trace.FlagsSampled, false),
			SpanKind: trace.SpanKindClient, StartTime: start, EndTime: start.Add(2 * time.Millisecond),
			Status: sdktrace.Status{Code: otelcodes.Ok}, Resource: resA, InstrumentationScope: scopeA,
		},
		{
			Name: "remote child", SpanContext: sc(3, 0, false), Parent: sc(7, trace.FlagsSampled, true),
			SpanKind: trace.SpanKindProducer, StartTime: start, EndTime: start, Resource: resA, InstrumentationScope: scopeB,
		},
		{Name: "consumer", SpanContext: sc(4, trace.FlagsSampled, false), SpanKind: trace.SpanKindConsumer, Resource: resB, InstrumentationScope: scopeA},
		{Name: "internal", SpanContext: sc(5, trace.FlagsSampled, false), SpanKind: trace.SpanKindInternal, Resource: resB, InstrumentationScope: scopeB},
		{Name: "unspecified, no scope", SpanContext: sc(6, trace.FlagsSampled, false), Resource: resB},
		{Name: "no resource", SpanContext: sc(10, trace.FlagsSampled, false), InstrumentationScope: scopeA, StartTime: time.Unix(0, 0).Add(-time.Hour)},
	}
	return stubs.Snapshots()
}

func diffMetrics() *metricdata.ResourceMetrics {
	start := time.Date(2026, 12, 2, 0, 0, 0, 1, time.UTC)
	now := start.Add(30 * time.Second)
	set := attribute.NewSet(attribute.String("outcome", "ok"), attribute.Int("n", 1))
	other := attribute.NewSet(attribute.String("outcome", "failed"))
	exInt := []metricdata.Exemplar[int64]{{
		FilteredAttributes: []attribute.KeyValue{attribute.String("f", "x")}, Time: now, Value: 7,
		SpanID: []byte{1, 2, 3, 4, 5, 6, 7, 8}, TraceID: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
	}}
	exFloat := []metricdata.Exemplar[float64]{{Time: now, Value: 0.5}}
	return &metricdata.ResourceMetrics{
		Resource: resource.NewWithAttributes("https://opentelemetry.io/schemas/1.27.0", attribute.String("service.name", "jazz")),
		ScopeMetrics: []metricdata.ScopeMetrics{
			{
				Scope: instrumentation.Scope{Name: "jazz", Version: "v1", SchemaURL: "https://example.com/s", Attributes: attribute.NewSet(attribute.Bool("b", true))},
				Metrics: []metricdata.Metrics{
					{Name: "runs", Description: "Runs.", Unit: "{run}", Data: metricdata.Sum[int64]{
						Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
						DataPoints: []metricdata.DataPoint[int64]{
							{Attributes: set, StartTime: start, Time: now, Value: 3, Exemplars: exInt},
							{Attributes: other, StartTime: start, Time: now, Value: 0},
						},
					}},
					{Name: "cost", Unit: "USD", Data: metricdata.Sum[float64]{
						Temporality: metricdata.DeltaTemporality,
						DataPoints:  []metricdata.DataPoint[float64]{{Attributes: set, StartTime: start, Time: now, Value: -0.25, Exemplars: exFloat}},
					}},
					{Name: "queue", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{Time: now, Value: math.MinInt64}}}},
					{Name: "load", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{Time: now, Value: math.Inf(-1)}, {Time: now, Value: math.NaN()}}}},
					{Name: "duration", Unit: "s", Data: metricdata.Histogram[float64]{
						Temporality: metricdata.CumulativeTemporality,
						DataPoints: []metricdata.HistogramDataPoint[float64]{
							{Attributes: set, StartTime: start, Time: now, Count: 4, Sum: 2.5, Bounds: []float64{0, 0.5, 1},
								BucketCounts: []uint64{1, 2, 0, 1}, Min: metricdata.NewExtrema(0.0), Max: metricdata.NewExtrema(1.5), Exemplars: exFloat},
							{Attributes: other, StartTime: start, Time: now},
						},
					}},
					{Name: "tokens", Data: metricdata.Histogram[int64]{
						Temporality: metricdata.DeltaTemporality,
						DataPoints:  []metricdata.HistogramDataPoint[int64]{{StartTime: start, Time: now, Count: 1, Sum: 10, Bounds: []float64{5}, BucketCounts: []uint64{0, 1}, Min: metricdata.NewExtrema[int64](10)}},
					}},
				},
			},
			{
				Scope: instrumentation.Scope{Name: "second"},
				Metrics: []metricdata.Metrics{
					{Name: "exp", Data: metricdata.ExponentialHistogram[float64]{
						Temporality: metricdata.CumulativeTemporality,
						DataPoints: []metricdata.ExponentialHistogramDataPoint[float64]{{
							Attributes: set, StartTime: start, Time: now, Count: 6, Sum: -3.5, Scale: -2, ZeroCount: 1, ZeroThreshold: 1e-9,
							PositiveBucket: metricdata.ExponentialBucket{Offset: -3, Counts: []uint64{1, 0, 2}},
							NegativeBucket: metricdata.ExponentialBucket{Offset: 4, Counts: []uint64{2}},
							Min:            metricdata.NewExtrema(-2.0), Max: metricdata.NewExtrema(4.0), Exemplars: exFloat,
						}},
					}},
					{Name: "expint", Data: metricdata.ExponentialHistogram[int64]{
						Temporality: metricdata.DeltaTemporality,
						DataPoints:  []metricdata.ExponentialHistogramDataPoint[int64]{{Time: now, Count: 1, Sum: 2, Scale: 3}},
					}},
					{Name: "summary", Description: "quantiles", Data: metricdata.Summary{DataPoints: []metricdata.SummaryDataPoint{{
						Attributes: set, StartTime: start, Time: now, Count: 9, Sum: 4.5,
						QuantileValues: []metricdata.QuantileValue{{Quantile: 0, Value: 0.1}, {Quantile: 0.5, Value: 0.4}, {Quantile: 1, Value: 2}},
					}}}},
				},
			},
		},
	}
}

// endpoints is where one protocol's exporters send signal on r.
func endpoint(r *otlptest.Receiver, protocol, path string) string {
	if protocol == ProtocolGRPC {
		return r.GRPCURL
	}
	return r.HTTPURL + path
}

// otelSpanExporter is the oracle for a protocol.
func otelSpanExporter(t *testing.T, protocol, url string, headers map[string]string) sdktrace.SpanExporter {
	t.Helper()
	ctx := context.Background()
	var (
		e   sdktrace.SpanExporter
		err error
	)
	switch protocol {
	case ProtocolGRPC:
		e, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(url), otlptracegrpc.WithHeaders(headers))
	case ProtocolHTTPJSON:
		e, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(url), otlptracehttp.WithHeaders(headers), otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
	default:
		e, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(url), otlptracehttp.WithHeaders(headers))
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// otelMetricExporter is the oracle; otel has no OTLP/JSON metric exporter,
// so http/json is compared against its protobuf.
func otelMetricExporter(t *testing.T, protocol, url string, headers map[string]string) sdkmetric.Exporter {
	t.Helper()
	ctx := context.Background()
	var (
		e   sdkmetric.Exporter
		err error
	)
	if protocol == ProtocolGRPC {
		e, err = otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpointURL(url), otlpmetricgrpc.WithHeaders(headers))
	} else {
		e, err = otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(url), otlpmetrichttp.WithHeaders(headers))
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var diffProtocols = []string{ProtocolHTTPProtobuf, ProtocolHTTPJSON, ProtocolGRPC}

func diffSettings(protocol, traces, metrics string, headers map[string]string) Settings {
	return Settings{Protocol: protocol, TracesEndpoint: traces, MetricsEndpoint: metrics, Headers: headers}
}

func TestSpanExporterMatchesOtel(t *testing.T) {
	headers := map[string]string{"x-tenant": "t-1", "authorization": "Bearer abc123"}
	for _, protocol := range diffProtocols {
		t.Run(protocol, func(t *testing.T) {
			r := otlptest.Start(t)
			url := endpoint(r, protocol, "/v1/traces")
			spans := diffSpans(t)
			ctx := diffCtx(t)

			oracle := otelSpanExporter(t, protocol, url, headers)
			if err := oracle.ExportSpans(ctx, spans); err != nil {
				t.Fatalf("otel export: %v", err)
			}
			_ = oracle.Shutdown(ctx)
			theirHeaders := r.LastHeaders()

			ours, err := newOTLPSpanExporter(diffSettings(protocol, url, "", headers), 5*time.Second, "test")
			if err != nil {
				t.Fatal(err)
			}
			if err := ours.ExportSpans(ctx, spans); err != nil {
				t.Fatalf("our export: %v", err)
			}
			_ = ours.Shutdown(ctx)
			ourHeaders := r.LastHeaders()

			raw := r.RawRequests()
			if len(raw) != 2 {
				t.Fatalf("receiver got %d requests, want 2", len(raw))
			}
			for i, want := range []string{"otel", "ours"} {
				if raw[i].Protocol != protocol || raw[i].Traces == nil {
					t.Fatalf("%s request: protocol %q, traces %v; want %s traces", want, raw[i].Protocol, raw[i].Traces != nil, protocol)
				}
			}
			if raw[0].Path != raw[1].Path {
				t.Errorf("path: otel %q, ours %q", raw[0].Path, raw[1].Path)
			}
			for _, k := range []string{"x-tenant", "authorization", "content-type"} {
				if theirHeaders[k] != ourHeaders[k] {
					t.Errorf("header %s: otel %q, ours %q", k, theirHeaders[k], ourHeaders[k])
				}
			}
			ourSpans := sortedTraces(raw[1].Traces.ResourceSpans)
			knownSpanDifferences(t, protocol, ourSpans)
			compareMessages(t, sortedTraces(raw[0].Traces.ResourceSpans), ourSpans)
			if n := countSpans(raw[1].Traces.ResourceSpans); n != len(spans) {
				t.Errorf("our request holds %d spans, want %d", n, len(spans))
			}
		})
	}
}

func TestMetricExporterMatchesOtel(t *testing.T) {
	headers := map[string]string{"x-tenant": "t-1"}
	for _, protocol := range diffProtocols {
		t.Run(protocol, func(t *testing.T) {
			r := otlptest.Start(t)
			url := endpoint(r, protocol, "/v1/metrics")
			ctx := diffCtx(t)

			oracle := otelMetricExporter(t, protocol, url, headers)
			if err := oracle.Export(ctx, diffMetrics()); err != nil {
				t.Fatalf("otel export: %v", err)
			}
			_ = oracle.Shutdown(ctx)

			ours, err := newOTLPMetricExporter(diffSettings(protocol, "", url, headers), 5*time.Second, "test")
			if err != nil {
				t.Fatal(err)
			}
			if err := ours.Export(ctx, diffMetrics()); err != nil {
				t.Fatalf("our export: %v", err)
			}
			_ = ours.Shutdown(ctx)

			raw := r.RawRequests()
			if len(raw) != 2 || raw[0].Metrics == nil || raw[1].Metrics == nil {
				t.Fatalf("receiver got %+v, want two metric requests", raw)
			}
			if protocol == ProtocolHTTPJSON && raw[1].Protocol != ProtocolHTTPJSON {
				t.Errorf("our http/json metrics went as %s", raw[1].Protocol)
			}
			if raw[0].Path != raw[1].Path {
				t.Errorf("path: otel %q, ours %q", raw[0].Path, raw[1].Path)
			}
			if ours.Temporality(sdkmetric.InstrumentKindCounter) != oracle.Temporality(sdkmetric.InstrumentKindCounter) {
				t.Error("temporality differs from otel's default")
			}
			compareMessages(t, raw[0].Metrics.ResourceMetrics, raw[1].Metrics.ResourceMetrics)
		})
	}
}

// knownSpanDifferences checks, then takes out, where our encoding is
// deliberately more faithful than otel's:
//   - a link keeps its span context's trace state (Span.Link.trace_state),
//     which otel's transform leaves out;
//   - in OTLP/JSON an empty bytes attribute stays a bytes value, as in
//     protobuf, where otel's JSON writes no value at all.
func knownSpanDifferences(t *testing.T, protocol string, rss []*tracepb.ResourceSpans) {
	t.Helper()
	links, emptyBytes := 0, 0
	var walk func(vs []*commonpb.KeyValue)
	walk = func(kvs []*commonpb.KeyValue) {
		for _, kv := range kvs {
			if b, ok := kv.GetValue().GetValue().(*commonpb.AnyValue_BytesValue); ok && len(b.BytesValue) == 0 && protocol == ProtocolHTTPJSON {
				kv.Value.Value = nil
				emptyBytes++
			}
			walk(kv.GetValue().GetKvlistValue().GetValues())
		}
	}
	for _, rs := range rss {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				for _, l := range s.Links {
					if l.TraceState != "vendor=abc,other=x" {
						t.Errorf("link of %q lost its trace state: %q", s.Name, l.TraceState)
					}
					l.TraceState = ""
					links++
				}
				walk(s.Attributes)
			}
		}
	}
	if links != 2 {
		t.Errorf("saw %d links, want 2", links)
	}
	if protocol == ProtocolHTTPJSON && emptyBytes != 1 {
		t.Errorf("saw %d empty bytes values in JSON, want 1", emptyBytes)
	}
}

func compareMessages[M proto.Message](t *testing.T, theirs, ours []M) {
	t.Helper()
	if len(theirs) != len(ours) {
		t.Fatalf("otel sent %d resources, we sent %d", len(theirs), len(ours))
	}
	for i := range theirs {
		if !proto.Equal(theirs[i], ours[i]) {
			t.Errorf("resource %d differs: %s", i, firstDifference(prototext.Format(theirs[i]), prototext.Format(ours[i])))
		}
	}
}

// firstDifference shows where two texts part, with a few lines before.
func firstDifference(theirs, ours string) string {
	a, b := strings.Split(theirs, "\n"), strings.Split(ours, "\n")
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-6)
	end := func(l []string) int { return min(len(l), i+4) }
	return fmt.Sprintf("at line %d\notel:\n%s\nours:\n%s", i+1,
		strings.Join(a[from:end(a)], "\n"), strings.Join(b[from:end(b)], "\n"))
}

// sortedTraces orders resources and their scopes by their encoding, which
// is deterministic for messages without maps.
func sortedTraces(rss []*tracepb.ResourceSpans) []*tracepb.ResourceSpans {
	key := func(m proto.Message) []byte {
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		return b
	}
	out := slices.Clone(rss)
	for _, rs := range out {
		slices.SortFunc(rs.ScopeSpans, func(a, b *tracepb.ScopeSpans) int {
			return bytes.Compare(key(a.GetScope()), key(b.GetScope()))
		})
	}
	slices.SortFunc(out, func(a, b *tracepb.ResourceSpans) int {
		return bytes.Compare(key(a.GetResource()), key(b.GetResource()))
	})
	return out
}

func countSpans(rss []*tracepb.ResourceSpans) int {
	n := 0
	for _, rs := range rss {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	return n
}

// TestJSONMatchesProtobuf decodes our OTLP/JSON the way a collector does
// and compares it with our protobuf for the same data, decoded by the
// message packages; protojson decoding with unknown fields discarded would
// silently drop a misspelled member, and the comparison catches it.
func TestJSONMatchesProtobuf(t *testing.T) {
	rss := spansToOTLP(testScrubber, goldenSpans(t))
	got, err := otlptest.DecodeJSONTraces(jsonTraces(rss))
	if err != nil {
		t.Fatal(err)
	}
	var want coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(protoTraces(rss), &want); err != nil {
		t.Fatal(err)
	}
	compareMessages(t, want.ResourceSpans, got.ResourceSpans)

	rm, err := metricsToOTLP(testScrubber, goldenMetrics())
	if err != nil {
		t.Fatal(err)
	}
	gotm, err := otlptest.DecodeJSONMetrics(jsonMetrics(rm))
	if err != nil {
		t.Fatal(err)
	}
	var wantm colmetricpb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(protoMetrics(rm), &wantm); err != nil {
		t.Fatal(err)
	}
	compareMessages(t, wantm.ResourceMetrics, gotm.ResourceMetrics)
}

func diffCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
