package telemetry

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/jazz-run/jazz/secrets"
)

// The SDK's spans and metrics become OTLP messages here, as plain structs
// that otlp_encode.go writes as protobuf (protowire) or OTLP/JSON. The
// generated message packages of go.opentelemetry.io/proto/otlp are not
// used: their package initialization registers file descriptors in every
// jazz process, telemetry on or off. Each struct holds what the transform
// fills of its OTLP message; the names follow the .proto fields.

type otlpResourceSpans struct {
	resource   *otlpResource // nil: nothing is known about the source
	scopeSpans []*otlpScopeSpans
	schemaURL  string
}

type otlpResource struct {
	attributes []otlpKeyValue
}

type otlpScope struct {
	name, version string
	attributes    []otlpKeyValue
}

type otlpScopeSpans struct {
	scope     *otlpScope // nil: the zero scope
	spans     []otlpSpan
	schemaURL string
}

type otlpSpan struct {
	traceID       trace.TraceID
	spanID        trace.SpanID
	traceState    string
	parentSpanID  []byte // nil for a root span
	flags         uint32
	name          string
	kind          int32 // Span.SpanKind
	start, end    uint64
	attributes    []otlpKeyValue
	droppedAttrs  uint32
	events        []otlpEvent
	droppedEvents uint32
	links         []otlpLink
	droppedLinks  uint32
	status        otlpStatus // always sent, even when unset
}

type otlpEvent struct {
	time         uint64
	name         string
	attributes   []otlpKeyValue
	droppedAttrs uint32
}

type otlpLink struct {
	traceID      trace.TraceID
	spanID       trace.SpanID
	traceState   string
	attributes   []otlpKeyValue
	droppedAttrs uint32
	flags        uint32
}

type otlpStatus struct {
	message string
	code    int32 // Status.StatusCode
}

type otlpKeyValue struct {
	key   string
	value otlpValue
}

// valueKind says which member of AnyValue's oneof is set.
type valueKind uint8

const (
	valueNone valueKind = iota // an AnyValue with no value
	valueString
	valueBool
	valueInt
	valueDouble
	valueBytes
	valueArray
	valueKvlist
)

// otlpValue is an AnyValue; kind says which of the other fields it holds.
type otlpValue struct {
	kind  valueKind
	str   string
	bytes []byte
	num   int64 // an int, or a bool as 0 or 1
	dbl   float64
	array []otlpValue
	kvs   []otlpKeyValue
}

// The OTLP enum and flag values the transform writes.
const (
	spanKindUnspecified = 0
	spanKindInternal    = 1
	spanKindServer      = 2
	spanKindClient      = 3
	spanKindProducer    = 4
	spanKindConsumer    = 5

	statusUnset = 0
	statusOK    = 1
	statusError = 2

	flagHasIsRemote = 0x100 // SpanFlags.SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
	flagIsRemote    = 0x200 // SpanFlags.SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK

	temporalityDelta      = 1
	temporalityCumulative = 2
)

// spansToOTLP groups spans by resource, then by instrumentation scope, in
// the order they first appear, so one batch always encodes the same way.
func spansToOTLP(sc scrubber, spans []sdktrace.ReadOnlySpan) []*otlpResourceSpans {
	type scopeKey struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	var out []*otlpResourceSpans
	byRes := make(map[attribute.Distinct]*otlpResourceSpans)
	byScope := make(map[scopeKey]*otlpScopeSpans)
	for _, s := range spans {
		if s == nil {
			continue
		}
		res := s.Resource()
		rk := res.Equivalent()
		rs := byRes[rk]
		if rs == nil {
			rs = &otlpResourceSpans{resource: sc.resource(res), schemaURL: res.SchemaURL()}
			byRes[rk] = rs
			out = append(out, rs)
		}
		is := s.InstrumentationScope()
		sk := scopeKey{rk, is}
		ss := byScope[sk]
		if ss == nil {
			ss = &otlpScopeSpans{scope: sc.scopePtr(is), schemaURL: is.SchemaURL}
			byScope[sk] = ss
			rs.scopeSpans = append(rs.scopeSpans, ss)
		}
		ss.spans = append(ss.spans, sc.span(s))
	}
	return out
}

