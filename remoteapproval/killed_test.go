package remoteapproval_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
)

// TestAKilledRunsRecordExpires: a run that loses the bus for good (its
// process killed, its connection gone) can withdraw nothing; the
// record's own TTL, the approval timeout, takes it out of the bucket, and
// a decision after that is told there is no such pending approval.
func TestAKilledRunsRecordExpires(t *testing.T) {
	r := newRig(t, time.Second, "", "")
	r.askAs(r.remote, "run-1", "call_1", "apr-1")
	rec := r.pendingFor("call_1")
	r.runBus.CloseNow() // the owner is gone without a word
	deadline := time.Now().Add(6 * time.Second)
	for {
		_, err := r.apStore.Get(context.Background(), "run-1", rec.Request.RequestID)
		if errors.Is(err, approvals.ErrNoSuchPending) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the record of a killed run is still in the bucket after 6 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := r.decide(rec, r.alice, nil); err == nil || !strings.Contains(err.Error(), "no such pending approval") {
		t.Fatalf("a decision after the record expired: %v", err)
	}
}
