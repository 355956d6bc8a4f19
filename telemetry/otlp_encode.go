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

// pbw writes protobuf. Fields go out in field-number order; a proto3
// field at its default value is left out, as protobuf's own marshalling
// does, while a oneof member or an optional field that is set is always
// written, zero or not, because there presence is the value. The field
// numbers and wire types are those of opentelemetry-proto's .proto files
// (common, resource, trace and metrics v1); each is named where it is used.
type pbw struct {
	b []byte
}

// open starts a length-delimited field; close(start) ends it. The length
// is not known before the body is written, so one byte is kept for it and
// the body is moved along when the length needs more.
func (w *pbw) open(num protowire.Number) int {
	w.b = protowire.AppendTag(w.b, num, protowire.BytesType)
	w.b = append(w.b, 0)
	return len(w.b)
}

func (w *pbw) close(start int) {
	n := len(w.b) - start
	k := protowire.SizeVarint(uint64(n))
	if k > 1 {
		var pad [9]byte
		w.b = append(w.b, pad[:k-1]...)
		copy(w.b[start+k-1:], w.b[start:start+n])
	}
	protowire.AppendVarint(w.b[:start-1], uint64(n))
}

func (w *pbw) str(num protowire.Number, s string) {
	if s != "" {
		w.b = protowire.AppendTag(w.b, num, protowire.BytesType)
		w.b = protowire.AppendString(w.b, s)
	}
}

func (w *pbw) bytes(num protowire.Number, b []byte) {
	if len(b) > 0 {
		w.b = protowire.AppendTag(w.b, num, protowire.BytesType)
		w.b = protowire.AppendBytes(w.b, b)
	}
}

func (w *pbw) varint(num protowire.Number, v uint64) {
	if v != 0 {
		w.b = protowire.AppendTag(w.b, num, protowire.VarintType)
		w.b = protowire.AppendVarint(w.b, v)
	}
}

// enum writes an int32 enum or int32 value: negative ones as ten bytes.
func (w *pbw) enum(num protowire.Number, v int32) { w.varint(num, uint64(int64(v))) }

func (w *pbw) sint32(num protowire.Number, v int32) {
	w.varint(num, protowire.EncodeZigZag(int64(v)))
}

func (w *pbw) boolean(num protowire.Number, v bool) {
	if v {
		w.varint(num, 1)
	}
}

func (w *pbw) fixed32(num protowire.Number, v uint32) {
	if v != 0 {
		w.b = protowire.AppendTag(w.b, num, protowire.Fixed32Type)
		w.b = protowire.AppendFixed32(w.b, v)
	}
}

func (w *pbw) fixed64(num protowire.Number, v uint64) {
	if v != 0 {
		w.setFixed64(num, v)
	}
}

// double leaves out only +0: -0 is not the default.
func (w *pbw) double(num protowire.Number, v float64) { w.fixed64(num, math.Float64bits(v)) }

// setFixed64 writes a fixed64, sfixed64 or double that is present whatever
// its value.
func (w *pbw) setFixed64(num protowire.Number, v uint64) {
	w.b = protowire.AppendTag(w.b, num, protowire.Fixed64Type)
	w.b = protowire.AppendFixed64(w.b, v)
}

func (w *pbw) optDouble(num protowire.Number, v optDouble) {
	if v.set {
		w.setFixed64(num, math.Float64bits(v.v))
	}
}

// packedFixed64 writes a repeated fixed64 or double (packed, the proto3
// default), left out when empty.
func packedFixed64[T uint64 | float64](w *pbw, num protowire.Number, vs []T) {
	if len(vs) == 0 {
		return
	}
	w.b = protowire.AppendTag(w.b, num, protowire.BytesType)
	w.b = protowire.AppendVarint(w.b, uint64(8*len(vs)))
	for _, v := range vs {
		switch x := any(v).(type) {
		case uint64:
			w.b = protowire.AppendFixed64(w.b, x)
		case float64:
			w.b = protowire.AppendFixed64(w.b, math.Float64bits(x))
		}
	}
}

func (w *pbw) packedVarint(num protowire.Number, vs []uint64) {
	if len(vs) == 0 {
		return
	}
	at := w.open(num)
	for _, v := range vs {
		w.b = protowire.AppendVarint(w.b, v)
	}
	w.close(at)
}

