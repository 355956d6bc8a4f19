package remoteapproval_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
)

// Any client that may write the bucket (every runner on the bus, every
// approver whatever its tier) can rewrite a pending record so that no
// approver will decide it: closed with no decision under any status, or
// left pending with a request the approvers' tools refuse (expired, an
// action hash that does not match what it runs). Each is a decision by
// someone not allowed to make one (the call waits out its timeout and is
// declined), so the run treats it as any other foreign write: audited,
// and its own request written back, on which a genuine decision lands.
func TestNoWriterCanMakeARequestUndecidable(t *testing.T) {
	for name, forge := range map[string]func(approvals.Record) approvals.Record{
		"approved with no decision": func(r approvals.Record) approvals.Record { r.Status = approvals.StatusApproved; return r },
		"denied with no decision":   func(r approvals.Record) approvals.Record { r.Status = approvals.StatusDenied; return r },
		"a status nobody knows":     func(r approvals.Record) approvals.Record { r.Status = "PENDING"; return r },
		"pending, expired": func(r approvals.Record) approvals.Record {
			r.Request.ExpiresAt = time.Now().Add(-time.Minute)
			return r
		},
		"pending, another action hash": func(r approvals.Record) approvals.Record {
			r.Request.ActionHash = approvals.HashPrefix + "00"
			return r
		},
		"pending, another request id": func(r approvals.Record) approvals.Record {
			r.Request.RequestID = "ap-other"
			return r
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, time.Minute, "", "")
			r.ask("call_1")
			honest := r.pendingFor("call_1")
			key := approvals.Key("run-1", honest.Request.RequestID)
			data, _ := json.Marshal(forge(honest))
			if _, err := r.apStore.RawUpdate(context.Background(), key, data, honest.Revision); err != nil {
				t.Fatal(err)
			}
			r.noticed(t, approvals.AuditRefused, honest.Request.RequestID)
			// Back as the run wrote it, and decidable.
			deadline := time.Now().Add(5 * time.Second)
			for {
				rec, err := r.apStore.GetKey(context.Background(), key)
				if err == nil && rec.Status == approvals.StatusPending && rec.Request.RequestID == honest.Request.RequestID &&
					rec.Request.ActionHash == honest.Request.ActionHash && rec.Request.ExpiresAt.Equal(honest.Request.ExpiresAt) {
					if err := r.decide(rec, r.alice, nil); err != nil {
						t.Fatal(err)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the run never wrote its request back: %+v %v", rec, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			r.want(t, true, "remote:alice")
		})
	}
}

// A client writing garbage at a pending key as fast as it can makes the
// run refuse each write; the user is told of them as the audit log logs
// them (the first approvals.MaxRefusalsLogged, then one line at each
// power of two of the rest), not once per write, and the request is
// still decided afterwards.
func TestAFloodOfForeignWritesIsReportedBounded(t *testing.T) {
	r := newRig(t, time.Minute, "", "")
	r.ask("call_1")
	honest := r.pendingFor("call_1")
	subject := approvals.KeySubject(approvals.Key("run-1", honest.Request.RequestID))
	const writes = 600
	for i := 0; i < writes; i++ {
		if err := r.apConn.Publish(subject, []byte(`{"status":`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.apConn.Flush(); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		n := 0
		for _, x := range r.notices {
			if x.Kind == approvals.AuditRefused {
				n++
			}
		}
		return n
	}
	// Refusals come in while the run reads its key back; wait until
	// they stop growing.
	for last, stable := -1, 0; stable < 10; time.Sleep(50 * time.Millisecond) {
		if n := count(); n == last {
			stable++
		} else {
			last, stable = n, 0
		}
	}
	if n, most := count(), approvals.MaxRefusalsLogged+10; n > most {
		t.Errorf("%d refusals reported for %d foreign writes; at most %d should be", n, writes, most)
	}
	rec := r.pendingFor("call_1")
	for rec.Request.RequestID != honest.Request.RequestID {
		time.Sleep(20 * time.Millisecond)
		rec = r.pendingFor("call_1")
	}
	if err := r.decide(rec, r.alice, nil); err != nil {
		t.Fatal(err)
	}
	r.want(t, true, "remote:alice")
}
