package telemetry

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The SDK's spans and metrics become OTLP messages here. The messages come
// from the proto/otlp message packages, which need protobuf but not gRPC;
// the collector packages that wrap them in a request also hold the gRPC
// service stubs, so the request wrapper is written by hand (otlp_encode.go).

// spansToPB groups spans by resource, then by instrumentation scope, in the
// order they first appear, so one batch always encodes the same way.
func spansToPB(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	type scopeKey struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	var out []*tracepb.ResourceSpans
	byRes := make(map[attribute.Distinct]*tracepb.ResourceSpans)
	byScope := make(map[scopeKey]*tracepb.ScopeSpans)
	for _, s := range spans {
		if s == nil {
			continue
		}
		res := s.Resource()
		rk := res.Equivalent()
		rs := byRes[rk]
		if rs == nil {
			rs = &tracepb.ResourceSpans{Resource: resourcePB(res), SchemaUrl: res.SchemaURL()}
			byRes[rk] = rs
			out = append(out, rs)
		}
		sc := s.InstrumentationScope()
		sk := scopeKey{rk, sc}
		ss := byScope[sk]
		if ss == nil {
			ss = &tracepb.ScopeSpans{Scope: scopePB(sc), SchemaUrl: sc.SchemaURL}
			byScope[sk] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, spanPB(s))
	}
	return out
}

// resourcePB is nil for a nil resource: nothing is known about the source.
func resourcePB(r *resource.Resource) *resourcepb.Resource {
	if r == nil {
		return nil
	}
	return &resourcepb.Resource{Attributes: iterPB(r.Iter())}
}

// scopePB is nil for the zero scope, which names no instrumentation.
func scopePB(s instrumentation.Scope) *commonpb.InstrumentationScope {
	if s == (instrumentation.Scope{}) {
		return nil
	}
	return &commonpb.InstrumentationScope{Name: validUTF8(s.Name), Version: validUTF8(s.Version), Attributes: iterPB(s.Attributes.Iter())}
}

func spanPB(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	st := s.Status()
	out := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Name:                   validUTF8(s.Name()),
		Kind:                   kindPB(s.SpanKind()),
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             attrsPB(s.Attributes()),
		DroppedAttributesCount: count32(s.DroppedAttributes()),
		DroppedEventsCount:     count32(s.DroppedEvents()),
		DroppedLinksCount:      count32(s.DroppedLinks()),
		Status:                 &tracepb.Status{Code: statusPB(st.Code), Message: validUTF8(st.Description)},
	}
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		out.ParentSpanId = psid[:]
	}
	out.Flags = flagsPB(sc.TraceFlags(), parent.IsRemote())
	for _, e := range s.Events() {
		out.Events = append(out.Events, &tracepb.Span_Event{
			Name:                   validUTF8(e.Name),
			TimeUnixNano:           unixNano(e.Time),
			Attributes:             attrsPB(e.Attributes),
			DroppedAttributesCount: count32(e.DroppedAttributeCount),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		out.Links = append(out.Links, &tracepb.Span_Link{
			TraceId:                ltid[:],
			SpanId:                 lsid[:],
			TraceState:             l.SpanContext.TraceState().String(),
			Attributes:             attrsPB(l.Attributes),
			DroppedAttributesCount: count32(l.DroppedAttributeCount),
			Flags:                  flagsPB(l.SpanContext.TraceFlags(), l.SpanContext.IsRemote()),
		})
	}
	return out
}

// flagsPB puts the W3C trace flags in the low byte and always says whether
// the parent (or linked span) is remote, which receivers cannot tell from
// an unset bit otherwise.
func flagsPB(tf trace.TraceFlags, remote bool) uint32 {
	f := uint32(tf) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if remote {
		f |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return f
}

func kindPB(k trace.SpanKind) tracepb.Span_SpanKind {
	switch k {
	case trace.SpanKindInternal:
		return tracepb.Span_SPAN_KIND_INTERNAL
	case trace.SpanKindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case trace.SpanKindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	case trace.SpanKindProducer:
		return tracepb.Span_SPAN_KIND_PRODUCER
	case trace.SpanKindConsumer:
		return tracepb.Span_SPAN_KIND_CONSUMER
	}
	return tracepb.Span_SPAN_KIND_UNSPECIFIED
}

func statusPB(c otelcodes.Code) tracepb.Status_StatusCode {
	switch c {
	case otelcodes.Ok:
		return tracepb.Status_STATUS_CODE_OK
	case otelcodes.Error:
		return tracepb.Status_STATUS_CODE_ERROR
	}
	return tracepb.Status_STATUS_CODE_UNSET
}

// unixNano clamps times before 1970 (the zero time.Time among them) to 0:
// the wire field is unsigned.
func unixNano(t time.Time) uint64 {
	if n := t.UnixNano(); n > 0 {
		return uint64(n)
	}
	return 0
}

// validUTF8 replaces what is not UTF-8: protobuf refuses to encode such a
// string field, and one bad attribute would otherwise lose the whole batch.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func count32(n int) uint32 {
	switch {
	case n <= 0:
		return 0
	case int64(n) > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(n)
}

func attrsPB(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = &commonpb.KeyValue{Key: validUTF8(string(kv.Key)), Value: valuePB(kv.Value)}
	}
	return out
}

func iterPB(it attribute.Iterator) []*commonpb.KeyValue {
	if it.Len() == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, it.Len())
	for it.Next() {
		kv := it.Attribute()
		out = append(out, &commonpb.KeyValue{Key: validUTF8(string(kv.Key)), Value: valuePB(kv.Value)})
	}
	return out
}

