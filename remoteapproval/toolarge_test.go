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
func smallRig(t *testing.T, maxPayload int32, localHuman bool) (*rig, *approvals.Store) {
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
		Bus: r.runBus, Store: runStore, RunID: "run-1", Registry: reg, Timeout: time.Minute, WorkDir: "/w", LocalHuman: localHuman,
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

// askOfSize is a gate request whose record, as the loop builds it, is
// about size bytes (its preview padded): its times and ids may differ in
// length by a few bytes, far less than the kilobyte either side of the
// limit the tests walk.
func askOfSize(id string, size int64) messages.ApprovalRequired {
	probe := approvals.Request{RunID: "run-1", RequestID: approvals.NewRequestID(), ToolCallID: id, AgentID: "a1", Agent: "remote",
		Tool: "write_file", Arguments: json.RawMessage(`{"path":"note.txt"}`), Message: "Write note.txt", PreviewDiff: "x",
		RiskTier: "high-risk", WorkDir: "/w", ExecuteTool: "execute_write_file", ExecuteArgs: writeArgs, ActionHash: strings.Repeat("0", 64),
		CreatedAt: time.Now().UTC(), ExpiresAt: time.Now().UTC()}
	base, _ := json.Marshal(approvals.Record{Status: approvals.StatusPending, Request: probe})
	return messages.ApprovalRequired{Place: messages.Place{RunID: "run-1", AgentID: "a1", AgentName: "remote"}, ToolCallID: id,
		ToolName: "write_file", RiskLevel: "high-risk", Message: "Write note.txt", PreviewDiff: strings.Repeat("x", int(size)-len(base)+1),
		ExecuteToolName: "execute_write_file", ExecuteArgs: writeArgs, Arguments: json.RawMessage(`{"path":"note.txt"}`)}
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
	r, runStore := smallRig(t, maxPayload, false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	limit := runStore.MaxRequest()
	if limit <= 0 || limit >= maxPayload {
		t.Fatalf("MaxRequest is %d on a server that takes %d", limit, maxPayload)
	}
	for i, size := range []int64{limit - 1024, limit + 1024, maxPayload, 3 * limit} {
		id := fmt.Sprintf("call_%04d", i)
		m := askOfSize(id, size)
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

// TestOversizedRequestIsLeftToThePersonAtHand: with a person at the run
// (a terminal or bridge) who is asked every request too, one too large
// for the bucket is neither declined nor approved by remote approvals: the
// run is told it went to nobody on the bus, nothing is in the bucket, the
// gate keeps waiting for the person, and the person's answer (the gate's
// withdrawal) settles it quietly. A request that fits is still decided
// remotely afterwards.
func TestOversizedRequestIsLeftToThePersonAtHand(t *testing.T) {
	const maxPayload = 256 << 10
	r, runStore := smallRig(t, maxPayload, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	limit := runStore.MaxRequest()
	for i, size := range []int64{limit + 1024, 3 * limit} {
		m := askOfSize(fmt.Sprintf("big_%d", i), size)
		m.RequestID = fmt.Sprintf("apr-big-%d", i)
		r.remote.Ask(m)
		r.noticedTimes(t, approvals.AuditCancelled, "only the person at this run can decide it", i+1)
		r.nothing(t, 300*time.Millisecond)
		recs, err := r.apStore.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if rec.Request.ToolCallID == m.ToolCallID {
				t.Fatalf("%d bytes: a record was left for approvers: %s", size, rec.Status)
			}
		}
		r.remote.Withdraw(messages.ApprovalDecided{RequestID: m.RequestID, ToolCallID: m.ToolCallID, Approved: true, DecidedBy: messages.DecidedByBridge})
	}
	r.nothing(t, 300*time.Millisecond)
	m := askOfSize("fits", limit-1024)
	r.remote.Ask(m)
	rec := r.pendingFor("fits")
	if err := r.decide(rec, r.alice, nil); err != nil {
		t.Fatal(err)
	}
	if d := r.want(t, true, remoteapproval.DecidedByPrefix+"alice"); d.ToolCallID != "fits" {
		t.Fatalf("decision for %s", d.ToolCallID)
	}
}

// noticedTimes waits until n notices of kind carry substr.
func (r *rig) noticedTimes(t *testing.T, kind, substr string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		seen := 0
		r.mu.Lock()
		for _, x := range r.notices {
			if x.Kind == kind && strings.Contains(x.Message, substr) {
				seen++
			}
		}
		r.mu.Unlock()
		if seen >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("fewer than %d %s notices with %q in %+v", n, kind, substr, r.notices)
}