// resourceOTLP is nil for a nil resource: nothing is known about the source.
func (sc scrubber) resource(r *resource.Resource) *otlpResource {
	if r == nil {
		return nil
	}
	return &otlpResource{attributes: sc.iter(r.Iter())}
}

// scopeOTLP is nil for the zero scope, which names no instrumentation.
func (sc scrubber) scopePtr(s instrumentation.Scope) *otlpScope {
	if s == (instrumentation.Scope{}) {
		return nil
	}
	o := sc.scope(s)
	return &o
}

func (sc scrubber) scope(s instrumentation.Scope) otlpScope {
	return otlpScope{name: sc.str(s.Name), version: sc.str(s.Version), attributes: sc.iter(s.Attributes.Iter())}
}

func (sc scrubber) span(s sdktrace.ReadOnlySpan) otlpSpan {
	ctx := s.SpanContext()
	st := s.Status()
	out := otlpSpan{
		traceID:       ctx.TraceID(),
		spanID:        ctx.SpanID(),
		traceState:    sc.traceState(ctx.TraceState()),
		name:          sc.str(s.Name()),
		kind:          kindOTLP(s.SpanKind()),
		start:         unixNano(s.StartTime()),
		end:           unixNano(s.EndTime()),
		attributes:    sc.attrs(s.Attributes()),
		droppedAttrs:  count32(s.DroppedAttributes()),
		droppedEvents: count32(s.DroppedEvents()),
		droppedLinks:  count32(s.DroppedLinks()),
		status:        otlpStatus{code: statusOTLP(st.Code), message: sc.str(st.Description)},
	}
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		out.parentSpanID = psid[:]
	}
	out.flags = flagsOTLP(ctx.TraceFlags(), parent.IsRemote())
	if evs := s.Events(); len(evs) > 0 {
		out.events = make([]otlpEvent, len(evs))
		for i, e := range evs {
			out.events[i] = otlpEvent{
				name:         sc.str(e.Name),
				time:         unixNano(e.Time),
				attributes:   sc.attrs(e.Attributes),
				droppedAttrs: count32(e.DroppedAttributeCount),
			}
		}
	}
	if links := s.Links(); len(links) > 0 {
		out.links = make([]otlpLink, len(links))
		for i, l := range links {
			out.links[i] = otlpLink{
				traceID:      l.SpanContext.TraceID(),
				spanID:       l.SpanContext.SpanID(),
				traceState:   sc.traceState(l.SpanContext.TraceState()),
				attributes:   sc.attrs(l.Attributes),
				droppedAttrs: count32(l.DroppedAttributeCount),
				flags:        flagsOTLP(l.SpanContext.TraceFlags(), l.SpanContext.IsRemote()),
			}
		}
	}
	return out
}

// flagsOTLP puts the W3C trace flags in the low byte and always says
// whether the parent (or linked span) is remote, which receivers cannot
// tell from an unset bit otherwise.
func flagsOTLP(tf trace.TraceFlags, remote bool) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if remote {
		f |= flagIsRemote
	}
	return f
}

func kindOTLP(k trace.SpanKind) int32 {
	switch k {
	case trace.SpanKindInternal:
		return spanKindInternal
	case trace.SpanKindServer:
		return spanKindServer
	case trace.SpanKindClient:
		return spanKindClient
	case trace.SpanKindProducer:
		return spanKindProducer
	case trace.SpanKindConsumer:
		return spanKindConsumer
	}
	return spanKindUnspecified
}

func statusOTLP(c otelcodes.Code) int32 {
	switch c {
	case otelcodes.Ok:
		return statusOK
	case otelcodes.Error:
		return statusError
	}
	return statusUnset
}