// valuePB maps every attribute type; an empty value is an AnyValue with no
// value set, and a type this code does not know is sent as the string
// "INVALID" so that the key still shows up.
func valuePB(v attribute.Value) *commonpb.AnyValue {
	av := &commonpb.AnyValue{}
	switch v.Type() {
	case attribute.EMPTY:
	case attribute.BOOL:
		av.Value = &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}
	case attribute.INT64:
		av.Value = &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}
	case attribute.FLOAT64:
		av.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}
	case attribute.STRING:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: validUTF8(v.AsString())}
	case attribute.BYTESLICE:
		av.Value = &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}
	case attribute.BOOLSLICE:
		av.Value = arrayPB(v.AsBoolSlice(), func(b bool) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}}
		})
	case attribute.INT64SLICE:
		av.Value = arrayPB(v.AsInt64Slice(), func(n int64) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: n}}
		})
	case attribute.FLOAT64SLICE:
		av.Value = arrayPB(v.AsFloat64Slice(), func(f float64) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
		})
	case attribute.STRINGSLICE:
		av.Value = arrayPB(v.AsStringSlice(), func(s string) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: validUTF8(s)}}
		})
	case attribute.SLICE:
		av.Value = arrayPB(v.AsSlice(), valuePB)
	case attribute.MAP:
		av.Value = &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: attrsPB(v.AsMap())}}
	default:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: "INVALID"}
	}
	return av
}

func arrayPB[T any](vals []T, one func(T) *commonpb.AnyValue) *commonpb.AnyValue_ArrayValue {
	out := make([]*commonpb.AnyValue, len(vals))
	for i, v := range vals {
		out[i] = one(v)
	}
	return &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: out}}
}

// metricsToPB converts one collection. A metric of an aggregation or
// temporality this code does not know is left out and named in the error;
// the rest is still returned for export.
func metricsToPB(rm *metricdata.ResourceMetrics) (*metricpb.ResourceMetrics, error) {
	out := &metricpb.ResourceMetrics{
		Resource:  &resourcepb.Resource{Attributes: iterPB(rm.Resource.Iter())},
		SchemaUrl: rm.Resource.SchemaURL(),
	}
	var skipped []string
	for _, sm := range rm.ScopeMetrics {
		spb := &metricpb.ScopeMetrics{
			Scope: &commonpb.InstrumentationScope{
				Name: validUTF8(sm.Scope.Name), Version: validUTF8(sm.Scope.Version), Attributes: iterPB(sm.Scope.Attributes.Iter()),
			},
			SchemaUrl: sm.Scope.SchemaURL,
			Metrics:   make([]*metricpb.Metric, 0, len(sm.Metrics)),
		}
		for _, m := range sm.Metrics {
			mpb, err := metricPB(m)
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("%s (%v)", m.Name, err))
				continue
			}
			spb.Metrics = append(spb.Metrics, mpb)
		}
		out.ScopeMetrics = append(out.ScopeMetrics, spb)
	}
	if len(skipped) > 0 {
		return out, fmt.Errorf("metrics left out: %v", skipped)
	}
	return out, nil
}

