package approvals_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/busserver"
)

func openStore(t *testing.T) *approvals.Store {
	t.Helper()
	s, err := busserver.Start(context.Background(), busserver.Options{Home: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	nc, err := s.AdminBus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.CloseNow)
	st, err := approvals.OpenStore(context.Background(), nc, false)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func pendingRequest(t *testing.T, run string, ttl time.Duration) approvals.Request {
	req := approvals.Request{RunID: run, RequestID: approvals.NewRequestID(), Tool: "write_file", RiskTier: "high-risk",
		ExecuteTool: "execute_write_file", ExecuteArgs: json.RawMessage(`{"path":"/w/a"}`),
		CreatedAt: time.Now().UTC(), ExpiresAt: time.Now().Add(ttl).UTC()}
	req.ActionHash, _ = approvals.ActionHash(req.ExecuteTool, req.ExecuteArgs)
	return req
}

// Two approvers race on one request: exactly one decision is recorded,
// the other is told who won and when.
func TestDecideIsExactlyOnce(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	for round := 0; round < 10; round++ {
		req := pendingRequest(t, "run-race", time.Minute)
		if _, err := st.Put(ctx, req); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(ctx, req); err == nil {
			t.Fatal("a second Create overwrote a pending request")
		}
		parties := []party{newParty(t, "alice", "high-risk", false), newParty(t, "bob", "high-risk", false)}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, p := range parties {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := approvals.Decision{RunID: req.RunID, RequestID: req.RequestID, ActionHash: req.ActionHash, Approved: i == 0, SignerName: p.a.Name}
				env, _ := approvals.SignDecision(p.kp, d, time.Now(), 0)
				_ = env.Open(&d)
				_, errs[i] = st.Decide(ctx, req.RunID, req.RequestID, env, d, time.Now())
			}()
		}
		wg.Wait()
		wins := 0
		var lost *approvals.AlreadyDecidedError
		for _, err := range errs {
			if err == nil {
				wins++
			} else if !errors.As(err, &lost) {
				t.Fatalf("loser's error %v", err)
			}
		}
		if wins != 1 || lost == nil || !strings.HasPrefix(lost.Error(), "already decided by ") {
			t.Fatalf("round %d: wins %d, %v", round, wins, errs)
		}
		rec, err := st.Get(ctx, req.RunID, req.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		if (rec.Status == approvals.StatusApproved) != (errs[0] == nil) {
			t.Fatalf("the stored decision is not the winner's: %+v %v", rec, errs)
		}
	}
}

func TestUnknownExpiredAndClosedIDs(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	p := newParty(t, "alice", "high-risk", false)
	decide := func(req approvals.Request) error {
		d := approvals.Decision{RunID: req.RunID, RequestID: req.RequestID, ActionHash: req.ActionHash, Approved: true}
		env, _ := approvals.SignDecision(p.kp, d, time.Now(), 0)
		_ = env.Open(&d)
		_, err := st.Decide(ctx, req.RunID, req.RequestID, env, d, time.Now())
		return err
	}
	if err := decide(pendingRequest(t, "run-x", time.Minute)); !errors.Is(err, approvals.ErrNoSuchPending) {
		t.Errorf("never existed: %v", err)
	}
	old := pendingRequest(t, "run-x", -time.Second)
	if _, err := st.Put(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := decide(old); !errors.Is(err, approvals.ErrNoSuchPending) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired: %v", err)
	}
	closed := pendingRequest(t, "run-x", time.Minute)
	if _, err := st.Put(ctx, closed); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(ctx, closed.RunID, closed.RequestID, approvals.StatusCancelled, "the run ended"); err != nil {
		t.Fatal(err)
	}
	if err := decide(closed); !errors.Is(err, approvals.ErrNoSuchPending) || !strings.Contains(err.Error(), "the run ended") {
		t.Errorf("closed: %v", err)
	}
}

func TestSnapshotSeesEveryPending(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		if _, err := st.Put(ctx, pendingRequest(t, "run-s", time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := st.Snapshot(ctx)
	if err != nil || len(recs) != 50 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
}