// repeated writes one length-delimited field num per item.
func repeated[T any](w *pbw, num protowire.Number, items []T, one func(*pbw, *T)) {
	for i := range items {
		at := w.open(num)
		one(w, &items[i])
		w.close(at)
	}
}

// message writes one message field, present even when empty.
func (w *pbw) message(num protowire.Number, fill func()) {
	at := w.open(num)
	fill()
	w.close(at)
}

// protoTraces is the protobuf body of an ExportTraceServiceRequest.
func protoTraces(rss []*otlpResourceSpans) []byte {
	w := &pbw{b: make([]byte, 0, 4096)}
	repeated(w, requestItemsField, rss, func(w *pbw, rs **otlpResourceSpans) { pbResourceSpans(w, *rs) })
	return w.b
}

// ResourceSpans: resource 1, scope_spans 2, schema_url 3.
func pbResourceSpans(w *pbw, rs *otlpResourceSpans) {
	if rs.resource != nil {
		w.message(1, func() { pbResource(w, rs.resource) })
	}
	repeated(w, 2, rs.scopeSpans, func(w *pbw, ss **otlpScopeSpans) { pbScopeSpans(w, *ss) })
	w.str(3, rs.schemaURL)
}

// Resource: attributes 1.
func pbResource(w *pbw, r *otlpResource) {
	repeated(w, 1, r.attributes, pbKeyValue)
}

// ScopeSpans: scope 1, spans 2, schema_url 3.
func pbScopeSpans(w *pbw, ss *otlpScopeSpans) {
	if ss.scope != nil {
		w.message(1, func() { pbScope(w, ss.scope) })
	}
	repeated(w, 2, ss.spans, pbSpan)
	w.str(3, ss.schemaURL)
}

// InstrumentationScope: name 1, version 2, attributes 3.
func pbScope(w *pbw, s *otlpScope) {
	w.str(1, s.name)
	w.str(2, s.version)
	repeated(w, 3, s.attributes, pbKeyValue)
}

// Span: trace_id 1, span_id 2, trace_state 3, parent_span_id 4, name 5,
// kind 6, start_time_unix_nano 7 (fixed64), end_time_unix_nano 8
// (fixed64), attributes 9, dropped_attributes_count 10, events 11,
// dropped_events_count 12, links 13, dropped_links_count 14, status 15,
// flags 16 (fixed32).
func pbSpan(w *pbw, s *otlpSpan) {
	w.bytes(1, s.traceID[:])
	w.bytes(2, s.spanID[:])
	w.str(3, s.traceState)
	w.bytes(4, s.parentSpanID)
	w.str(5, s.name)
	w.enum(6, s.kind)
	w.fixed64(7, s.start)
	w.fixed64(8, s.end)
	repeated(w, 9, s.attributes, pbKeyValue)
	w.varint(10, uint64(s.droppedAttrs))
	repeated(w, 11, s.events, pbEvent)
	w.varint(12, uint64(s.droppedEvents))
	repeated(w, 13, s.links, pbLink)
	w.varint(14, uint64(s.droppedLinks))
	// Status: message 2, code 3.
	w.message(15, func() {
		w.str(2, s.status.message)
		w.enum(3, s.status.code)
	})
	w.fixed32(16, s.flags)
}

// Span.Event: time_unix_nano 1 (fixed64), name 2, attributes 3,
// dropped_attributes_count 4.
func pbEvent(w *pbw, e *otlpEvent) {
	w.fixed64(1, e.time)
	w.str(2, e.name)
	repeated(w, 3, e.attributes, pbKeyValue)
	w.varint(4, uint64(e.droppedAttrs))
}

// Span.Link: trace_id 1, span_id 2, trace_state 3, attributes 4,
// dropped_attributes_count 5, flags 6 (fixed32).
func pbLink(w *pbw, l *otlpLink) {
	w.bytes(1, l.traceID[:])
	w.bytes(2, l.spanID[:])
	w.str(3, l.traceState)
	repeated(w, 4, l.attributes, pbKeyValue)
	w.varint(5, uint64(l.droppedAttrs))
	w.fixed32(6, l.flags)
}

// KeyValue: key 1, value 2 (always sent: an empty AnyValue is a value).
func pbKeyValue(w *pbw, kv *otlpKeyValue) {
	w.str(1, kv.key)
	w.message(2, func() { pbAnyValue(w, &kv.value) })
}

