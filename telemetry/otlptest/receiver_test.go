package otlptest_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/jazz-run/jazz/telemetry/otlptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func request() *coltracepb.ExportTraceServiceRequest {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	trace := bytes.Repeat([]byte{1}, 16)
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{
			{Name: "root", TraceId: trace, SpanId: []byte{1, 1, 1, 1, 1, 1, 1, 1}, Attributes: []*commonpb.KeyValue{str("k", "v")}},
			{Name: "child", TraceId: trace, SpanId: []byte{2, 2, 2, 2, 2, 2, 2, 2}, ParentSpanId: []byte{1, 1, 1, 1, 1, 1, 1, 1},
				Kind: tracepb.Span_SPAN_KIND_INTERNAL, Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "boom"}},
		}}},
	}}}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func post(t *testing.T, url string, body []byte) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Team", "jazz")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func checkStored(t *testing.T, r *otlptest.Receiver) {
	t.Helper()
	spans, err := r.WaitSpans(ctx(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	root, err := spans.One("root")
	if err != nil {
		t.Fatal(err)
	}
	kids := spans.ChildrenOf(root)
	if len(kids) != 1 || kids[0].Name != "child" || kids[0].StatusCode != "error" || kids[0].StatusMessage != "boom" || kids[0].Kind != "internal" {
		t.Errorf("children of root = %+v", kids)
	}
	if got := spans.WithAttr("k", "v").Names(); len(got) != 1 || got[0] != "root" {
		t.Errorf("WithAttr(k, v) = %v", got)
	}
	if got := spans.Roots().Names(); len(got) != 1 || got[0] != "root" {
		t.Errorf("Roots() = %v", got)
	}
	if root.TraceID != strings.Repeat("01", 16) || root.ParentSpanID != "" {
		t.Errorf("root ids: trace %s parent %q", root.TraceID, root.ParentSpanID)
	}
}

func TestHTTP(t *testing.T) {
	r := otlptest.Start(t)
	body, err := proto.Marshal(request())
	if err != nil {
		t.Fatal(err)
	}
	r.SetMode(otlptest.ModeUnavailable)
	if code := post(t, r.HTTPURL+"/v1/traces", body); code != http.StatusServiceUnavailable {
		t.Errorf("unavailable mode answered %d", code)
	}
	r.SetMode(otlptest.ModeReject)
	if code := post(t, r.HTTPURL+"/v1/traces", body); code != http.StatusBadRequest {
		t.Errorf("reject mode answered %d", code)
	}
	if n := len(r.Spans()); n != 0 {
		t.Fatalf("stored %d spans while refusing", n)
	}
	r.SetMode(otlptest.ModeOK)
	if code := post(t, r.HTTPURL+"/v1/traces", body); code != http.StatusOK {
		t.Errorf("ok mode answered %d", code)
	}
	checkStored(t, r)
	if r.Requests() != 3 || r.LastHeaders()["x-team"] != "jazz" {
		t.Errorf("requests %d, last headers %v", r.Requests(), r.LastHeaders())
	}
}

func TestGRPC(t *testing.T) {
	r := otlptest.Start(t)
	conn, err := grpc.NewClient(strings.TrimPrefix(r.GRPCURL, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := coltracepb.NewTraceServiceClient(conn)

	r.SetMode(otlptest.ModeUnavailable)
	if _, err := client.Export(ctx(t), request()); status.Code(err) != codes.Unavailable {
		t.Errorf("unavailable mode answered %v", err)
	}
	r.SetMode(otlptest.ModeHang)
	short, cancel := context.WithTimeout(ctx(t), 50*time.Millisecond)
	defer cancel()
	if _, err := client.Export(short, request()); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("hang mode answered %v", err)
	}
	r.SetMode(otlptest.ModeOK)
	if _, err := client.Export(ctx(t), request()); err != nil {
		t.Fatal(err)
	}
	checkStored(t, r)
}

func TestWaitSpansDeadline(t *testing.T) {
	r := otlptest.Start(t)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.WaitSpans(c, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitSpans on an empty receiver = %v, want context.Canceled", err)
	}
}
