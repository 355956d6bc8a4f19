package busserver_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
)

// The audit stream's lines are attributable: each identity appends only
// under its own key, so no runner writes an approver's line (nor on the
// old shared subject), and the reader says which lines it cannot
// verify (an approver's line about another approver's decision).
func TestAuditLinesAreAttributableToTheirWriter(t *testing.T) {
	home := t.TempDir()
	keys := aliceAndBob(t, home)
	s := serve(t, home, busserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	connect := func(seed string) *approvals.Audit {
		b, err := busclient.Connect(ctx, busclient.Options{URL: s.ClientURL(), Nkey: seed})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.CloseNow)
		return approvals.NewAudit("", b)
	}
	yes := true
	runnerSeed := busserver.RoleSeedPath(home, busserver.RoleRunner)
	if err := connect(runnerSeed).Append(approvals.AuditEntry{Event: approvals.AuditDecided, RunID: "run-1", RequestID: "ap-1",
		Approved: &yes, Approver: "alice", ApproverKey: keys["alice"], Side: "run"}); err != nil {
		t.Fatal(err)
	}
	if err := connect(approvals.ApproverSeedPath(home, "alice")).Append(approvals.AuditEntry{Event: approvals.AuditDecided, RunID: "run-1",
		RequestID: "ap-1", Approved: &yes, Approver: "alice", ApproverKey: keys["alice"], Side: "approver"}); err != nil {
		t.Fatal(err)
	}
	// Bob, under his own key, claims alice decided.
	if err := connect(approvals.ApproverSeedPath(home, "bob")).Append(approvals.AuditEntry{Event: approvals.AuditDecided, RunID: "run-1",
		RequestID: "ap-2", Approved: &yes, Approver: "alice", ApproverKey: keys["alice"], Side: "approver"}); err != nil {
		t.Fatal(err)
	}
	// The runner writes alice's line, and one on the old shared subject:
	// the server refuses both.
	var v violations
	nc := connectAs(t, s.ClientURL(), runnerSeed, &v)
	forged, _ := json.Marshal(approvals.AuditEntry{Event: approvals.AuditDecided, RunID: "run-1", RequestID: "ap-3", Approved: &yes,
		Approver: "alice", ApproverKey: keys["alice"], Side: "approver", Time: time.Now()})
	for _, subj := range []string{approvals.AuditSubjectFor(keys["alice"], "run-1"), approvals.AuditSubject + ".run-1"} {
		if err := nc.Publish(subj, forged); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	v.wait(t, "Permissions Violation for Publish to \""+approvals.AuditSubjectFor(keys["alice"], "run-1")+"\"")
	v.wait(t, "Permissions Violation for Publish to \""+approvals.AuditSubject+".run-1\"")

	reader, err := busclient.Connect(ctx, busclient.Options{URL: s.ClientURL(), Nkey: busserver.RoleSeedPath(home, busserver.RoleObserver)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reader.CloseNow)
	reg, err := approvals.LoadRegistry(home, nil)
	if err != nil {
		t.Fatal(err)
	}
	runnerKey, err := approvals.LoadSigner(runnerSeed)
	if err != nil {
		t.Fatal(err)
	}
	runnerPub, _ := runnerKey.PublicKey()
	recs, err := approvals.ReadAudit(ctx, reader, "run-1", approvals.AuditWriters(reg, runnerPub))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d lines, want the 3 the server let through: %+v", len(recs), recs)
	}
	want := []struct {
		req, writer string
		verified    bool
	}{{"ap-1", "runner", true}, {"ap-1", "alice", true}, {"ap-2", "bob", false}}
	for i, w := range want {
		r := recs[i]
		if r.RequestID != w.req || r.WriterName != w.writer || r.Verified != w.verified || (!w.verified && r.Unverified == "") {
			t.Errorf("line %d: %+v, want request %s written by %s, verified %v", i, r, w.req, w.writer, w.verified)
		}
	}
}

// A consumer delivers a stream's messages to any subject its creator
// names, whatever that identity may publish, and a stream stores what
// arrives on its subjects: a runner writes a forged line into the
// approvals bucket and has the server deliver it on alice's audit
// subject; bob copies one of alice's genuine lines, signature and all.
// The stream stores both under the bucket's subjects, where they were
// written, and the reader takes neither as alice's.
func TestDeliveredAuditLinesAreNotTakenAsTheirSubjectsWriter(t *testing.T) {
	home := t.TempDir()
	keys := aliceAndBob(t, home)
	s := serve(t, home, busserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, err := s.AdminBus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.CloseNow()
	// Someone listens on alice's subject (a monitor of the audit): that
	// is all a consumer needs to deliver there.
	probe := admin.Conn()
	heard := make(chan *nats.Msg, 8)
	if _, err := probe.ChanSubscribe(approvals.AuditSubjectFor(keys["alice"], "run-1"), heard); err != nil {
		t.Fatal(err)
	}
	if err := probe.Flush(); err != nil {
		t.Fatal(err)
	}
	yes := true
	aliceBus, err := busclient.Connect(ctx, busclient.Options{URL: s.ClientURL(), Nkey: approvals.ApproverSeedPath(home, "alice")})
	if err != nil {
		t.Fatal(err)
	}
	defer aliceBus.CloseNow()
	if err := approvals.NewAudit("", aliceBus).Append(approvals.AuditEntry{Event: approvals.AuditDecided, RunID: "run-1", RequestID: "ap-1",
		Approved: &yes, Approver: "alice", ApproverKey: keys["alice"], Side: "approver"}); err != nil {
		t.Fatal(err)
	}
	var genuine *nats.Msg
	select {
	case genuine = <-heard:
	case <-time.After(5 * time.Second):
		t.Fatal("alice's own line never arrived")
	}
	forged, _ := json.Marshal(approvals.AuditEntry{Event: approvals.AuditDecided, RunID: "run-1", RequestID: "ap-9", Approved: &yes,
		Approver: "alice", ApproverKey: keys["alice"], Side: "approver", Time: time.Now()})
	deliver := func(who, key string, value []byte, header nats.Header) {
		t.Helper()
		nc := connectAs(t, s.ClientURL(), who, nil)
		if err := nc.PublishMsg(&nats.Msg{Subject: approvals.KeySubject("run-1." + key), Data: value, Header: header}); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		req, _ := json.Marshal(map[string]any{"stream_name": "KV_" + approvals.Bucket, "config": map[string]any{"name": key,
			"deliver_subject": approvals.AuditSubjectFor(keys["alice"], "run-1"), "filter_subject": approvals.KeySubject("run-1." + key),
			"deliver_policy": "all", "ack_policy": "none"}})
		if _, err := nc.Request("$JS.API.CONSUMER.CREATE.KV_"+approvals.Bucket+"."+key, req, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		select {
		case <-heard:
		case <-time.After(5 * time.Second):
			t.Fatalf("the server delivered nothing: this test no longer shows what it guards against")
		}
	}
	deliver(busserver.RoleSeedPath(home, busserver.RoleRunner), "forged", forged, nil)
	deliver(approvals.ApproverSeedPath(home, "bob"), "copy", genuine.Data, nats.Header{approvals.AuditSigHeader: {genuine.Header.Get(approvals.AuditSigHeader)}})

	reader, err := busclient.Connect(ctx, busclient.Options{URL: s.ClientURL(), Nkey: busserver.RoleSeedPath(home, busserver.RoleObserver)})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.CloseNow()
	reg, err := approvals.LoadRegistry(home, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The stream stores each delivery, but under the subject it was
	// written on (the bucket's), never on alice's.
	js, err := admin.JetStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if last, err := js.LastSeq(ctx, approvals.AuditStream); err == nil && last >= 3 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the audit stream holds %d messages (%v), want alice's line and the two deliveries", last, err)
		}
	}
	recs, err := approvals.ReadAudit(ctx, reader, "run-1", approvals.AuditWriters(reg))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || !recs[0].Verified || recs[0].RequestID != "ap-1" || recs[0].WriterName != "alice" {
		t.Fatalf("lines %+v, want alice's own alone", recs)
	}
}

// aliceAndBob registers two high-risk approvers in home, their seeds
// written where their role reads them, and gives their public keys.
func aliceAndBob(t *testing.T, home string) map[string]string {
	t.Helper()
	keys := map[string]string{}
	for _, name := range []string{"alice", "bob"} {
		a, seed, err := approvals.AddApprover(home, name, "high-risk", false)
		if err != nil {
			t.Fatal(err)
		}
		if err := approvals.WriteSecret(approvals.ApproverSeedPath(home, name), seed); err != nil {
			t.Fatal(err)
		}
		keys[name] = a.PublicKey
	}
	return keys
}