// AnyValue is a oneof: string_value 1, bool_value 2, int_value 3,
// double_value 4, array_value 5 (ArrayValue: values 1), kvlist_value 6
// (KeyValueList: values 1), bytes_value 7. The member set is written even
// at its zero value.
func pbAnyValue(w *pbw, v *otlpValue) {
	switch v.kind {
	case valueString:
		w.b = protowire.AppendTag(w.b, 1, protowire.BytesType)
		w.b = protowire.AppendString(w.b, v.str)
	case valueBool:
		w.b = protowire.AppendTag(w.b, 2, protowire.VarintType)
		w.b = protowire.AppendVarint(w.b, uint64(v.num))
	case valueInt:
		w.b = protowire.AppendTag(w.b, 3, protowire.VarintType)
		w.b = protowire.AppendVarint(w.b, uint64(v.num))
	case valueDouble:
		w.setFixed64(4, math.Float64bits(v.dbl))
	case valueArray:
		w.message(5, func() { repeated(w, 1, v.array, pbAnyValue) })
	case valueKvlist:
		w.message(6, func() { repeated(w, 1, v.kvs, pbKeyValue) })
	case valueBytes:
		w.b = protowire.AppendTag(w.b, 7, protowire.BytesType)
		w.b = protowire.AppendBytes(w.b, v.bytes)
	}
}

// protoMetrics is the protobuf body of an ExportMetricsServiceRequest
// holding rm.
func protoMetrics(rm *otlpResourceMetrics) []byte {
	w := &pbw{b: make([]byte, 0, 4096)}
	// ResourceMetrics: resource 1, scope_metrics 2, schema_url 3.
	w.message(requestItemsField, func() {
		w.message(1, func() { pbResource(w, &rm.resource) })
		repeated(w, 2, rm.scopeMetrics, pbScopeMetrics)
		w.str(3, rm.schemaURL)
	})
	return w.b
}

// ScopeMetrics: scope 1, metrics 2, schema_url 3.
func pbScopeMetrics(w *pbw, sm *otlpScopeMetrics) {
	w.message(1, func() { pbScope(w, &sm.scope) })
	repeated(w, 2, sm.metrics, pbMetric)
	w.str(3, sm.schemaURL)
}

// Metric: name 1, description 2, unit 3, and the data oneof: gauge 5
// (Gauge: data_points 1), sum 7 (Sum: data_points 1,
// aggregation_temporality 2, is_monotonic 3), histogram 9 and
// exponential_histogram 10 (data_points 1, aggregation_temporality 2),
// summary 11 (Summary: data_points 1).
func pbMetric(w *pbw, m *otlpMetric) {
	w.str(1, m.name)
	w.str(2, m.description)
	w.str(3, m.unit)
	switch m.kind {
	case metricGauge:
		w.message(5, func() { repeated(w, 1, m.numbers, pbNumberPoint) })
	case metricSum:
		w.message(7, func() {
			repeated(w, 1, m.numbers, pbNumberPoint)
			w.enum(2, m.temporality)
			w.boolean(3, m.monotonic)
		})
	case metricHistogram:
		w.message(9, func() {
			repeated(w, 1, m.histogram, pbHistogramPoint)
			w.enum(2, m.temporality)
		})
	case metricExpHistogram:
		w.message(10, func() {
			repeated(w, 1, m.expHistogram, pbExpHistogramPoint)
			w.enum(2, m.temporality)
		})
	case metricSummary:
		w.message(11, func() { repeated(w, 1, m.summary, pbSummaryPoint) })
	}
}

// NumberDataPoint: start_time_unix_nano 2, time_unix_nano 3 (fixed64
// both), as_double 4 or as_int 6 (sfixed64; a oneof), exemplars 5,
// attributes 7.
func pbNumberPoint(w *pbw, p *otlpNumberPoint) {
	w.fixed64(2, p.start)
	w.fixed64(3, p.time)
	if !p.isInt {
		w.setFixed64(4, math.Float64bits(p.asDouble))
	}
	repeated(w, 5, p.exemplars, pbExemplar)
	if p.isInt {
		w.setFixed64(6, uint64(p.asInt))
	}
	repeated(w, 7, p.attributes, pbKeyValue)
}

