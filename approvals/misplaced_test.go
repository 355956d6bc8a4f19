package approvals_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
)

// A record is its request's only at its own key (run and request id):
// anyone who may write the bucket can store a copy of a run's request
// under another key, closed ("approved by alice") or with another text.
// Approvers' tools key what they show by the request inside a record,
// so such a copy made `watch` drop the genuine request as decided
// elsewhere, shown in its place, or made its id ambiguous to `show` and
// `approve`. A record at a key not its own is no request: readers skip
// it, and reading it is an error.
func TestARecordAtAnotherKeyIsNoRequest(t *testing.T) {
	st := openStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := pendingRequest(t, "run-1", time.Minute)
	if _, err := st.Put(ctx, req); err != nil {
		t.Fatal(err)
	}
	forged := approvals.Record{Status: approvals.StatusApproved, Request: req, DecidedBy: "alice", DecidedAt: time.Now()}
	data, _ := json.Marshal(forged)
	misplaced := approvals.Key("run-2", req.RequestID)
	if _, err := st.RawUpdate(ctx, misplaced, data, 0); err != nil {
		t.Fatal(err)
	}
	recs, err := st.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Status != approvals.StatusPending {
		t.Fatalf("snapshot: %+v, want the genuine pending request alone", recs)
	}
	got, err := st.Find(ctx, req.RequestID)
	if err != nil || got.Status != approvals.StatusPending {
		t.Fatalf("find by id: %+v %v, want the genuine pending request", got, err)
	}
	if _, err := st.GetKey(ctx, misplaced); err == nil {
		t.Fatal("a record at another key than its request's was read as a request")
	}
	updates, err := st.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-updates:
		if r.Status != approvals.StatusPending {
			t.Fatalf("watch: %+v first", r)
		}
	case <-ctx.Done():
		t.Fatal("watch sent nothing")
	}
	select {
	case r := <-updates:
		t.Fatalf("watch sent the misplaced copy: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
}
