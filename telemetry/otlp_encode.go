package telemetry

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Both Export*ServiceRequest messages are one repeated message field
// numbered 1 (resource_spans, resource_metrics), and both responses are one
// optional partial_success message numbered 1, whose first field is the
// rejected count and second the error message. Writing that by hand keeps
// the collector packages, and the gRPC library they pull in, out of the
// binary.
const (
	requestItemsField  = 1
	responsePartial    = 1
	partialRejected    = 1
	partialMessage     = 2
	maxResponseMessage = 64 << 10 // bytes of a collector's answer read at most
)

// encodeRequest is the protobuf body of an export request holding items.
func encodeRequest[M proto.Message](items []M) ([]byte, error) {
	sizes := make([]int, len(items))
	total := 0
	for i, m := range items {
		sizes[i] = proto.Size(m)
		total += protowire.SizeTag(requestItemsField) + protowire.SizeBytes(sizes[i])
	}
	b := make([]byte, 0, total)
	// Size has just been computed for every message; Marshal reuses it.
	opts := proto.MarshalOptions{UseCachedSize: true}
	for i, m := range items {
		b = protowire.AppendTag(b, requestItemsField, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizes[i]))
		var err error
		if b, err = opts.MarshalAppend(b, m); err != nil {
			return nil, fmt.Errorf("encode OTLP request: %w", err)
		}
	}
	return b, nil
}

// partialSuccess is what a collector says it dropped from an accepted
// request.
type partialSuccess struct {
	rejected int64
	message  string
}

func (p partialSuccess) err(what string) error {
	if p.rejected == 0 && p.message == "" {
		return nil
	}
	if p.message == "" {
		return fmt.Errorf("the collector rejected %d %s", p.rejected, what)
	}
	return fmt.Errorf("the collector rejected %d %s: %s", p.rejected, what, cut(p.message, 256))
}

// decodeResponse reads partial_success from a protobuf response. Unknown
// fields are skipped, as protobuf requires; a malformed answer is an error
// only in what it says, the data was accepted.
func decodeResponse(b []byte) (partialSuccess, error) {
	var p partialSuccess
	inner, err := findBytesField(b, responsePartial)
	if err != nil || inner == nil {
		return p, err
	}
	for len(inner) > 0 {
		num, typ, n := protowire.ConsumeTag(inner)
		if n < 0 {
			return p, fmt.Errorf("malformed partial_success: %w", protowire.ParseError(n))
		}
		inner = inner[n:]
		switch {
		case num == partialRejected && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(inner)
			if m < 0 {
				return p, fmt.Errorf("malformed partial_success: %w", protowire.ParseError(m))
			}
			p.rejected, n = int64(v), m
		case num == partialMessage && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(inner)
			if m < 0 {
				return p, fmt.Errorf("malformed partial_success: %w", protowire.ParseError(m))
			}
			p.message, n = string(v), m
		default:
			n = protowire.ConsumeFieldValue(num, typ, inner)
			if n < 0 {
				return p, fmt.Errorf("malformed partial_success: %w", protowire.ParseError(n))
			}
		}
		inner = inner[n:]
	}
	return p, nil
}

// findBytesField returns the last value of a length-delimited field, or nil
// when the message has none.
func findBytesField(b []byte, field protowire.Number) ([]byte, error) {
	var found []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("malformed response: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if num == field && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, fmt.Errorf("malformed response: %w", protowire.ParseError(m))
			}
			found, n = v, m
		} else if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return nil, fmt.Errorf("malformed response: %w", protowire.ParseError(n))
		}
		b = b[n:]
	}
	if found == nil {
		return nil, nil
	}
	return found, nil
}

