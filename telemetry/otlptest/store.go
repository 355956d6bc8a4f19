package otlptest

import (
	"encoding/hex"
	"fmt"
	"reflect"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Span is a received span, flattened for assertions. Ids are lowercase hex;
// ParentSpanID is "" for a root span. Attribute values are string, bool,
// int64, float64, []byte, []any or map[string]any.
type Span struct {
	Name          string
	TraceID       string
	SpanID        string
	ParentSpanID  string
	Kind          string
	Start, End    time.Time
	Attrs         map[string]any
	StatusCode    string // "unset", "ok" or "error"
	StatusMessage string
	Resource      map[string]any
	Scope         string
	ScopeVersion  string
}

// Attr returns one attribute and whether it is set.
func (s Span) Attr(key string) (any, bool) {
	v, ok := s.Attrs[key]
	return v, ok
}

// Str returns a string attribute, "" when unset or not a string.
func (s Span) Str(key string) string {
	v, _ := s.Attrs[key].(string)
	return v
}

// Int returns an integer attribute and whether it is set as one.
func (s Span) Int(key string) (int64, bool) {
	v, ok := s.Attrs[key].(int64)
	return v, ok
}

// String renders the span for failure messages.
func (s Span) String() string {
	return fmt.Sprintf("%q (span %s, parent %s, trace %s)", s.Name, s.SpanID, s.ParentSpanID, s.TraceID)
}

// Spans is a list of received spans with lookup helpers.
type Spans []Span

// Names lists the span names, in order.
func (ss Spans) Names() []string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.Name
	}
	return names
}

// Named returns the spans with the given name.
func (ss Spans) Named(name string) Spans {
	return ss.Where(func(s Span) bool { return s.Name == name })
}

// One returns the only span with the given name, or an error naming what
// was found instead.
func (ss Spans) One(name string) (Span, error) {
	found := ss.Named(name)
	if len(found) != 1 {
		return Span{}, fmt.Errorf("want exactly one span %q, found %d among %v: %w", name, len(found), ss.Names(), errNotFound)
	}
	return found[0], nil
}

// ChildrenOf returns the spans whose parent is p.
func (ss Spans) ChildrenOf(p Span) Spans {
	return ss.Where(func(s Span) bool { return s.TraceID == p.TraceID && s.ParentSpanID == p.SpanID })
}

// WithAttr returns the spans whose attribute key equals value (int values
// are compared as int64).
func (ss Spans) WithAttr(key string, value any) Spans {
	if i, ok := value.(int); ok {
		value = int64(i)
	}
	return ss.Where(func(s Span) bool {
		v, ok := s.Attrs[key]
		return ok && reflect.DeepEqual(v, value)
	})
}

// Roots returns the spans with no parent in the list (true roots and
// children of remote parents).
func (ss Spans) Roots() Spans {
	ids := make(map[string]bool, len(ss))
	for _, s := range ss {
		ids[s.SpanID] = true
	}
	return ss.Where(func(s Span) bool { return !ids[s.ParentSpanID] })
}

// Where returns the spans for which keep is true.
func (ss Spans) Where(keep func(Span) bool) Spans {
	var out Spans
	for _, s := range ss {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// Point is one received metric data point. For sums and gauges Value is the
// number; for histograms Count and Sum are set and Value is Sum.
type Point struct {
	Metric string
	Unit   string
	Attrs  map[string]any
	Value  float64
	Count  uint64
	Sum    float64
}

func convertSpans(rss []*tracepb.ResourceSpans) []Span {
	var out []Span
	for _, rs := range rss {
		res := attrMap(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				out = append(out, Span{
					Name:          sp.GetName(),
					TraceID:       hex.EncodeToString(sp.GetTraceId()),
					SpanID:        hex.EncodeToString(sp.GetSpanId()),
					ParentSpanID:  hex.EncodeToString(sp.GetParentSpanId()),
					Kind:          kindName(sp.GetKind()),
					Start:         time.Unix(0, int64(sp.GetStartTimeUnixNano())),
					End:           time.Unix(0, int64(sp.GetEndTimeUnixNano())),
					Attrs:         attrMap(sp.GetAttributes()),
					StatusCode:    statusName(sp.GetStatus().GetCode()),
					StatusMessage: sp.GetStatus().GetMessage(),
					Resource:      res,
					Scope:         ss.GetScope().GetName(),
					ScopeVersion:  ss.GetScope().GetVersion(),
				})
			}
		}
	}
	return out
}

func convertMetrics(rms []*metricpb.ResourceMetrics) []Point {
	var out []Point
	number := func(m *metricpb.Metric, dps []*metricpb.NumberDataPoint) {
		for _, dp := range dps {
			v := dp.GetAsDouble()
			if _, ok := dp.GetValue().(*metricpb.NumberDataPoint_AsInt); ok {
				v = float64(dp.GetAsInt())
			}
			out = append(out, Point{Metric: m.GetName(), Unit: m.GetUnit(), Attrs: attrMap(dp.GetAttributes()), Value: v})
		}
	}
	for _, rm := range rms {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				switch d := m.GetData().(type) {
				case *metricpb.Metric_Sum:
					number(m, d.Sum.GetDataPoints())
				case *metricpb.Metric_Gauge:
					number(m, d.Gauge.GetDataPoints())
				case *metricpb.Metric_Histogram:
					for _, dp := range d.Histogram.GetDataPoints() {
						out = append(out, Point{Metric: m.GetName(), Unit: m.GetUnit(), Attrs: attrMap(dp.GetAttributes()),
							Value: dp.GetSum(), Count: dp.GetCount(), Sum: dp.GetSum()})
					}
				}
			}
		}
	}
	return out
}

func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = anyValue(kv.GetValue())
	}
	return m
}

func anyValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return x.BytesValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, anyValue(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		return attrMap(x.KvlistValue.GetValues())
	}
	return nil
}

func kindName(k tracepb.Span_SpanKind) string {
	switch k {
	case tracepb.Span_SPAN_KIND_INTERNAL:
		return "internal"
	case tracepb.Span_SPAN_KIND_SERVER:
		return "server"
	case tracepb.Span_SPAN_KIND_CLIENT:
		return "client"
	case tracepb.Span_SPAN_KIND_PRODUCER:
		return "producer"
	case tracepb.Span_SPAN_KIND_CONSUMER:
		return "consumer"
	}
	return "unspecified"
}

func statusName(c tracepb.Status_StatusCode) string {
	switch c {
	case tracepb.Status_STATUS_CODE_OK:
		return "ok"
	case tracepb.Status_STATUS_CODE_ERROR:
		return "error"
	}
	return "unset"
}