// HistogramDataPoint: start_time_unix_nano 2, time_unix_nano 3, count 4
// (fixed64 all), sum 5 (optional double), bucket_counts 6 (packed
// fixed64), explicit_bounds 7 (packed double), exemplars 8, attributes 9,
// min 11, max 12 (optional doubles).
func pbHistogramPoint(w *pbw, p *otlpHistogramPoint) {
	w.fixed64(2, p.start)
	w.fixed64(3, p.time)
	w.fixed64(4, p.count)
	w.setFixed64(5, math.Float64bits(p.sum))
	packedFixed64(w, 6, p.bucketCounts)
	packedFixed64(w, 7, p.explicitBounds)
	repeated(w, 8, p.exemplars, pbExemplar)
	repeated(w, 9, p.attributes, pbKeyValue)
	w.optDouble(11, p.min)
	w.optDouble(12, p.max)
}

// ExponentialHistogramDataPoint: attributes 1, start_time_unix_nano 2,
// time_unix_nano 3, count 4 (fixed64 all three), sum 5 (optional double),
// scale 6 (sint32), zero_count 7 (fixed64), positive 8, negative 9
// (Buckets: offset 1 sint32, bucket_counts 2 packed uint64), exemplars
// 11, min 12, max 13 (optional doubles), zero_threshold 14 (double).
func pbExpHistogramPoint(w *pbw, p *otlpExpHistogramPoint) {
	repeated(w, 1, p.attributes, pbKeyValue)
	w.fixed64(2, p.start)
	w.fixed64(3, p.time)
	w.fixed64(4, p.count)
	w.setFixed64(5, math.Float64bits(p.sum))
	w.sint32(6, p.scale)
	w.fixed64(7, p.zeroCount)
	pbBuckets(w, 8, &p.positive)
	pbBuckets(w, 9, &p.negative)
	repeated(w, 11, p.exemplars, pbExemplar)
	w.optDouble(12, p.min)
	w.optDouble(13, p.max)
	w.double(14, p.zeroThreshold)
}

func pbBuckets(w *pbw, num protowire.Number, b *otlpBuckets) {
	w.message(num, func() {
		w.sint32(1, b.offset)
		w.packedVarint(2, b.counts)
	})
}

// SummaryDataPoint: start_time_unix_nano 2, time_unix_nano 3, count 4
// (fixed64 all), sum 5 (double), quantile_values 6 (ValueAtQuantile:
// quantile 1, value 2, doubles), attributes 7.
func pbSummaryPoint(w *pbw, p *otlpSummaryPoint) {
	w.fixed64(2, p.start)
	w.fixed64(3, p.time)
	w.fixed64(4, p.count)
	w.double(5, p.sum)
	repeated(w, 6, p.quantiles, func(w *pbw, q *otlpQuantile) {
		w.double(1, q.quantile)
		w.double(2, q.value)
	})
	repeated(w, 7, p.attributes, pbKeyValue)
}

