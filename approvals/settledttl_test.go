package approvals_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
)

// TestClosedRecordLeavesTheBucket: a record closed by its run (Withdraw)
// or by Close says why for a while, so a late decider is told it was
// settled, and then leaves the bucket by its own TTL, as a pending one
// does, instead of staying for the bucket's MaxAge (a day).
func TestClosedRecordLeavesTheBucket(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	withdrawn := pendingRequest(t, "run-ttl", time.Second)
	closed := pendingRequest(t, "run-ttl", time.Second)
	for _, req := range []approvals.Request{withdrawn, closed} {
		if _, err := st.Put(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Withdraw(ctx, withdrawn, approvals.StatusCancelled, "the run ended"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(ctx, closed.RunID, closed.RequestID, approvals.StatusCancelled, "answered at the terminal"); err != nil {
		t.Fatal(err)
	}
	for _, req := range []approvals.Request{withdrawn, closed} {
		r, err := st.Get(ctx, req.RunID, req.RequestID)
		if err != nil || r.Status != approvals.StatusCancelled || r.Reason == "" {
			t.Fatalf("right after closing, %s reads %+v, %v; want its closed record and reason", req.RequestID, r, err)
		}
	}
	// Expiry (1 s) plus one approval timeout (1 s), whole seconds on the
	// server, and its expiry sweep: well inside 10 s.
	deadline := time.Now().Add(10 * time.Second)
	for _, req := range []approvals.Request{withdrawn, closed} {
		for {
			_, err := st.Get(ctx, req.RunID, req.RequestID)
			if errors.Is(err, approvals.ErrNoSuchPending) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("closed record %s still in the bucket 10 s later (err %v): it would stay until MaxAge", req.RequestID, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
