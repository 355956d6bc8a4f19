package busserver_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

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
