package gateactor_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/internal/testutil"
	"github.com/jazz-run/jazz/messages"
)

// TestRequestTooLargeForTheBusIsDeclinedClearly walks the size of an
// asked request around the max_payload of the gate's real bus (as its
// connection reports it; a server taking 64 KiB, so the walk is fast): one that fits reaches the person whole
// and their answer decides it; one past it is declined at once, never
// approved, and the model is told its size, the limit and to split the
// change, not a bus error.
func TestRequestTooLargeForTheBusIsDeclinedClearly(t *testing.T) {
	const maxPayload = 64 << 10
	n := testutil.StartNATS(t, testutil.NATSOptions{Configure: func(o *server.Options) { o.MaxPayload = maxPayload }})
	h := newHarnessOn(t, gateactor.Config{Reachable: true}, bus.Options{InProcess: n.Server})
	limit := h.bus.MaxPayload()
	if limit != maxPayload {
		t.Fatalf("the bus reports a max_payload of %d, the server takes %d", limit, maxPayload)
	}
	for i, size := range []int64{limit - 1024, limit, limit + 1, limit + 1024, 3 * limit} {
		id := fmt.Sprintf("call_%d", i)
		m := messages.ApprovalRequired{Place: messages.Place{RunID: runID, ToolCallID: id}, ToolCallID: id, ToolName: "write_file",
			RiskLevel: messages.LevelHighRisk, Message: "Write big.txt", PreviewDiff: "x",
			ExecuteToolName: "execute_write_file", ExecuteArgs: json.RawMessage(`{"path":"big.txt"}`)}
		// What the gate publishes: m with the request id it mints (36
		// bytes) and the scope of "always".
		shown := m
		shown.RequestID, shown.RememberScope = "apr-"+strings.Repeat("0", 32), gateactor.RememberScope(m.Place)
		base, err := messages.Encode(shown)
		if err != nil {
			t.Fatal(err)
		}
		m.PreviewDiff = strings.Repeat("x", int(size)-len(base)+1)
		h.engine.Send(h.probe, m)
		if size <= limit {
			got := h.expectAsked(id)
			if got.PreviewDiff != m.PreviewDiff {
				t.Fatalf("%d bytes (limit %d): the person was shown %d bytes of a %d-byte preview", size, limit, len(got.PreviewDiff), len(m.PreviewDiff))
			}
			h.answer(id, true, "")
			if d := h.expectDecision(id); !d.Approved {
				t.Fatalf("%d bytes: %+v", size, d)
			}
			continue
		}
		d := h.expectDecision(id)
		if d.Approved || d.DecidedBy != messages.DecidedByNobody || d.Note != messages.TooLargeToApprove(size, limit) {
			t.Fatalf("%d bytes (limit %d): decided %+v", size, limit, d)
		}
		select {
		case r := <-h.asked:
			t.Fatalf("%d bytes: a request reached the bus: %d bytes of preview", size, len(r.PreviewDiff))
		default:
		}
	}
}
