package telemetry

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// goldenSpans is diffSpans plus a span whose strings are not UTF-8, which
// otel's exporters cannot send and so the differential test cannot hold.
func goldenSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	bad := tracetest.SpanStub{
		Name: "bad \xff\xfe name",
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{0xaa, 1}, SpanID: trace.SpanID{0xbb, 2}, TraceFlags: trace.FlagsSampled,
		}),
		StartTime:            time.Unix(1, 5),
		EndTime:              time.Unix(2, 0),
		Attributes:           []attribute.KeyValue{attribute.String("k\xff", "a\xc3"), attribute.StringSlice("l", []string{"\xe2\x82", "ok"})},
		Status:               sdktrace.Status{Code: otelcodes.Error, Description: "\xffx"},
		Events:               []sdktrace.Event{{Name: "ev\xc0", Time: time.Unix(1, 6)}},
		InstrumentationScope: instrumentation.Scope{Name: "s\xff", Version: "v\xfe"},
	}
	return append(diffSpans(t), bad.Snapshot())
}

// goldenMetrics is diffMetrics plus a scope whose names are not UTF-8.
func goldenMetrics() *metricdata.ResourceMetrics {
	rm := diffMetrics()
	rm.ScopeMetrics = append(rm.ScopeMetrics, metricdata.ScopeMetrics{
		Scope: instrumentation.Scope{Name: "bad\xff"},
		Metrics: []metricdata.Metrics{{
			Name: "m\xfe", Description: "d\xc3", Unit: "u\xff",
			Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{
				Attributes: attribute.NewSet(attribute.String("a", "\xff")), Time: time.Unix(3, 0), Value: 1,
			}}},
		}},
	})
	return rm
}

// The files under testdata were written by the exporters of 01975cd, which
// built the otlp message packages' structs and marshalled them with
// protobuf. The JSON bodies must stay byte for byte what they were; the
// protobuf bodies must decode to the same messages.

func TestJSONBodiesAsBefore(t *testing.T) {
	rm, err := metricsToOTLP(testScrubber, goldenMetrics())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		file string
		got  []byte
	}{
		{"testdata/traces.json", jsonTraces(spansToOTLP(testScrubber, goldenSpans(t)))},
		{"testdata/metrics.json", jsonMetrics(rm)},
	} {
		want, err := os.ReadFile(tt.file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(tt.got, want) {
			i := 0
			for i < len(want) && i < len(tt.got) && want[i] == tt.got[i] {
				i++
			}
			t.Errorf("%s: body differs at byte %d:\nwant …%s\ngot  …%s", tt.file, i, around(want, i), around(tt.got, i))
		}
	}
}

func TestProtobufBodiesAsBefore(t *testing.T) {
	traces := protoTraces(spansToOTLP(testScrubber, goldenSpans(t)))
	rm, err := metricsToOTLP(testScrubber, goldenMetrics())
	if err != nil {
		t.Fatal(err)
	}
	metrics := protoMetrics(rm)
	for _, tt := range []struct {
		file      string
		got       []byte
		want, our proto.Message
	}{
		{"testdata/traces.pb", traces, &coltracepb.ExportTraceServiceRequest{}, &coltracepb.ExportTraceServiceRequest{}},
		{"testdata/metrics.pb", metrics, &colmetricpb.ExportMetricsServiceRequest{}, &colmetricpb.ExportMetricsServiceRequest{}},
	} {
		b, err := os.ReadFile(tt.file)
		if err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(b, tt.want); err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		// Unmarshal checks that every string is UTF-8.
		if err := proto.Unmarshal(tt.got, tt.our); err != nil {
			t.Fatalf("decode our body for %s: %v", tt.file, err)
		}
		if !proto.Equal(tt.want, tt.our) {
			t.Errorf("%s: %s", tt.file, firstDifference(prototext.Format(tt.want), prototext.Format(tt.our)))
		}
	}
}

func around(b []byte, i int) string {
	return string(b[max(0, i-60):min(len(b), i+60)])
}

// TestProtobufLongLengths covers the lengths that take two and three bytes,
// for which the encoder moves a message's body after writing it.
func TestProtobufLongLengths(t *testing.T) {
	for _, n := range []int{127, 128, 16383, 16384, 70000} {
		long := strings.Repeat("x", n)
		stub := tracetest.SpanStub{
			Name:        long,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}}),
			Attributes:  []attribute.KeyValue{attribute.String("k", long), attribute.Int("after", 7)},
			Resource:    resource.NewSchemaless(attribute.String("r", long)),
		}
		var req coltracepb.ExportTraceServiceRequest
		// No cut: the lengths under test are longer than any limit.
		whole := scrubber{limit: math.MaxInt}
		if err := proto.Unmarshal(protoTraces(spansToOTLP(whole, []sdktrace.ReadOnlySpan{stub.Snapshot()})), &req); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		rs := req.GetResourceSpans()
		if len(rs) != 1 || len(rs[0].GetScopeSpans()) != 1 || len(rs[0].ScopeSpans[0].GetSpans()) != 1 {
			t.Fatalf("%d bytes: decoded %v", n, prototext.Format(&req))
		}
		s := rs[0].ScopeSpans[0].Spans[0]
		attrs := s.GetAttributes()
		if s.GetName() != long || len(attrs) != 2 || attrs[0].GetValue().GetStringValue() != long || attrs[1].GetValue().GetIntValue() != 7 ||
			rs[0].GetResource().GetAttributes()[0].GetValue().GetStringValue() != long {
			t.Errorf("%d bytes: the span did not come back whole (name %d bytes, %d attributes)", n, len(s.GetName()), len(attrs))
		}
	}
}

// testScrubber changes nothing of the golden and diff fixtures: no
// secrets, and their strings are under the capture limit.
var testScrubber = newScrubber(nil, true)