func metricPB(m metricdata.Metrics) (*metricpb.Metric, error) {
	out := &metricpb.Metric{Name: validUTF8(m.Name), Description: validUTF8(m.Description), Unit: validUTF8(m.Unit)}
	var err error
	switch d := m.Data.(type) {
	case metricdata.Gauge[int64]:
		out.Data = &metricpb.Metric_Gauge{Gauge: &metricpb.Gauge{DataPoints: numberPointsPB(d.DataPoints)}}
	case metricdata.Gauge[float64]:
		out.Data = &metricpb.Metric_Gauge{Gauge: &metricpb.Gauge{DataPoints: numberPointsPB(d.DataPoints)}}
	case metricdata.Sum[int64]:
		out.Data, err = sumPB(d)
	case metricdata.Sum[float64]:
		out.Data, err = sumPB(d)
	case metricdata.Histogram[int64]:
		out.Data, err = histogramPB(d)
	case metricdata.Histogram[float64]:
		out.Data, err = histogramPB(d)
	case metricdata.ExponentialHistogram[int64]:
		out.Data, err = expHistogramPB(d)
	case metricdata.ExponentialHistogram[float64]:
		out.Data, err = expHistogramPB(d)
	case metricdata.Summary:
		out.Data = summaryPB(d)
	default:
		return nil, fmt.Errorf("unknown aggregation %T", m.Data)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func temporalityPB(t metricdata.Temporality) (metricpb.AggregationTemporality, error) {
	switch t {
	case metricdata.CumulativeTemporality:
		return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, nil
	case metricdata.DeltaTemporality:
		return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA, nil
	}
	return 0, fmt.Errorf("unknown temporality %v", t)
}

func sumPB[N int64 | float64](s metricdata.Sum[N]) (*metricpb.Metric_Sum, error) {
	t, err := temporalityPB(s.Temporality)
	if err != nil {
		return nil, err
	}
	return &metricpb.Metric_Sum{Sum: &metricpb.Sum{
		AggregationTemporality: t, IsMonotonic: s.IsMonotonic, DataPoints: numberPointsPB(s.DataPoints),
	}}, nil
}

func numberPointsPB[N int64 | float64](pts []metricdata.DataPoint[N]) []*metricpb.NumberDataPoint {
	out := make([]*metricpb.NumberDataPoint, len(pts))
	for i, p := range pts {
		np := &metricpb.NumberDataPoint{
			Attributes:        iterPB(p.Attributes.Iter()),
			StartTimeUnixNano: unixNano(p.StartTime),
			TimeUnixNano:      unixNano(p.Time),
			Exemplars:         exemplarsPB(p.Exemplars),
		}
		switch v := any(p.Value).(type) {
		case int64:
			np.Value = &metricpb.NumberDataPoint_AsInt{AsInt: v}
		case float64:
			np.Value = &metricpb.NumberDataPoint_AsDouble{AsDouble: v}
		}
		out[i] = np
	}
	return out
}

func histogramPB[N int64 | float64](h metricdata.Histogram[N]) (*metricpb.Metric_Histogram, error) {
	t, err := temporalityPB(h.Temporality)
	if err != nil {
		return nil, err
	}
	pts := make([]*metricpb.HistogramDataPoint, len(h.DataPoints))
	for i, p := range h.DataPoints {
		sum := float64(p.Sum)
		pts[i] = &metricpb.HistogramDataPoint{
			Attributes:        iterPB(p.Attributes.Iter()),
			StartTimeUnixNano: unixNano(p.StartTime),
			TimeUnixNano:      unixNano(p.Time),
			Count:             p.Count,
			Sum:               &sum,
			BucketCounts:      p.BucketCounts,
			ExplicitBounds:    p.Bounds,
			Exemplars:         exemplarsPB(p.Exemplars),
			Min:               extremaPB(p.Min),
			Max:               extremaPB(p.Max),
		}
	}
	return &metricpb.Metric_Histogram{Histogram: &metricpb.Histogram{AggregationTemporality: t, DataPoints: pts}}, nil
}

func expHistogramPB[N int64 | float64](h metricdata.ExponentialHistogram[N]) (*metricpb.Metric_ExponentialHistogram, error) {
	t, err := temporalityPB(h.Temporality)
	if err != nil {
		return nil, err
	}
	pts := make([]*metricpb.ExponentialHistogramDataPoint, len(h.DataPoints))
	for i, p := range h.DataPoints {
		sum := float64(p.Sum)
		pts[i] = &metricpb.ExponentialHistogramDataPoint{
			Attributes:        iterPB(p.Attributes.Iter()),
			StartTimeUnixNano: unixNano(p.StartTime),
			TimeUnixNano:      unixNano(p.Time),
			Count:             p.Count,
			Sum:               &sum,
			Scale:             p.Scale,
			ZeroCount:         p.ZeroCount,
			ZeroThreshold:     p.ZeroThreshold,
			Positive:          &metricpb.ExponentialHistogramDataPoint_Buckets{Offset: p.PositiveBucket.Offset, BucketCounts: p.PositiveBucket.Counts},
			Negative:          &metricpb.ExponentialHistogramDataPoint_Buckets{Offset: p.NegativeBucket.Offset, BucketCounts: p.NegativeBucket.Counts},
			Exemplars:         exemplarsPB(p.Exemplars),
			Min:               extremaPB(p.Min),
			Max:               extremaPB(p.Max),
		}
	}
	return &metricpb.Metric_ExponentialHistogram{ExponentialHistogram: &metricpb.ExponentialHistogram{AggregationTemporality: t, DataPoints: pts}}, nil
}

// extremaPB is nil when the SDK recorded no minimum or maximum.
func extremaPB[N int64 | float64](e metricdata.Extrema[N]) *float64 {
	v, ok := e.Value()
	if !ok {
		return nil
	}
	f := float64(v)
	return &f
}

func summaryPB(s metricdata.Summary) *metricpb.Metric_Summary {
	pts := make([]*metricpb.SummaryDataPoint, len(s.DataPoints))
	for i, p := range s.DataPoints {
		q := make([]*metricpb.SummaryDataPoint_ValueAtQuantile, len(p.QuantileValues))
		for j, v := range p.QuantileValues {
			q[j] = &metricpb.SummaryDataPoint_ValueAtQuantile{Quantile: v.Quantile, Value: v.Value}
		}
		pts[i] = &metricpb.SummaryDataPoint{
			Attributes:        iterPB(p.Attributes.Iter()),
			StartTimeUnixNano: unixNano(p.StartTime),
			TimeUnixNano:      unixNano(p.Time),
			Count:             p.Count,
			Sum:               p.Sum,
			QuantileValues:    q,
		}
	}
	return &metricpb.Metric_Summary{Summary: &metricpb.Summary{DataPoints: pts}}
}

func exemplarsPB[N int64 | float64](ex []metricdata.Exemplar[N]) []*metricpb.Exemplar {
	if len(ex) == 0 {
		return nil
	}
	out := make([]*metricpb.Exemplar, len(ex))
	for i, e := range ex {
		epb := &metricpb.Exemplar{
			FilteredAttributes: attrsPB(e.FilteredAttributes),
			TimeUnixNano:       unixNano(e.Time),
			SpanId:             e.SpanID,
			TraceId:            e.TraceID,
		}
		switch v := any(e.Value).(type) {
		case int64:
			epb.Value = &metricpb.Exemplar_AsInt{AsInt: v}
		case float64:
			epb.Value = &metricpb.Exemplar_AsDouble{AsDouble: v}
		}
		out[i] = epb
	}
	return out
}