// unixNano clamps times before 1970 (the zero time.Time among them) to 0:
// the wire field is unsigned.
func unixNano(t time.Time) uint64 {
	if n := t.UnixNano(); n > 0 {
		return uint64(n)
	}
	return 0
}

// scrubber is the one gate every string passes on its way out of the
// process to a collector: span and event names, attribute keys and values
// (of spans, events, links, the resource, the scope and metric points),
// status messages, trace states, metric names. Whatever set the text (the
// instrumentation API, a span reached through Span(), a library given the
// TracerProvider), it leaves with the run's secrets replaced, cut to the
// limit at a character boundary, and valid UTF-8 (protobuf refuses to
// encode a string field that is not, and one bad attribute would lose the
// whole batch). Replacing comes before cutting, so a secret across the
// cut is replaced whole instead of leaving its first half.
type scrubber struct {
	red   *secrets.Redactor
	limit int // characters per string
}

// newScrubber cuts at MaxAttrLen, or MaxContentLen with capture on.
func newScrubber(red *secrets.Redactor, capture bool) scrubber {
	if capture {
		return scrubber{red: red, limit: MaxContentLen}
	}
	return scrubber{red: red, limit: MaxAttrLen}
}

func (sc scrubber) str(s string) string {
	// What lies past the limit's characters and a secret's length is cut
	// anyway: not worth searching (a span event's name, which the SDK
	// never cuts, may be megabytes).
	if sc.limit < len(s)/utf8.UTFMax {
		if n := utf8.UTFMax*sc.limit + redactMargin; n < len(s) {
			s = s[:n]
		}
	}
	s = sc.red.String(s)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return cut(s, sc.limit)
}

// bytes scrubs a byte-slice value as its text: the SDK has no other
// source for one than a caller's bytes, which may well be text.
func (sc scrubber) bytes(b []byte) []byte {
	s := string(b)
	if r := sc.red.String(s); r != s || len(b) > sc.limit {
		return []byte(cut(r, sc.limit))
	}
	return b
}

// maxTraceState is the W3C limit a vendor must propagate in full; a
// longer one (up to 32 members of 512 bytes each parse) is not sent.
const maxTraceState = 512

// traceState is ts as sent: left out when it is longer than W3C allows
// propagating or holds a secret. It comes from whoever called the run,
// and a changed one would be wrong, so it is not edited.
func (sc scrubber) traceState(ts trace.TraceState) string {
	s := ts.String()
	if len(s) > maxTraceState || sc.red.Contains(s) {
		return ""
	}
	return s
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

func (sc scrubber) attrs(kvs []attribute.KeyValue) []otlpKeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]otlpKeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = otlpKeyValue{key: sc.str(string(kv.Key)), value: sc.value(kv.Value)}
	}
	return out
}

func (sc scrubber) iter(it attribute.Iterator) []otlpKeyValue {
	if it.Len() == 0 {
		return nil
	}
	out := make([]otlpKeyValue, 0, it.Len())
	for it.Next() {
		kv := it.Attribute()
		out = append(out, otlpKeyValue{key: sc.str(string(kv.Key)), value: sc.value(kv.Value)})
	}
	return out
}