// Exemplar: time_unix_nano 2 (fixed64), as_double 3 or as_int 6
// (sfixed64; a oneof), span_id 4, trace_id 5, filtered_attributes 7.
func pbExemplar(w *pbw, e *otlpExemplar) {
	w.fixed64(2, e.time)
	if !e.isInt {
		w.setFixed64(3, math.Float64bits(e.asDouble))
	}
	w.bytes(4, e.spanID)
	w.bytes(5, e.traceID)
	if e.isInt {
		w.setFixed64(6, uint64(e.asInt))
	}
	repeated(w, 7, e.filteredAttributes, pbKeyValue)
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
func objects[T any](o *obj, k string, items []T, one func(*obj, *T)) {
	if len(items) == 0 {
		return
	}
	w := o.key(k)
	w.list(len(items), func(i int) {
		e := w.begin()
		one(&e, &items[i])
		e.end()
	})
}

// object writes a member holding one object, present even when empty.
func (o *obj) object(k string, fill func(*obj)) {
	e := o.key(k).begin()
	fill(&e)
	e.end()
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

func jsonTraces(rss []*otlpResourceSpans) []byte {
	w := &jsonw{b: make([]byte, 0, 4096)}
	o := w.begin()
	objects(&o, "resourceSpans", rss, func(o *obj, rs **otlpResourceSpans) {
		member(o, "resource", (*rs).resource, jsonResource)
		objects(o, "scopeSpans", (*rs).scopeSpans, func(o *obj, ss **otlpScopeSpans) {
			member(o, "scope", (*ss).scope, jsonScope)
			objects(o, "spans", (*ss).spans, jsonSpan)
			o.str("schemaUrl", (*ss).schemaURL)
		})
		o.str("schemaUrl", (*rs).schemaURL)
	})
	o.end()
	return w.b
}

func jsonResource(o *obj, r *otlpResource) {
	objects(o, "attributes", r.attributes, jsonKeyValue)
}

func jsonScope(o *obj, s *otlpScope) {
	o.str("name", s.name)
	o.str("version", s.version)
	objects(o, "attributes", s.attributes, jsonKeyValue)
}

func jsonSpan(o *obj, s *otlpSpan) {
	o.hexID("traceId", s.traceID[:])
	o.hexID("spanId", s.spanID[:])
	o.str("traceState", s.traceState)
	o.hexID("parentSpanId", s.parentSpanID)
	o.u32("flags", s.flags)
	o.str("name", s.name)
	o.i32("kind", s.kind)
	o.u64("startTimeUnixNano", s.start)
	o.u64("endTimeUnixNano", s.end)
	objects(o, "attributes", s.attributes, jsonKeyValue)
	o.u32("droppedAttributesCount", s.droppedAttrs)
	objects(o, "events", s.events, func(o *obj, e *otlpEvent) {
		o.u64("timeUnixNano", e.time)
		o.str("name", e.name)
		objects(o, "attributes", e.attributes, jsonKeyValue)
		o.u32("droppedAttributesCount", e.droppedAttrs)
	})
	o.u32("droppedEventsCount", s.droppedEvents)
	objects(o, "links", s.links, func(o *obj, l *otlpLink) {
		o.hexID("traceId", l.traceID[:])
		o.hexID("spanId", l.spanID[:])
		o.str("traceState", l.traceState)
		objects(o, "attributes", l.attributes, jsonKeyValue)
		o.u32("droppedAttributesCount", l.droppedAttrs)
		o.u32("flags", l.flags)
	})
	o.u32("droppedLinksCount", s.droppedLinks)
	o.object("status", func(o *obj) {
		o.str("message", s.status.message)
		o.i32("code", s.status.code)
	})
}

func jsonKeyValue(o *obj, kv *otlpKeyValue) {
	o.str("key", kv.key)
	o.object("value", func(o *obj) { jsonAnyValue(o, &kv.value) })
}

// jsonAnyValue writes the one value set, even when it is the zero value:
// an AnyValue with intValue 0 is not an empty AnyValue.
func jsonAnyValue(o *obj, v *otlpValue) {
	switch v.kind {
	case valueString:
		o.key("stringValue").string(v.str)
	case valueBool:
		w := o.key("boolValue")
		w.b = strconv.AppendBool(w.b, v.num != 0)
	case valueInt:
		o.key("intValue").i64(v.num)
	case valueDouble:
		o.key("doubleValue").float(v.dbl)
	case valueBytes:
		w := o.key("bytesValue")
		w.b = append(w.b, '"')
		w.b = base64.StdEncoding.AppendEncode(w.b, v.bytes)
		w.b = append(w.b, '"')
	case valueArray:
		o.object("arrayValue", func(o *obj) { objects(o, "values", v.array, jsonAnyValue) })
	case valueKvlist:
		o.object("kvlistValue", func(o *obj) { objects(o, "values", v.kvs, jsonKeyValue) })
	}
}

func jsonMetrics(rm *otlpResourceMetrics) []byte {
	w := &jsonw{b: make([]byte, 0, 4096)}
	o := w.begin()
	objects(&o, "resourceMetrics", []*otlpResourceMetrics{rm}, func(o *obj, rm **otlpResourceMetrics) {
		member(o, "resource", &(*rm).resource, jsonResource)
		objects(o, "scopeMetrics", (*rm).scopeMetrics, func(o *obj, sm *otlpScopeMetrics) {
			member(o, "scope", &sm.scope, jsonScope)
			objects(o, "metrics", sm.metrics, jsonMetric)
			o.str("schemaUrl", sm.schemaURL)
		})
		o.str("schemaUrl", (*rm).schemaURL)
	})
	o.end()
	return w.b
}

func jsonMetric(o *obj, m *otlpMetric) {
	o.str("name", m.name)
	o.str("description", m.description)
	o.str("unit", m.unit)
	switch m.kind {
	case metricGauge:
		o.object("gauge", func(o *obj) {
			objects(o, "dataPoints", m.numbers, jsonNumberPoint)
		})
	case metricSum:
		o.object("sum", func(o *obj) {
			objects(o, "dataPoints", m.numbers, jsonNumberPoint)
			o.i32("aggregationTemporality", m.temporality)
			o.boolean("isMonotonic", m.monotonic)
		})
	case metricHistogram:
		o.object("histogram", func(o *obj) {
			objects(o, "dataPoints", m.histogram, jsonHistogramPoint)
			o.i32("aggregationTemporality", m.temporality)
		})
	case metricExpHistogram:
		o.object("exponentialHistogram", func(o *obj) {
			objects(o, "dataPoints", m.expHistogram, jsonExpHistogramPoint)
			o.i32("aggregationTemporality", m.temporality)
		})
	case metricSummary:
		o.object("summary", func(o *obj) {
			objects(o, "dataPoints", m.summary, jsonSummaryPoint)
		})
	}
}

func jsonNumberPoint(o *obj, p *otlpNumberPoint) {
	objects(o, "attributes", p.attributes, jsonKeyValue)
	o.u64("startTimeUnixNano", p.start)
	o.u64("timeUnixNano", p.time)
	if p.isInt {
		o.key("asInt").i64(p.asInt)
	} else {
		o.key("asDouble").float(p.asDouble)
	}
	objects(o, "exemplars", p.exemplars, jsonExemplar)
}

func jsonHistogramPoint(o *obj, p *otlpHistogramPoint) {
	objects(o, "attributes", p.attributes, jsonKeyValue)
	o.u64("startTimeUnixNano", p.start)
	o.u64("timeUnixNano", p.time)
	o.u64("count", p.count)
	o.key("sum").float(p.sum)
	if len(p.bucketCounts) > 0 {
		w := o.key("bucketCounts")
		w.list(len(p.bucketCounts), func(i int) { w.u64(p.bucketCounts[i]) })
	}
	if len(p.explicitBounds) > 0 {
		w := o.key("explicitBounds")
		w.list(len(p.explicitBounds), func(i int) { w.float(p.explicitBounds[i]) })
	}
	objects(o, "exemplars", p.exemplars, jsonExemplar)
	optFloat(o, "min", p.min)
	optFloat(o, "max", p.max)
}

func jsonExpHistogramPoint(o *obj, p *otlpExpHistogramPoint) {
	objects(o, "attributes", p.attributes, jsonKeyValue)
	o.u64("startTimeUnixNano", p.start)
	o.u64("timeUnixNano", p.time)
	o.u64("count", p.count)
	o.key("sum").float(p.sum)
	o.i32("scale", p.scale)
	o.u64("zeroCount", p.zeroCount)
	buckets := func(o *obj, b *otlpBuckets) {
		o.i32("offset", b.offset)
		if len(b.counts) > 0 {
			w := o.key("bucketCounts")
			w.list(len(b.counts), func(i int) { w.u64(b.counts[i]) })
		}
	}
	member(o, "positive", &p.positive, buckets)
	member(o, "negative", &p.negative, buckets)
	objects(o, "exemplars", p.exemplars, jsonExemplar)
	optFloat(o, "min", p.min)
	optFloat(o, "max", p.max)
	o.f64("zeroThreshold", p.zeroThreshold)
}

func jsonSummaryPoint(o *obj, p *otlpSummaryPoint) {
	objects(o, "attributes", p.attributes, jsonKeyValue)
	o.u64("startTimeUnixNano", p.start)
	o.u64("timeUnixNano", p.time)
	o.u64("count", p.count)
	o.f64("sum", p.sum)
	objects(o, "quantileValues", p.quantiles, func(o *obj, q *otlpQuantile) {
		o.f64("quantile", q.quantile)
		o.f64("value", q.value)
	})
}

func jsonExemplar(o *obj, e *otlpExemplar) {
	objects(o, "filteredAttributes", e.filteredAttributes, jsonKeyValue)
	o.u64("timeUnixNano", e.time)
	if e.isInt {
		o.key("asInt").i64(e.asInt)
	} else {
		o.key("asDouble").float(e.asDouble)
	}
	o.hexID("spanId", e.spanID)
	o.hexID("traceId", e.traceID)
}

// optFloat writes an optional double whenever it is set, zero included.
func optFloat(o *obj, k string, v optDouble) {
	if v.set {
		o.key(k).float(v.v)
	}
}