// decodeJSONResponse reads partialSuccess from an OTLP/JSON response; the
// count may be a JSON number or, as protobuf's JSON mapping writes 64-bit
// integers, a string.
func decodeJSONResponse(b []byte) (partialSuccess, error) {
	var doc struct {
		PartialSuccess *struct {
			RejectedSpans      json.Number `json:"rejectedSpans"`
			RejectedDataPoints json.Number `json:"rejectedDataPoints"`
			ErrorMessage       string      `json:"errorMessage"`
		} `json:"partialSuccess"`
	}
	var p partialSuccess
	if err := json.Unmarshal(b, &doc); err != nil {
		return p, fmt.Errorf("malformed JSON response: %w", err)
	}
	if doc.PartialSuccess == nil {
		return p, nil
	}
	p.message = doc.PartialSuccess.ErrorMessage
	for _, n := range []json.Number{doc.PartialSuccess.RejectedSpans, doc.PartialSuccess.RejectedDataPoints} {
		if n != "" {
			v, err := n.Int64()
			if err != nil {
				return p, fmt.Errorf("malformed JSON response: rejected count %q: %w", cut(string(n), 32), err)
			}
			p.rejected += v
		}
	}
	return p, nil
}

// jsonw writes OTLP/JSON: protobuf's JSON mapping with the OTLP changes
// (lowerCamelCase names, enums as numbers, trace and span ids as hex).
// Fields at their default value are left out, which the mapping allows.
// 64-bit integers are strings, as the mapping writes them.
type jsonw struct {
	b []byte
}

// obj is one JSON object being written; its methods add members.
type obj struct {
	w *jsonw
	n int
}

func (w *jsonw) begin() obj {
	w.b = append(w.b, '{')
	return obj{w: w}
}

func (o *obj) end() { o.w.b = append(o.w.b, '}') }

// key starts a member; the caller writes its value.
func (o *obj) key(k string) *jsonw {
	if o.n > 0 {
		o.w.b = append(o.w.b, ',')
	}
	o.n++
	o.w.b = append(o.w.b, '"')
	o.w.b = append(o.w.b, k...)
	o.w.b = append(o.w.b, '"', ':')
	return o.w
}

func (o *obj) str(k, v string) {
	if v != "" {
		o.key(k).string(v)
	}
}

func (o *obj) hexID(k string, id []byte) {
	if len(id) > 0 {
		w := o.key(k)
		w.b = append(w.b, '"')
		w.b = hex.AppendEncode(w.b, id)
		w.b = append(w.b, '"')
	}
}

func (o *obj) u32(k string, v uint32) {
	if v != 0 {
		w := o.key(k)
		w.b = strconv.AppendUint(w.b, uint64(v), 10)
	}
}

func (o *obj) i32(k string, v int32) {
	if v != 0 {
		w := o.key(k)
		w.b = strconv.AppendInt(w.b, int64(v), 10)
	}
}

func (o *obj) u64(k string, v uint64) {
	if v != 0 {
		o.key(k).u64(v)
	}
}

func (o *obj) f64(k string, v float64) {
	if v != 0 || math.Signbit(v) {
		o.key(k).float(v)
	}
}

func (o *obj) boolean(k string, v bool) {
	if v {
		w := o.key(k)
		w.b = append(w.b, "true"...)
	}
}

func (w *jsonw) u64(v uint64) {
	w.b = append(w.b, '"')
	w.b = strconv.AppendUint(w.b, v, 10)
	w.b = append(w.b, '"')
}

func (w *jsonw) i64(v int64) {
	w.b = append(w.b, '"')
	w.b = strconv.AppendInt(w.b, v, 10)
	w.b = append(w.b, '"')
}

// float writes NaN and the infinities as the strings the mapping names.
func (w *jsonw) float(v float64) {
	switch {
	case math.IsNaN(v):
		w.b = append(w.b, `"NaN"`...)
	case math.IsInf(v, 1):
		w.b = append(w.b, `"Infinity"`...)
	case math.IsInf(v, -1):
		w.b = append(w.b, `"-Infinity"`...)
	default:
		w.b = strconv.AppendFloat(w.b, v, 'g', -1, 64)
	}
}

const hexDigits = "0123456789abcdef"