// valueOTLP maps every attribute type; an empty value is an AnyValue with
// no value set, and a type this code does not know is sent as the string
// "INVALID" so that the key still shows up.
func (sc scrubber) value(v attribute.Value) otlpValue {
	switch v.Type() {
	case attribute.EMPTY:
		return otlpValue{}
	case attribute.BOOL:
		return boolValue(v.AsBool())
	case attribute.INT64:
		return otlpValue{kind: valueInt, num: v.AsInt64()}
	case attribute.FLOAT64:
		return otlpValue{kind: valueDouble, dbl: v.AsFloat64()}
	case attribute.STRING:
		return otlpValue{kind: valueString, str: sc.str(v.AsString())}
	case attribute.BYTESLICE:
		return otlpValue{kind: valueBytes, bytes: sc.bytes(v.AsByteSlice())}
	case attribute.BOOLSLICE:
		return arrayOTLP(v.AsBoolSlice(), boolValue)
	case attribute.INT64SLICE:
		return arrayOTLP(v.AsInt64Slice(), func(n int64) otlpValue { return otlpValue{kind: valueInt, num: n} })
	case attribute.FLOAT64SLICE:
		return arrayOTLP(v.AsFloat64Slice(), func(f float64) otlpValue { return otlpValue{kind: valueDouble, dbl: f} })
	case attribute.STRINGSLICE:
		return arrayOTLP(v.AsStringSlice(), func(s string) otlpValue { return otlpValue{kind: valueString, str: sc.str(s)} })
	case attribute.SLICE:
		return arrayOTLP(v.AsSlice(), sc.value)
	case attribute.MAP:
		return otlpValue{kind: valueKvlist, kvs: sc.attrs(v.AsMap())}
	}
	return otlpValue{kind: valueString, str: "INVALID"}
}

func boolValue(b bool) otlpValue {
	v := otlpValue{kind: valueBool}
	if b {
		v.num = 1
	}
	return v
}

func arrayOTLP[T any](vals []T, one func(T) otlpValue) otlpValue {
	out := make([]otlpValue, len(vals))
	for i, v := range vals {
		out[i] = one(v)
	}
	return otlpValue{kind: valueArray, array: out}
}

type otlpResourceMetrics struct {
	resource     otlpResource
	scopeMetrics []otlpScopeMetrics
	schemaURL    string
}

type otlpScopeMetrics struct {
	scope     otlpScope
	metrics   []otlpMetric
	schemaURL string
}

// metricKind says which member of Metric's data oneof is set.
type metricKind uint8

const (
	metricGauge metricKind = iota + 1
	metricSum
	metricHistogram
	metricExpHistogram
	metricSummary
)

// otlpMetric is a Metric; kind says which of the point lists it holds.
type otlpMetric struct {
	name, description, unit string
	kind                    metricKind
	temporality             int32 // sums and histograms
	monotonic               bool  // sums
	numbers                 []otlpNumberPoint
	histogram               []otlpHistogramPoint
	expHistogram            []otlpExpHistogramPoint
	summary                 []otlpSummaryPoint
}

type otlpNumberPoint struct {
	attributes  []otlpKeyValue
	start, time uint64
	isInt       bool // which of asInt and asDouble is set
	asInt       int64
	asDouble    float64
	exemplars   []otlpExemplar
}

type otlpExemplar struct {
	filteredAttributes []otlpKeyValue
	time               uint64
	isInt              bool
	asInt              int64
	asDouble           float64
	spanID, traceID    []byte
}

// optDouble is an optional double: set says whether it is sent at all.
type optDouble struct {
	v   float64
	set bool
}

type otlpHistogramPoint struct {
	attributes     []otlpKeyValue
	start, time    uint64
	count          uint64
	sum            float64 // always sent
	bucketCounts   []uint64
	explicitBounds []float64
	exemplars      []otlpExemplar
	min, max       optDouble
}

type otlpExpHistogramPoint struct {
	attributes         []otlpKeyValue
	start, time        uint64
	count              uint64
	sum                float64 // always sent
	scale              int32
	zeroCount          uint64
	positive, negative otlpBuckets // always sent
	exemplars          []otlpExemplar
	min, max           optDouble
	zeroThreshold      float64
}

type otlpBuckets struct {
	offset int32
	counts []uint64
}

type otlpSummaryPoint struct {
	attributes  []otlpKeyValue
	start, time uint64
	count       uint64
	sum         float64
	quantiles   []otlpQuantile
}

type otlpQuantile struct {
	quantile, value float64
}

