package telemetry_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestJazzLinksNoGRPC keeps the gRPC library out of the jazz binary: its
// package initialization cost every process about a millisecond, and the
// OTLP exporters here speak gRPC without it. The generated OTLP message
// packages stay out too: their inits register protobuf descriptors in every
// process (about 0.2 ms and 40 KB of heap), and the exporters write the
// wire format with protowire. Test-only imports (the otlptest receiver,
// the differential oracle) do not count.
func TestJazzLinksNoGRPC(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, gobin, "list", "-deps", "github.com/jazz-run/jazz/cmd/jazz").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"google.golang.org/grpc", "github.com/grpc-ecosystem/", "go.opentelemetry.io/proto/otlp/", "go.opentelemetry.io/otel/exporters/", "html/template"} {
			if strings.HasPrefix(pkg, banned) {
				t.Errorf("cmd/jazz links %s", pkg)
			}
		}
	}
}
