package telemetry_test

import (
	"testing"

	"github.com/jazz-run/jazz/internal/testutil/linked"
)

// TestJazzLinksNoGRPC keeps the gRPC library out of the jazz binary: its
// package initialization cost every process about a millisecond, and the
// OTLP exporters here speak gRPC without it. The generated OTLP message
// packages stay out too: their inits register protobuf descriptors in every
// process (about 0.2 ms and 40 KB of heap), and the exporters write the
// wire format with protowire. Test-only imports (the otlptest receiver,
// the differential oracle) do not count.
func TestJazzLinksNoGRPC(t *testing.T) {
	linked.Refuse(t, "google.golang.org/grpc", "github.com/grpc-ecosystem/", "go.opentelemetry.io/proto/otlp/", "go.opentelemetry.io/otel/exporters/", "html/template")
}