// metricsToOTLP converts one collection. A metric of an aggregation or
// temporality this code does not know is left out and named in the error;
// the rest is still returned for export.
func metricsToOTLP(sc scrubber, rm *metricdata.ResourceMetrics) (*otlpResourceMetrics, error) {
	out := &otlpResourceMetrics{
		resource:     otlpResource{attributes: sc.iter(rm.Resource.Iter())},
		schemaURL:    rm.Resource.SchemaURL(),
		scopeMetrics: make([]otlpScopeMetrics, 0, len(rm.ScopeMetrics)),
	}
	var skipped []string
	for _, sm := range rm.ScopeMetrics {
		so := otlpScopeMetrics{scope: sc.scope(sm.Scope), schemaURL: sm.Scope.SchemaURL, metrics: make([]otlpMetric, 0, len(sm.Metrics))}
		for _, m := range sm.Metrics {
			mo, err := metricOTLP(sc, m)
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("%s (%v)", m.Name, err))
				continue
			}
			so.metrics = append(so.metrics, mo)
		}
		out.scopeMetrics = append(out.scopeMetrics, so)
	}
	if len(skipped) > 0 {
		return out, fmt.Errorf("metrics left out: %v", skipped)
	}
	return out, nil
}

func metricOTLP(sc scrubber, m metricdata.Metrics) (otlpMetric, error) {
	out := otlpMetric{name: sc.str(m.Name), description: sc.str(m.Description), unit: sc.str(m.Unit)}
	var err error
	switch d := m.Data.(type) {
	case metricdata.Gauge[int64]:
		out.kind, out.numbers = metricGauge, numberPointsOTLP(sc, d.DataPoints)
	case metricdata.Gauge[float64]:
		out.kind, out.numbers = metricGauge, numberPointsOTLP(sc, d.DataPoints)
	case metricdata.Sum[int64]:
		err = sumOTLP(sc, &out, d)
	case metricdata.Sum[float64]:
		err = sumOTLP(sc, &out, d)
	case metricdata.Histogram[int64]:
		err = histogramOTLP(sc, &out, d)
	case metricdata.Histogram[float64]:
		err = histogramOTLP(sc, &out, d)
	case metricdata.ExponentialHistogram[int64]:
		err = expHistogramOTLP(sc, &out, d)
	case metricdata.ExponentialHistogram[float64]:
		err = expHistogramOTLP(sc, &out, d)
	case metricdata.Summary:
		summaryOTLP(sc, &out, d)
	default:
		return otlpMetric{}, fmt.Errorf("unknown aggregation %T", m.Data)
	}
	if err != nil {
		return otlpMetric{}, err
	}
	return out, nil
}

func temporalityOTLP(t metricdata.Temporality) (int32, error) {
	switch t {
	case metricdata.CumulativeTemporality:
		return temporalityCumulative, nil
	case metricdata.DeltaTemporality:
		return temporalityDelta, nil
	}
	return 0, fmt.Errorf("unknown temporality %v", t)
}

func sumOTLP[N int64 | float64](sc scrubber, out *otlpMetric, s metricdata.Sum[N]) error {
	t, err := temporalityOTLP(s.Temporality)
	if err != nil {
		return err
	}
	out.kind, out.temporality, out.monotonic, out.numbers = metricSum, t, s.IsMonotonic, numberPointsOTLP(sc, s.DataPoints)
	return nil
}

func numberPointsOTLP[N int64 | float64](sc scrubber, pts []metricdata.DataPoint[N]) []otlpNumberPoint {
	out := make([]otlpNumberPoint, len(pts))
	for i, p := range pts {
		np := otlpNumberPoint{
			attributes: sc.iter(p.Attributes.Iter()),
			start:      unixNano(p.StartTime),
			time:       unixNano(p.Time),
			exemplars:  exemplarsOTLP(sc, p.Exemplars),
		}
		np.isInt, np.asInt, np.asDouble = number(p.Value)
		out[i] = np
	}
	return out
}

// number says whether v is an int64 and gives it in the field that holds it.
func number[N int64 | float64](v N) (isInt bool, i int64, f float64) {
	switch x := any(v).(type) {
	case int64:
		return true, x, 0
	case float64:
		return false, 0, x
	}
	return false, 0, 0
}

