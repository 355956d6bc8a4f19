package remoteapproval_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/remoteapproval"
)

// askAs asks for call id under the gate's request id gateID.
func (r *rig) askAs(remote *remoteapproval.Remote, runID, callID, gateID string) messages.ApprovalRequired {
	m := messages.ApprovalRequired{Place: messages.Place{RunID: runID, AgentID: "a1", AgentName: "remote"}, RequestID: gateID, ToolCallID: callID,
		ToolName: "write_file", RiskLevel: "high-risk", Message: "Write note.txt", PreviewDiff: "+hi",
		ExecuteToolName: "execute_write_file", ExecuteArgs: writeArgs, Arguments: json.RawMessage(`{"path":"note.txt"}`)}
	remote.Ask(m)
	return m
}

// closedAs waits until the record of req is no longer pending, and
// checks it closed with status and that nothing else in the bucket is
// still pending: an approver watching sees nothing left to decide.
func (r *rig) closedAs(t *testing.T, req approvals.Request, status string) approvals.Record {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rec, err := r.apStore.Get(context.Background(), req.RunID, req.RequestID)
		if err == nil && rec.Status != approvals.StatusPending {
			if rec.Status != status {
				t.Fatalf("record closed as %q (%s), want %q", rec.Status, rec.Reason, status)
			}
			recs, err := r.apStore.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range recs {
				if o.Status == approvals.StatusPending {
					t.Fatalf("a record is still pending: %+v", o.Request)
				}
			}
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("record of %s still %+v (%v)", req.RequestID, rec.Status, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// refusesLateDecisions: an approver's decision on a closed record is
// refused by the store, and one forced onto it (a client writing the
// key directly) never reaches the gate.
func (r *rig) refusesLateDecisions(t *testing.T, rec approvals.Record) {
	t.Helper()
	if err := r.decide(rec, r.alice, nil); err == nil {
		t.Fatal("a decision on a closed record was recorded")
	}
	d, err := approvals.DecisionFor(rec.Request, true, "")
	if err != nil {
		t.Fatal(err)
	}
	env, _ := r.sign(r.alice, d, time.Now(), 0)
	forced := approvals.Record{Status: approvals.StatusApproved, Request: rec.Request, Decision: &env, DecidedBy: "alice", DecidedAt: time.Now()}
	data, _ := json.Marshal(forced)
	if _, err := r.apStore.RawUpdate(context.Background(), approvals.Key(rec.Request.RunID, rec.Request.RequestID), data, rec.Revision); err != nil {
		t.Fatal(err)
	}
	r.nothing(t, 400*time.Millisecond)
}

// TestEveryEndClosesTheRecord: whichever way a request ends, its record
// is closed (never left pending for approvers to answer), and nothing
// decided on it afterwards reaches the gate.
func TestEveryEndClosesTheRecord(t *testing.T) {
	t.Run("answered by the bridge", func(t *testing.T) {
		r := newRig(t, time.Minute, "", "")
		r.askAs(r.remote, "run-1", "call_1", "apr-1")
		rec := r.pendingFor("call_1")
		// The gate resolved it with the bridge's answer.
		r.remote.Withdraw(messages.ApprovalDecided{RequestID: "apr-1", ToolCallID: "call_1", Approved: true, DecidedBy: messages.DecidedByBridge})
		closed := r.closedAs(t, rec.Request, approvals.StatusCancelled)
		if !strings.Contains(closed.Reason, messages.DecidedByBridge) {
			t.Fatalf("reason %q does not say who answered", closed.Reason)
		}
		r.refusesLateDecisions(t, closed)
	})
	t.Run("another gate id withdraws nothing", func(t *testing.T) {
		r := newRig(t, time.Minute, "", "")
		r.askAs(r.remote, "run-1", "call_1", "apr-1")
		rec := r.pendingFor("call_1")
		r.remote.Withdraw(messages.ApprovalDecided{RequestID: "apr-2", ToolCallID: "call_1", DecidedBy: messages.DecidedByBridge})
		r.remote.Withdraw(messages.ApprovalDecided{ToolCallID: "call_1", DecidedBy: messages.DecidedByBridge})
		if err := r.decide(rec, r.alice, nil); err != nil {
			t.Fatal(err)
		}
		r.want(t, true, remoteapproval.DecidedByPrefix+"alice")
		r.closedAs(t, rec.Request, approvals.StatusApproved)
	})
	t.Run("decided by a remote approver", func(t *testing.T) {
		r := newRig(t, time.Minute, "", "")
		m := r.askAs(r.remote, "run-1", "call_1", "apr-1")
		rec := r.pendingFor("call_1")
		if err := r.decide(rec, r.alice, nil); err != nil {
			t.Fatal(err)
		}
		d := r.want(t, true, remoteapproval.DecidedByPrefix+"alice")
		if d.RequestID != m.RequestID {
			t.Fatalf("decision for %q, asked %q", d.RequestID, m.RequestID)
		}
		r.remote.Withdraw(d) // the gate tells it back: nothing changes
		r.closedAs(t, rec.Request, approvals.StatusApproved)
	})
	t.Run("timed out", func(t *testing.T) {
		r := newRig(t, 300*time.Millisecond, "", "")
		r.askAs(r.remote, "run-1", "call_1", "apr-1")
		rec := r.pendingFor("call_1")
		r.want(t, false, remoteapproval.DecidedByTimeout)
		r.refusesLateDecisions(t, r.closedAs(t, rec.Request, approvals.StatusExpired))
	})
	t.Run("run ended", func(t *testing.T) {
		r := newRig(t, time.Minute, "", "")
		r.askAs(r.remote, "run-1", "call_1", "apr-1")
		rec := r.pendingFor("call_1")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		r.remote.Close(ctx)
		r.want(t, false, messages.DecidedByCancel)
		r.closedAs(t, rec.Request, approvals.StatusCancelled)
	})
	t.Run("run cancelled or failed", func(t *testing.T) {
		r := newRig(t, time.Minute, "", "")
		ctx, cancel := context.WithCancel(context.Background())
		other := r.startRemote(t, ctx, "run-2")
		r.askAs(other, "run-2", "call_1", "apr-1")
		rec := r.pendingFor("call_1")
		cancel()
		r.want(t, false, messages.DecidedByCancel)
		r.closedAs(t, rec.Request, approvals.StatusCancelled)
	})
	t.Run("answered while the record was being written", func(t *testing.T) {
		r := newRig(t, time.Minute, "", "")
		var reqs []approvals.Request
		for i := range 20 {
			id := "apr-" + string(rune('a'+i))
			r.askAs(r.remote, "run-1", "call_"+id, id)
			r.remote.Withdraw(messages.ApprovalDecided{RequestID: id, DecidedBy: messages.DecidedByBridge})
		}
		// Every record, written or not when withdrawn, ends closed.
		deadline := time.Now().Add(5 * time.Second)
		for {
			recs, err := r.apStore.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			reqs = reqs[:0]
			pending := 0
			for _, rec := range recs {
				reqs = append(reqs, rec.Request)
				if rec.Status == approvals.StatusPending {
					pending++
				}
			}
			if len(reqs) == 20 && pending == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d records, %d still pending", len(reqs), pending)
			}
			time.Sleep(20 * time.Millisecond)
		}
		r.nothing(t, 300*time.Millisecond)
	})
}

// TestStaleAnswerDecidesNoLaterRequest: a decision signed for a request
// that was answered elsewhere, replayed onto a later request for the
// same call id and the same action, is refused: it names another request.
func TestStaleAnswerDecidesNoLaterRequest(t *testing.T) {
	r := newRig(t, time.Minute, "", "")
	r.askAs(r.remote, "run-1", "call_1", "apr-1")
	stale := r.pendingFor("call_1")
	d, err := approvals.DecisionFor(stale.Request, true, "")
	if err != nil {
		t.Fatal(err)
	}
	env, dd := r.sign(r.alice, d, time.Now(), 0)
	r.remote.Withdraw(messages.ApprovalDecided{RequestID: "apr-1", DecidedBy: messages.DecidedByBridge})
	r.closedAs(t, stale.Request, approvals.StatusCancelled)
	if _, err := r.apStore.Decide(context.Background(), "run-1", stale.Request.RequestID, env, dd, time.Now()); err == nil {
		t.Fatal("the stale decision was recorded on its closed request")
	}

	r.askAs(r.remote, "run-1", "call_1", "apr-2") // the same call id and action again
	later := r.pendingFor("call_1")
	if later.Request.ActionHash != stale.Request.ActionHash || later.Request.RequestID == stale.Request.RequestID {
		t.Fatalf("later request %+v", later.Request)
	}
	if _, err := r.apStore.Decide(context.Background(), "run-1", later.Request.RequestID, env, dd, time.Now()); err != nil {
		t.Fatal(err)
	}
	r.noticed(t, approvals.AuditRefused, "("+approvals.ReasonOtherRequest+")")
	r.nothing(t, 200*time.Millisecond)
}

// startRemote starts another run's loop on the rig's runner connection,
// living as long as ctx.
func (r *rig) startRemote(t *testing.T, ctx context.Context, runID string) *remoteapproval.Remote {
	t.Helper()
	store, err := approvals.OpenStore(context.Background(), r.runBus, false)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := approvals.LoadRegistry(r.home, nil)
	if err != nil {
		t.Fatal(err)
	}
	remote, err := remoteapproval.Start(ctx, remoteapproval.Config{
		Bus: r.runBus, Store: store, RunID: runID, Registry: reg, Timeout: time.Minute, WorkDir: "/w",
		Deliver:    func(d messages.ApprovalDecided) { r.got <- d },
		Audit:      approvals.NewAudit(r.home, r.runBus),
		CheckEvery: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return remote
}
