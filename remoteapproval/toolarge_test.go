package remoteapproval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/internal/testutil"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/remoteapproval"
)

// smallRig is a rig on a plain JetStream server whose max_payload is
// maxPayload (a stock nats-server takes 1 MB; this one less, so the walk
// stays fast), the run and the approver on connections of their own, and
// the run's store as the run opened it.
func smallRig(t *testing.T, maxPayload int32) (*rig, *approvals.Store) {
	t.Helper()
	n := testutil.StartNATS(t, testutil.NATSOptions{JetStream: true, Configure: func(o *server.Options) { o.MaxPayload = maxPayload }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	connect := func() *bus.Bus {
		b, err := bus.Start(ctx, bus.Options{InProcess: n.Server})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.CloseNow)
		return b
	}
	r := &rig{t: t, home: t.TempDir(), got: make(chan messages.ApprovalDecided, 16), policy: make(chan messages.PolicyChanged, 4)}
	r.runBus, r.apBus = connect(), connect()
	runStore, err := approvals.OpenStore(ctx, r.runBus, true)
	if err != nil {
		t.Fatal(err)
	}
	if r.apStore, err = approvals.OpenStore(ctx, r.apBus, false); err != nil {
		t.Fatal(err)
	}
	_, seed, err := approvals.AddApprover(r.home, "alice", "high-risk", false)
	if err != nil {
		t.Fatal(err)
	}
	r.alice, _ = nkeys.FromSeed(seed)
	reg, err := approvals.LoadRegistry(r.home, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.remote, err = remoteapproval.Start(context.Background(), remoteapproval.Config{
		Bus: r.runBus, Store: runStore, RunID: "run-1", Registry: reg, Timeout: time.Minute, WorkDir: "/w",
		Deliver: func(d messages.ApprovalDecided) { r.got <- d },
		Report: func(n remoteapproval.Notice) {
			r.mu.Lock()
			r.notices = append(r.notices, n)
			r.mu.Unlock()
		},
		Audit: approvals.NewAudit(r.home, r.runBus),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		r.remote.Close(ctx)
	})
	return r, runStore
}

// TestOversizedRequestIsDeclinedClearlyAndTheLargestIsDecided walks the
// size of a request's record around the largest the run's bucket takes,
// as measured on the run's own connection to a server of a small
// max_payload: under it, the approver is shown the whole preview and
// their signed approval reaches the gate; over it, the gate gets at once
// a decline that tells the model the size, the limit and to split the
// change, the run is told, nothing is left in the bucket for an
// approver, and no approval comes later.
func TestOversizedRequestIsDeclinedClearlyAndTheLargestIsDecided(t *testing.T) {
	const maxPayload = 256 << 10
	r, runStore := smallRig(t, maxPayload)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	limit := runStore.MaxRequest()
	if limit <= 0 || limit >= maxPayload {
		t.Fatalf("MaxRequest is %d on a server that takes %d", limit, maxPayload)
	}
	// What the record holds besides the preview: a request as the loop
	// builds it, with a one-byte preview. Its times and ids may differ in
	// length by a few bytes, far less than the kilobyte either side.
	probe := approvals.Request{RunID: "run-1", RequestID: approvals.NewRequestID(), ToolCallID: "call_0000", AgentID: "a1", Agent: "remote",
		Tool: "write_file", Arguments: json.RawMessage(`{"path":"note.txt"}`), Message: "Write note.txt", PreviewDiff: "x",
		RiskTier: "high-risk", WorkDir: "/w", ExecuteTool: "execute_write_file", ExecuteArgs: writeArgs, ActionHash: strings.Repeat("0", 64),
		CreatedAt: time.Now().UTC(), ExpiresAt: time.Now().UTC()}
	base, _ := json.Marshal(approvals.Record{Status: approvals.StatusPending, Request: probe})
	for i, size := range []int64{limit - 1024, limit + 1024, maxPayload, 3 * limit} {
		id := fmt.Sprintf("call_%04d", i)
		m := messages.ApprovalRequired{Place: messages.Place{RunID: "run-1", AgentID: "a1", AgentName: "remote"}, ToolCallID: id,
			ToolName: "write_file", RiskLevel: "high-risk", Message: "Write note.txt", PreviewDiff: strings.Repeat("x", int(size)-len(base)+1),
			ExecuteToolName: "execute_write_file", ExecuteArgs: writeArgs, Arguments: json.RawMessage(`{"path":"note.txt"}`)}
		r.remote.Ask(m)
		if size <= limit {
			rec := r.pendingFor(id)
			if rec.Request.PreviewDiff != m.PreviewDiff {
				t.Fatalf("%d bytes (limit %d): the approver was shown %d bytes of a %d-byte preview", size, limit, len(rec.Request.PreviewDiff), len(m.PreviewDiff))
			}
			if err := r.decide(rec, r.alice, nil); err != nil {
				t.Fatalf("%d bytes (limit %d): the approver could not decide: %v", size, limit, err)
			}
			if d := r.want(t, true, remoteapproval.DecidedByPrefix+"alice"); d.ToolCallID != id {
				t.Fatalf("decision for %s, want %s", d.ToolCallID, id)
			}
			continue
		}
		d := r.want(t, false, messages.DecidedByNobody)
		if d.ToolCallID != id || !strings.Contains(d.Note, "too large to send for approval") || !strings.Contains(d.Note, fmt.Sprintf("limit %d", limit)) ||
			!strings.Contains(d.Note, "Split it") {
			t.Fatalf("%d bytes (limit %d): the model is told %+v", size, limit, d)
		}
		r.noticed(t, approvals.AuditCancelled, "was not sent to remote approvers")
		recs, err := r.apStore.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if rec.Request.ToolCallID == id {
				t.Fatalf("%d bytes: a record was left for approvers: %s", size, rec.Status)
			}
		}
	}
	// Nothing more reaches the gate: no late approval of what was refused.
	r.nothing(t, 500*time.Millisecond)
}