func histogramOTLP[N int64 | float64](sc scrubber, out *otlpMetric, h metricdata.Histogram[N]) error {
	t, err := temporalityOTLP(h.Temporality)
	if err != nil {
		return err
	}
	pts := make([]otlpHistogramPoint, len(h.DataPoints))
	for i, p := range h.DataPoints {
		pts[i] = otlpHistogramPoint{
			attributes:     sc.iter(p.Attributes.Iter()),
			start:          unixNano(p.StartTime),
			time:           unixNano(p.Time),
			count:          p.Count,
			sum:            float64(p.Sum),
			bucketCounts:   p.BucketCounts,
			explicitBounds: p.Bounds,
			exemplars:      exemplarsOTLP(sc, p.Exemplars),
			min:            extremaOTLP(p.Min),
			max:            extremaOTLP(p.Max),
		}
	}
	out.kind, out.temporality, out.histogram = metricHistogram, t, pts
	return nil
}

func expHistogramOTLP[N int64 | float64](sc scrubber, out *otlpMetric, h metricdata.ExponentialHistogram[N]) error {
	t, err := temporalityOTLP(h.Temporality)
	if err != nil {
		return err
	}
	pts := make([]otlpExpHistogramPoint, len(h.DataPoints))
	for i, p := range h.DataPoints {
		pts[i] = otlpExpHistogramPoint{
			attributes:    sc.iter(p.Attributes.Iter()),
			start:         unixNano(p.StartTime),
			time:          unixNano(p.Time),
			count:         p.Count,
			sum:           float64(p.Sum),
			scale:         p.Scale,
			zeroCount:     p.ZeroCount,
			zeroThreshold: p.ZeroThreshold,
			positive:      otlpBuckets{offset: p.PositiveBucket.Offset, counts: p.PositiveBucket.Counts},
			negative:      otlpBuckets{offset: p.NegativeBucket.Offset, counts: p.NegativeBucket.Counts},
			exemplars:     exemplarsOTLP(sc, p.Exemplars),
			min:           extremaOTLP(p.Min),
			max:           extremaOTLP(p.Max),
		}
	}
	out.kind, out.temporality, out.expHistogram = metricExpHistogram, t, pts
	return nil
}

// extremaOTLP is unset when the SDK recorded no minimum or maximum.
func extremaOTLP[N int64 | float64](e metricdata.Extrema[N]) optDouble {
	v, ok := e.Value()
	if !ok {
		return optDouble{}
	}
	return optDouble{v: float64(v), set: true}
}

func summaryOTLP(sc scrubber, out *otlpMetric, s metricdata.Summary) {
	pts := make([]otlpSummaryPoint, len(s.DataPoints))
	for i, p := range s.DataPoints {
		q := make([]otlpQuantile, len(p.QuantileValues))
		for j, v := range p.QuantileValues {
			q[j] = otlpQuantile{quantile: v.Quantile, value: v.Value}
		}
		pts[i] = otlpSummaryPoint{
			attributes: sc.iter(p.Attributes.Iter()),
			start:      unixNano(p.StartTime),
			time:       unixNano(p.Time),
			count:      p.Count,
			sum:        p.Sum,
			quantiles:  q,
		}
	}
	out.kind, out.summary = metricSummary, pts
}

func exemplarsOTLP[N int64 | float64](sc scrubber, ex []metricdata.Exemplar[N]) []otlpExemplar {
	if len(ex) == 0 {
		return nil
	}
	out := make([]otlpExemplar, len(ex))
	for i, e := range ex {
		eo := otlpExemplar{
			filteredAttributes: sc.attrs(e.FilteredAttributes),
			time:               unixNano(e.Time),
			spanID:             e.SpanID,
			traceID:            e.TraceID,
		}
		eo.isInt, eo.asInt, eo.asDouble = number(e.Value)
		out[i] = eo
	}
	return out
}
