package approvals_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/internal/testutil"
)

// smallStore is the approvals bucket, made as a run makes it, on a plain
// JetStream server whose max_payload is maxPayload: a stock nats-server
// takes 1 MB, this one less, so walks around its limit stay fast.
func smallStore(t *testing.T, maxPayload int32) *approvals.Store {
	t.Helper()
	n := testutil.StartNATS(t, testutil.NATSOptions{JetStream: true, Configure: func(o *server.Options) { o.MaxPayload = maxPayload }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := bus.Start(ctx, bus.Options{InProcess: n.Server})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.CloseNow)
	st, err := approvals.OpenStore(ctx, b, true)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// requestOfSize is a pending request whose record is exactly size bytes
// (its preview padded), or fails the test when size is below the record
// of an empty preview.
func requestOfSize(t *testing.T, size int64) approvals.Request {
	t.Helper()
	req := pendingRequest(t, "run-big", time.Minute)
	req.PreviewDiff = "x"
	base, err := json.Marshal(approvals.Record{Status: approvals.StatusPending, Request: req})
	if err != nil {
		t.Fatal(err)
	}
	pad := size - int64(len(base))
	if pad < -1 {
		t.Fatalf("a record of %d bytes cannot be built (the smallest is %d)", size, len(base))
	}
	req.PreviewDiff = strings.Repeat("x", int(pad)+1)
	return req
}

// TestOversizedRequestsAreNeverWrittenAndTheLargestStillDecides walks
// record sizes around MaxRequest on a real server: the limit is measured
// (the bucket's largest value, on this server, less the room a decision
// needs), never above what the server takes; a request at the
// limit is written whole, decided by a signature whose note is the
// longest allowed and escapes to six times its length, and closed; one
// byte more, or three times the limit, is a TooLargeError naming both
// sizes, and nothing is in the bucket for it.
func TestOversizedRequestsAreNeverWrittenAndTheLargestStillDecides(t *testing.T) {
	const maxPayload = 256 << 10
	st := smallStore(t, maxPayload)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	limit := st.MaxRequest()
	if limit <= 0 || limit >= maxPayload {
		t.Fatalf("MaxRequest is %d on a server that takes %d", limit, maxPayload)
	}
	p := newParty(t, "alice", "high-risk", false)
	// json.Marshal writes each '<' as \u003c: the note takes six times
	// its length in the record.
	note := strings.Repeat("<", approvals.MaxNote)
	for _, size := range []int64{limit - 1024, limit - 1, limit, limit + 1, limit + 1024, 3 * limit} {
		req := requestOfSize(t, size)
		if err := st.Fits(req); (err == nil) != (size <= limit) {
			t.Fatalf("%d bytes (limit %d): Fits says %v", size, limit, err)
		}
		_, err := st.Put(ctx, req)
		if size > limit {
			var tooLarge *approvals.TooLargeError
			if !errors.As(err, &tooLarge) || tooLarge.Size != size || tooLarge.Limit != limit || tooLarge.RequestID != req.RequestID {
				t.Fatalf("%d bytes (limit %d): Put: %v", size, limit, err)
			}
			if _, err := st.Get(ctx, req.RunID, req.RequestID); !errors.Is(err, approvals.ErrNoSuchPending) {
				t.Fatalf("%d bytes: a refused request is in the bucket: %v", size, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%d bytes (limit %d): Put: %v", size, limit, err)
		}
		rec, err := st.Get(ctx, req.RunID, req.RequestID)
		if err != nil || rec.Request.PreviewDiff != req.PreviewDiff {
			t.Fatalf("%d bytes: read back a preview of %d bytes, %v", size, len(rec.Request.PreviewDiff), err)
		}
		d, err := approvals.DecisionFor(rec.Request, true, note)
		if err != nil {
			t.Fatal(err)
		}
		d.SignerName = "alice"
		env, err := approvals.SignDecision(p.kp, d, time.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		_ = env.Open(&d)
		decided, err := st.DecideRecord(ctx, rec, env, d, time.Now())
		if err != nil || decided.Status != approvals.StatusApproved {
			t.Fatalf("%d bytes (limit %d): the largest decision does not fit: %v", size, limit, err)
		}
		if err := st.Withdraw(ctx, req, approvals.StatusCancelled, "answered elsewhere (remote:"+strings.Repeat("a", 64)+")"); err != nil {
			t.Fatalf("%d bytes: the decided record cannot be closed: %v", size, err)
		}
		// A request that was never decided closes too.
		open := requestOfSize(t, size)
		if _, err := st.Put(ctx, open); err != nil {
			t.Fatal(err)
		}
		if err := st.Withdraw(ctx, open, approvals.StatusExpired, "nobody answered in time"); err != nil {
			t.Fatalf("%d bytes: a pending record cannot be closed: %v", size, err)
		}
	}
}