// string writes s as a JSON string; bytes that are not UTF-8 become U+FFFD.
func (w *jsonw) string(s string) {
	w.b = append(w.b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			w.b = append(w.b, s[start:i]...)
			w.b = append(w.b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		w.b = append(w.b, s[start:i]...)
		switch c {
		case '"', '\\':
			w.b = append(w.b, '\\', c)
		case '\n':
			w.b = append(w.b, '\\', 'n')
		case '\r':
			w.b = append(w.b, '\\', 'r')
		case '\t':
			w.b = append(w.b, '\\', 't')
		default:
			w.b = append(w.b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	w.b = append(w.b, s[start:]...)
	w.b = append(w.b, '"')
}

// list writes a JSON array of n elements, each by one(i).
func (w *jsonw) list(n int, one func(i int)) {
	w.b = append(w.b, '[')
	for i := range n {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		one(i)
	}
	w.b = append(w.b, ']')
}

// objects writes a member holding a list of objects, left out when empty.
func objects[T any](o *obj, k string, items []T, one func(*obj, T)) {
	if len(items) == 0 {
		return
	}
	w := o.key(k)
	w.list(len(items), func(i int) {
		e := w.begin()
		one(&e, items[i])
		e.end()
	})
}

// member writes a member holding one object, left out when nil.
func member[T any](o *obj, k string, v *T, fill func(*obj, *T)) {
	if v == nil {
		return
	}
	e := o.key(k).begin()
	fill(&e, v)
	e.end()
}

func jsonTraces(rss []*tracepb.ResourceSpans) []byte {
	w := &jsonw{b: make([]byte, 0, 4096)}
	o := w.begin()
	objects(&o, "resourceSpans", rss, func(o *obj, rs *tracepb.ResourceSpans) {
		member(o, "resource", rs.Resource, jsonResource)
		objects(o, "scopeSpans", rs.ScopeSpans, func(o *obj, ss *tracepb.ScopeSpans) {
			member(o, "scope", ss.Scope, jsonScope)
			objects(o, "spans", ss.Spans, jsonSpan)
			o.str("schemaUrl", ss.SchemaUrl)
		})
		o.str("schemaUrl", rs.SchemaUrl)
	})
	o.end()
	return w.b
}

func jsonResource(o *obj, r *resourcepb.Resource) {
	objects(o, "attributes", r.Attributes, jsonKeyValue)
	o.u32("droppedAttributesCount", r.DroppedAttributesCount)
}

func jsonScope(o *obj, s *commonpb.InstrumentationScope) {
	o.str("name", s.Name)
	o.str("version", s.Version)
	objects(o, "attributes", s.Attributes, jsonKeyValue)
	o.u32("droppedAttributesCount", s.DroppedAttributesCount)
}

func jsonSpan(o *obj, s *tracepb.Span) {
	o.hexID("traceId", s.TraceId)
	o.hexID("spanId", s.SpanId)
	o.str("traceState", s.TraceState)
	o.hexID("parentSpanId", s.ParentSpanId)
	o.u32("flags", s.Flags)
	o.str("name", s.Name)
	o.i32("kind", int32(s.Kind))
	o.u64("startTimeUnixNano", s.StartTimeUnixNano)
	o.u64("endTimeUnixNano", s.EndTimeUnixNano)
	objects(o, "attributes", s.Attributes, jsonKeyValue)
	o.u32("droppedAttributesCount", s.DroppedAttributesCount)
	objects(o, "events", s.Events, func(o *obj, e *tracepb.Span_Event) {
		o.u64("timeUnixNano", e.TimeUnixNano)
		o.str("name", e.Name)
		objects(o, "attributes", e.Attributes, jsonKeyValue)
		o.u32("droppedAttributesCount", e.DroppedAttributesCount)
	})
	o.u32("droppedEventsCount", s.DroppedEventsCount)
	objects(o, "links", s.Links, func(o *obj, l *tracepb.Span_Link) {
		o.hexID("traceId", l.TraceId)
		o.hexID("spanId", l.SpanId)
		o.str("traceState", l.TraceState)
		objects(o, "attributes", l.Attributes, jsonKeyValue)
		o.u32("droppedAttributesCount", l.DroppedAttributesCount)
		o.u32("flags", l.Flags)
	})
	o.u32("droppedLinksCount", s.DroppedLinksCount)
	member(o, "status", s.Status, func(o *obj, st *tracepb.Status) {
		o.str("message", st.Message)
		o.i32("code", int32(st.Code))
	})
}

func jsonKeyValue(o *obj, kv *commonpb.KeyValue) {
	o.str("key", kv.Key)
	member(o, "value", kv.Value, jsonAnyValue)
}

// jsonAnyValue writes the one value set, even when it is the zero value:
// an AnyValue with intValue 0 is not an empty AnyValue.
func jsonAnyValue(o *obj, v *commonpb.AnyValue) {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		o.key("stringValue").string(x.StringValue)
	case *commonpb.AnyValue_BoolValue:
		w := o.key("boolValue")
		w.b = strconv.AppendBool(w.b, x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		o.key("intValue").i64(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		o.key("doubleValue").float(x.DoubleValue)
	case *commonpb.AnyValue_BytesValue:
		w := o.key("bytesValue")
		w.b = append(w.b, '"')
		w.b = base64.StdEncoding.AppendEncode(w.b, x.BytesValue)
		w.b = append(w.b, '"')
	case *commonpb.AnyValue_ArrayValue:
		e := o.key("arrayValue").begin()
		objects(&e, "values", x.ArrayValue.GetValues(), jsonAnyValue)
		e.end()
	case *commonpb.AnyValue_KvlistValue:
		e := o.key("kvlistValue").begin()
		objects(&e, "values", x.KvlistValue.GetValues(), jsonKeyValue)
		e.end()
	}
}

func jsonMetrics(rm *metricpb.ResourceMetrics) []byte {
	w := &jsonw{b: make([]byte, 0, 4096)}
	o := w.begin()
	objects(&o, "resourceMetrics", []*metricpb.ResourceMetrics{rm}, func(o *obj, rm *metricpb.ResourceMetrics) {
		member(o, "resource", rm.Resource, jsonResource)
		objects(o, "scopeMetrics", rm.ScopeMetrics, func(o *obj, sm *metricpb.ScopeMetrics) {
			member(o, "scope", sm.Scope, jsonScope)
			objects(o, "metrics", sm.Metrics, jsonMetric)
			o.str("schemaUrl", sm.SchemaUrl)
		})
		o.str("schemaUrl", rm.SchemaUrl)
	})
	o.end()
	return w.b
}

func jsonMetric(o *obj, m *metricpb.Metric) {
	o.str("name", m.Name)
	o.str("description", m.Description)
	o.str("unit", m.Unit)
	switch d := m.Data.(type) {
	case *metricpb.Metric_Gauge:
		member(o, "gauge", d.Gauge, func(o *obj, g *metricpb.Gauge) {
			objects(o, "dataPoints", g.DataPoints, jsonNumberPoint)
		})
	case *metricpb.Metric_Sum:
		member(o, "sum", d.Sum, func(o *obj, s *metricpb.Sum) {
			objects(o, "dataPoints", s.DataPoints, jsonNumberPoint)
			o.i32("aggregationTemporality", int32(s.AggregationTemporality))
			o.boolean("isMonotonic", s.IsMonotonic)
		})
	case *metricpb.Metric_Histogram:
		member(o, "histogram", d.Histogram, func(o *obj, h *metricpb.Histogram) {
			objects(o, "dataPoints", h.DataPoints, jsonHistogramPoint)
			o.i32("aggregationTemporality", int32(h.AggregationTemporality))
		})
	case *metricpb.Metric_ExponentialHistogram:
		member(o, "exponentialHistogram", d.ExponentialHistogram, func(o *obj, h *metricpb.ExponentialHistogram) {
			objects(o, "dataPoints", h.DataPoints, jsonExpHistogramPoint)
			o.i32("aggregationTemporality", int32(h.AggregationTemporality))
		})
	case *metricpb.Metric_Summary:
		member(o, "summary", d.Summary, func(o *obj, s *metricpb.Summary) {
			objects(o, "dataPoints", s.DataPoints, jsonSummaryPoint)
		})
	}
}

func jsonNumberPoint(o *obj, p *metricpb.NumberDataPoint) {
	objects(o, "attributes", p.Attributes, jsonKeyValue)
	o.u64("startTimeUnixNano", p.StartTimeUnixNano)
	o.u64("timeUnixNano", p.TimeUnixNano)
	switch v := p.Value.(type) {
	case *metricpb.NumberDataPoint_AsDouble:
		o.key("asDouble").float(v.AsDouble)
	case *metricpb.NumberDataPoint_AsInt:
		o.key("asInt").i64(v.AsInt)
	}
	objects(o, "exemplars", p.Exemplars, jsonExemplar)
	o.u32("flags", p.Flags)
}

func jsonHistogramPoint(o *obj, p *metricpb.HistogramDataPoint) {
	objects(o, "attributes", p.Attributes, jsonKeyValue)
	o.u64("startTimeUnixNano", p.StartTimeUnixNano)
	o.u64("timeUnixNano", p.TimeUnixNano)
	o.u64("count", p.Count)
	optFloat(o, "sum", p.Sum)
	if len(p.BucketCounts) > 0 {
		w := o.key("bucketCounts")
		w.list(len(p.BucketCounts), func(i int) { w.u64(p.BucketCounts[i]) })
	}
	if len(p.ExplicitBounds) > 0 {
		w := o.key("explicitBounds")
		w.list(len(p.ExplicitBounds), func(i int) { w.float(p.ExplicitBounds[i]) })
	}
	objects(o, "exemplars", p.Exemplars, jsonExemplar)
	o.u32("flags", p.Flags)
	optFloat(o, "min", p.Min)
	optFloat(o, "max", p.Max)
}

func jsonExpHistogramPoint(o *obj, p *metricpb.ExponentialHistogramDataPoint) {
	objects(o, "attributes", p.Attributes, jsonKeyValue)
	o.u64("startTimeUnixNano", p.StartTimeUnixNano)
	o.u64("timeUnixNano", p.TimeUnixNano)
	o.u64("count", p.Count)
	optFloat(o, "sum", p.Sum)
	o.i32("scale", p.Scale)
	o.u64("zeroCount", p.ZeroCount)
	buckets := func(o *obj, b *metricpb.ExponentialHistogramDataPoint_Buckets) {
		o.i32("offset", b.Offset)
		if len(b.BucketCounts) > 0 {
			w := o.key("bucketCounts")
			w.list(len(b.BucketCounts), func(i int) { w.u64(b.BucketCounts[i]) })
		}
	}
	member(o, "positive", p.Positive, buckets)
	member(o, "negative", p.Negative, buckets)
	o.u32("flags", p.Flags)
	objects(o, "exemplars", p.Exemplars, jsonExemplar)
	optFloat(o, "min", p.Min)
	optFloat(o, "max", p.Max)
	o.f64("zeroThreshold", p.ZeroThreshold)
}

func jsonSummaryPoint(o *obj, p *metricpb.SummaryDataPoint) {
	objects(o, "attributes", p.Attributes, jsonKeyValue)
	o.u64("startTimeUnixNano", p.StartTimeUnixNano)
	o.u64("timeUnixNano", p.TimeUnixNano)
	o.u64("count", p.Count)
	o.f64("sum", p.Sum)
	objects(o, "quantileValues", p.QuantileValues, func(o *obj, q *metricpb.SummaryDataPoint_ValueAtQuantile) {
		o.f64("quantile", q.Quantile)
		o.f64("value", q.Value)
	})
	o.u32("flags", p.Flags)
}

func jsonExemplar(o *obj, e *metricpb.Exemplar) {
	objects(o, "filteredAttributes", e.FilteredAttributes, jsonKeyValue)
	o.u64("timeUnixNano", e.TimeUnixNano)
	switch v := e.Value.(type) {
	case *metricpb.Exemplar_AsDouble:
		o.key("asDouble").float(v.AsDouble)
	case *metricpb.Exemplar_AsInt:
		o.key("asInt").i64(v.AsInt)
	}
	o.hexID("spanId", e.SpanId)
	o.hexID("traceId", e.TraceId)
}

// optFloat writes an optional double whenever it is set, zero included.
func optFloat(o *obj, k string, v *float64) {
	if v != nil {
		o.key(k).float(*v)
	}
}
