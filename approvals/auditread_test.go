package approvals_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/internal/testutil"
)

// On a server that lets anyone publish anywhere (an external cluster
// granted jazz.audit.> as the old instructions said), the reader still
// takes a line as alice's only if alice signed it, on her subject, for
// this run, once.
func TestAuditReaderVerifiesSignaturesNotSubjects(t *testing.T) {
	alice := newParty(t, "alice", "high-risk", false)
	bob := newParty(t, "bob", "high-risk", false)
	mallory := newParty(t, "mallory", "high-risk", false)
	// Every identity may publish anywhere.
	srv := testutil.StartNATS(t, testutil.NATSOptions{JetStream: true, Configure: func(o *server.Options) {
		o.Nkeys = []*server.NkeyUser{{Nkey: alice.a.PublicKey}, {Nkey: mallory.a.PublicKey}}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	aliceBus, err := bus.Start(ctx, bus.Options{InProcess: srv.Server, Client: bus.Client{Nkey: &bus.NkeyUser{Public: alice.a.PublicKey, Sign: alice.kp.Sign}}})
	if err != nil {
		t.Fatal(err)
	}
	defer aliceBus.CloseNow()
	if _, err := approvals.OpenStore(ctx, aliceBus, true); err != nil {
		t.Fatal(err)
	}
	raw := srv.Conn(t, nats.Nkey(mallory.a.PublicKey, mallory.kp.Sign))
	heard := make(chan *nats.Msg, 1)
	if _, err := raw.ChanSubscribe(approvals.AuditSubjectFor(alice.a.PublicKey, "run-1"), heard); err != nil {
		t.Fatal(err)
	}
	if err := raw.Flush(); err != nil {
		t.Fatal(err)
	}
	yes := true
	if err := approvals.NewAudit("", aliceBus).Append(approvals.AuditEntry{Event: approvals.AuditDecided, RunID: "run-1", RequestID: "ap-1",
		Approved: &yes, Approver: "alice", ApproverKey: alice.a.PublicKey, Side: "approver"}); err != nil {
		t.Fatal(err)
	}
	var genuine *nats.Msg
	select {
	case genuine = <-heard:
	case <-time.After(5 * time.Second):
		t.Fatal("alice's line never arrived")
	}
	sig := genuine.Header.Get(approvals.AuditSigHeader)
	if sig == "" {
		t.Fatal("alice's line is not signed")
	}
	forged, _ := json.Marshal(approvals.AuditEntry{Event: approvals.AuditDecided, RunID: "run-1", RequestID: "ap-9", Approved: &yes,
		Approver: "alice", ApproverKey: alice.a.PublicKey, Side: "approver", Time: time.Now()})
	for _, m := range []*nats.Msg{
		{Subject: approvals.AuditSubjectFor(alice.a.PublicKey, "run-1"), Data: forged},
		{Subject: approvals.AuditSubjectFor(alice.a.PublicKey, "run-1"), Data: forged, Header: nats.Header{approvals.AuditSigHeader: {sig}}},
		{Subject: approvals.AuditSubjectFor(alice.a.PublicKey, "run-1"), Data: genuine.Data, Header: genuine.Header},
		{Subject: approvals.AuditSubjectFor(bob.a.PublicKey, "run-1"), Data: genuine.Data, Header: genuine.Header},
		{Subject: approvals.AuditSubject + ".run-1", Data: forged},
	} {
		if err := raw.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := raw.Flush(); err != nil {
		t.Fatal(err)
	}
	reg, _ := approvals.NewRegistry([]approvals.Approver{alice.a, bob.a})
	var recs []approvals.AuditRecord
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && len(recs) < 6; time.Sleep(20 * time.Millisecond) {
		if recs, err = approvals.ReadAudit(ctx, aliceBus, "run-1", approvals.AuditWriters(reg)); err != nil {
			t.Fatal(err)
		}
	}
	if len(recs) != 6 {
		t.Fatalf("%d lines, want 6: %+v", len(recs), recs)
	}
	if !recs[0].Verified || recs[0].WriterName != "alice" {
		t.Errorf("alice's own line: %+v", recs[0])
	}
	for i, why := range []string{"not signed by " + alice.a.PublicKey, "not signed by " + alice.a.PublicKey, "copy of line 1",
		"not signed by " + bob.a.PublicKey, "nothing says who wrote it"} {
		if r := recs[i+1]; r.Verified || !strings.Contains(r.Unverified, why) {
			t.Errorf("line %d: %+v, want it unverified: %s", i+2, r, why)
		}
	}
}
