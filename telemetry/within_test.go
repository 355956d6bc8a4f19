package telemetry_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/jazz-run/jazz/telemetry"
)

func TestWithin(t *testing.T) {
	parent, err := telemetry.ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "")
	if err != nil {
		t.Fatal(err)
	}
	ids := telemetry.IDs{RunID: "run-1", AgentID: "a"}
	from := telemetry.WithIDs(telemetry.Extract(context.Background(), parent), ids)

	tests := []struct {
		name     string
		from     context.Context
		wantSpan bool
	}{
		{name: "span and ids carried", from: from, wantSpan: true},
		{name: "no span: ctx unchanged", from: context.Background()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, cancel := context.WithCancel(context.Background())
			got := telemetry.Within(base, tt.from)
			if sc := trace.SpanContextFromContext(got); sc.IsValid() != tt.wantSpan ||
				(tt.wantSpan && sc.SpanID().String() != "00f067aa0ba902b7") {
				t.Fatalf("span context %v, want carried: %v", sc, tt.wantSpan)
			}
			if tt.wantSpan && telemetry.IDsFrom(got) != ids {
				t.Fatalf("ids %+v, want %+v", telemetry.IDsFrom(got), ids)
			}
			cancel()
			if got.Err() == nil {
				t.Fatal("cancelling ctx must cancel the result")
			}
		})
	}
}
