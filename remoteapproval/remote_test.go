package remoteapproval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/remoteapproval"
)

type rig struct {
	t      *testing.T
	home   string
	port   int
	srv    *busserver.Server
	alice  nkeys.KeyPair
	lowbob nkeys.KeyPair
	// lola may change policy but approve only read-only calls.
	lola    nkeys.KeyPair
	admin   nkeys.KeyPair
	runConn *nats.Conn
	apConn  *nats.Conn
	runBus  *bus.Bus
	apBus   *bus.Bus
	apStore *approvals.Store
	remote  *remoteapproval.Remote
	got     chan messages.ApprovalDecided
	policy  chan messages.PolicyChanged
	mu      sync.Mutex
	notices []remoteapproval.Notice
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func newRig(t *testing.T, timeout time.Duration, policy, ceiling string) *rig {
	t.Helper()
	r := &rig{t: t, home: t.TempDir(), port: freePort(t), got: make(chan messages.ApprovalDecided, 16), policy: make(chan messages.PolicyChanged, 4)}
	add := func(name, tier string, pol bool) nkeys.KeyPair {
		_, seed, err := approvals.AddApprover(r.home, name, tier, pol)
		if err != nil {
			t.Fatal(err)
		}
		if err := approvals.WriteSecret(approvals.ApproverSeedPath(r.home, name), seed); err != nil {
			t.Fatal(err)
		}
		kp, _ := nkeys.FromSeed(seed)
		return kp
	}
	r.alice = add("alice", "high-risk", false)
	r.lowbob = add("bob", "low-risk", false)
	r.admin = add("ada", "high-risk", true)
	r.lola = add("lola", "read-only", true)
	r.start()
	url := r.srv.ClientURL()
	var err error
	runBus, err := busclient.Connect(context.Background(), busclient.Options{URL: url, Nkey: busserver.RoleSeedPath(r.home, busserver.RoleRunner), ReconnectFor: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runBus.CloseNow)
	r.runConn, r.runBus = runBus.Conn(), runBus
	apBus, err := busclient.Connect(context.Background(), busclient.Options{URL: url, Nkey: approvals.ApproverSeedPath(r.home, "alice"), ReconnectFor: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(apBus.CloseNow)
	r.apConn, r.apBus = apBus.Conn(), apBus
	ctx := context.Background()
	if r.apStore, err = approvals.OpenStore(ctx, r.apBus, false); err != nil {
		t.Fatal(err)
	}
	runStore, err := approvals.OpenStore(ctx, r.runBus, false)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := approvals.LoadRegistry(r.home, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.remote, err = remoteapproval.Start(ctx, remoteapproval.Config{
		Bus: r.runBus, Store: runStore, RunID: "run-1", Registry: reg, Timeout: timeout,
		Policy: policy, Ceiling: ceiling, WorkDir: "/w",
		Deliver:   func(d messages.ApprovalDecided) { r.got <- d },
		SetPolicy: func(p messages.PolicyChanged) { r.policy <- p },
		Report: func(n remoteapproval.Notice) {
			r.mu.Lock()
			r.notices = append(r.notices, n)
			r.mu.Unlock()
		},
		Audit:      approvals.NewAudit(r.home, r.runBus),
		CheckEvery: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		r.remote.Close(ctx)
	})
	return r
}

func (r *rig) start() {
	s, err := busserver.Start(context.Background(), busserver.Options{Home: r.home, Port: r.port, Reload: 50 * time.Millisecond})
	if err != nil {
		r.t.Fatal(err)
	}
	r.srv = s
	r.t.Cleanup(func() { r.srv.Close() })
}

var writeArgs = json.RawMessage(`{"path":"/w/note.txt","content":"hi\n","fingerprint":"absent"}`)

func (r *rig) ask(id string) messages.ApprovalRequired {
	m := messages.ApprovalRequired{Place: messages.Place{RunID: "run-1", AgentID: "a1", AgentName: "remote"}, ToolCallID: id,
		ToolName: "write_file", RiskLevel: "high-risk", Message: "Write note.txt", PreviewDiff: "+hi",
		ExecuteToolName: "execute_write_file", ExecuteArgs: writeArgs, Arguments: json.RawMessage(`{"path":"note.txt"}`)}
	r.remote.Ask(m)
	return m
}

// pendingFor waits until the request of call id is in the bucket.
func (r *rig) pendingFor(id string) approvals.Record {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		recs, err := r.apStore.Snapshot(context.Background())
		if err == nil {
			for _, rec := range recs {
				if rec.Request.ToolCallID == id && rec.Status == approvals.StatusPending {
					return rec
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.t.Fatalf("request for %s never appeared", id)
	return approvals.Record{}
}

func (r *rig) sign(kp nkeys.KeyPair, d approvals.Decision, at time.Time, validity time.Duration) (approvals.Envelope, approvals.Decision) {
	env, err := approvals.SignDecision(kp, d, at, validity)
	if err != nil {
		r.t.Fatal(err)
	}
	var out approvals.Decision
	_ = env.Open(&out)
	return env, out
}

func (r *rig) decide(rec approvals.Record, kp nkeys.KeyPair, mutate func(*approvals.Decision)) error {
	d, err := approvals.DecisionFor(rec.Request, true, "")
	if err != nil {
		r.t.Fatal(err)
	}
	at, validity := time.Now(), time.Duration(0)
	if mutate != nil {
		mutate(&d)
		if !d.IssuedAt.IsZero() && d.IssuedAt.Before(time.Now().Add(-time.Hour)) {
			at, validity = d.IssuedAt, time.Minute
		}
	}
	env, dd := r.sign(kp, d, at, validity)
	_, err = r.apStore.Decide(context.Background(), rec.Request.RunID, rec.Request.RequestID, env, dd, time.Now())
	return err
}

func (r *rig) want(t *testing.T, approved bool, byPrefix string) messages.ApprovalDecided {
	t.Helper()
	select {
	case d := <-r.got:
		if d.Approved != approved || !strings.HasPrefix(d.DecidedBy, byPrefix) {
			t.Fatalf("decision %+v, want approved=%v by %s…", d, approved, byPrefix)
		}
		return d
	case <-time.After(10 * time.Second):
		t.Fatalf("no decision reached the gate; notices %+v", r.notices)
	}
	return messages.ApprovalDecided{}
}

func (r *rig) nothing(t *testing.T, wait time.Duration) {
	t.Helper()
	select {
	case d := <-r.got:
		t.Fatalf("unexpected decision %+v", d)
	case <-time.After(wait):
	}
}

func (r *rig) noticed(t *testing.T, kind, substr string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, n := range r.notices {
			if n.Kind == kind && strings.Contains(n.Message, substr) {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s notice with %q in %+v", kind, substr, r.notices)
}

func TestVerifiedDecisionReachesTheGateOnce(t *testing.T) {
	r := newRig(t, time.Minute, "", "")
	r.ask("call_1")
	rec := r.pendingFor("call_1")
	if rec.Request.WorkDir != "/w" || rec.Request.PreviewDiff != "+hi" || rec.Request.Agent != "remote" {
		t.Fatalf("request lacks what a person needs: %+v", rec.Request)
	}
	want, _ := approvals.ActionHash("execute_write_file", writeArgs)
	if rec.Request.ActionHash != want {
		t.Fatalf("action hash %s, want %s", rec.Request.ActionHash, want)
	}
	if err := r.decide(rec, r.alice, nil); err != nil {
		t.Fatal(err)
	}
	d := r.want(t, true, "remote:alice")
	if d.ToolCallID != "call_1" {
		t.Fatalf("%+v", d)
	}
	// The winner's decision cannot be used again: a second approver is
	// told who won, and the run hears nothing more.
	if err := r.decide(rec, r.admin, nil); err == nil || !strings.Contains(err.Error(), "already decided by") {
		t.Fatalf("second decision: %v", err)
	}
	r.nothing(t, 200*time.Millisecond)
	data, err := os.ReadFile(filepath.Join(r.home, approvals.AuditFile))
	if err != nil || !strings.Contains(string(data), `"event":"decided"`) || !strings.Contains(string(data), `"approver":"alice"`) {
		t.Fatalf("audit trail: %s %v", data, err)
	}
}

// Every forged, misdirected or stale decision is refused, the request is
// put back, and a genuine decision afterwards still lands.
func TestForgedDecisionsAreRefusedAndNothingIsLost(t *testing.T) {
	r := newRig(t, time.Minute, "", "")
	r.ask("call_1")
	rec := r.pendingFor("call_1")
	stranger, _ := nkeys.CreateUser()
	cases := []struct {
		name   string
		kp     nkeys.KeyPair
		mutate func(*approvals.Decision)
		reason string
	}{
		{"another action hash", r.alice, func(d *approvals.Decision) { d.ActionHash = approvals.HashPrefix + strings.Repeat("0", 64) }, approvals.ReasonActionMismatch},
		{"another run", r.alice, func(d *approvals.Decision) { d.RunID = "run-2" }, approvals.ReasonOtherRun},
		{"expired", r.alice, func(d *approvals.Decision) { d.IssuedAt = time.Now().Add(-2 * time.Hour) }, approvals.ReasonExpired},
		{"unknown signer", stranger, nil, approvals.ReasonUnknownSigner},
		{"tier too low", r.lowbob, nil, approvals.ReasonTier},
	}
	for _, c := range cases {
		rec = r.pendingFor("call_1") // reopened after each refusal
		if err := r.decide(rec, c.kp, c.mutate); err != nil {
			t.Fatalf("%s: write: %v", c.name, err)
		}
		r.noticed(t, approvals.AuditRefused, "("+c.reason+")")
		r.nothing(t, 50*time.Millisecond)
	}
	// Garbage at the key, and a signed record (of the request, at its
	// key) whose payload is not JSON.
	for junk, reason := range map[string]string{
		`{"status":"approved","decision":`: approvals.ReasonMalformed,
		`{"status":"approved","request":%s,"decision":{"payload":"x","signer":"U","sig":"!"}}`: approvals.ReasonBadSignature,
	} {
		rec = r.pendingFor("call_1")
		own, _ := json.Marshal(rec.Request)
		if strings.Contains(junk, "%s") {
			junk = fmt.Sprintf(junk, own)
		}
		if _, err := r.apStore.RawUpdate(context.Background(), approvals.Key("run-1", rec.Request.RequestID), []byte(junk), rec.Revision); err != nil {
			t.Fatal(err)
		}
		r.noticed(t, approvals.AuditRefused, "("+reason+")")
		r.nothing(t, 50*time.Millisecond)
	}
	rec = r.pendingFor("call_1")
	if err := r.decide(rec, r.alice, func(d *approvals.Decision) { d.Approved = false; d.Note = "not today" }); err != nil {
		t.Fatal(err)
	}
	d := r.want(t, false, "remote:alice")
	if d.Note != "not today" {
		t.Fatalf("note %q", d.Note)
	}
	// Each refusal is in the audit log with its reason code and hint.
	want := map[string]bool{approvals.ReasonMalformed: true, approvals.ReasonBadSignature: true}
	for _, c := range cases {
		want[c.reason] = true
	}
	data, err := os.ReadFile(filepath.Join(r.home, approvals.AuditFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e approvals.AuditEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if e.Event == approvals.AuditRefused && e.Hint == approvals.RefusalHint(e.Refusal) {
			delete(want, e.Refusal)
		}
	}
	if len(want) > 0 {
		t.Errorf("refusals not in the audit log with their code and hint: %v\n%s", want, data)
	}
}

// A decision copied from one request onto another (a replay) is refused.
func TestReplayedDecisionIsRefused(t *testing.T) {
	r := newRig(t, time.Minute, "", "")
	r.ask("call_1")
	first := r.pendingFor("call_1")
	if err := r.decide(first, r.alice, nil); err != nil {
		t.Fatal(err)
	}
	r.want(t, true, "remote:alice")
	r.ask("call_2") // the same action again
	second := r.pendingFor("call_2")
	old, err := r.apStore.Get(context.Background(), "run-1", first.Request.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	var d approvals.Decision
	_ = old.Decision.Open(&d)
	if _, err := r.apStore.Decide(context.Background(), "run-1", second.Request.RequestID, *old.Decision, d, time.Now()); err != nil {
		t.Fatal(err)
	}
	r.noticed(t, approvals.AuditRefused, "("+approvals.ReasonOtherRequest+")")
	r.nothing(t, 100*time.Millisecond)
}

func TestNobodyAnswersMeansDeclined(t *testing.T) {
	r := newRig(t, 300*time.Millisecond, "", "")
	r.ask("call_1")
	rec := r.pendingFor("call_1")
	d := r.want(t, false, remoteapproval.DecidedByTimeout)
	if !strings.Contains(d.Note, "No approver answered") {
		t.Fatalf("refusal %q", d.Note)
	}
	// A late approver is told it is gone.
	time.Sleep(100 * time.Millisecond)
	err := r.decide(rec, r.alice, nil)
	if err == nil || !strings.Contains(err.Error(), "no such pending approval") {
		t.Fatalf("late decision: %v", err)
	}
}

func TestPolicyChangesAreSignedAndCapped(t *testing.T) {
	r := newRig(t, time.Minute, "read-only", "low-risk")
	publish := func(v any) {
		data, _ := json.Marshal(v)
		if err := r.apConn.Publish(messages.PolicySubject("run-1"), data); err != nil {
			t.Fatal(err)
		}
	}
	publish(messages.PolicyChanged{Policy: "high-risk"}) // the old, unsigned shape
	r.noticed(t, approvals.AuditPolicyRefused, "("+approvals.ReasonUnsigned+")")
	env, _ := approvals.SignPolicy(r.admin, approvals.PolicyChange{RunID: "run-1", Policy: "high-risk"}, time.Now(), 0)
	publish(env)
	r.noticed(t, approvals.AuditPolicyRefused, "("+approvals.ReasonCeiling+")")
	env, _ = approvals.SignPolicy(r.alice, approvals.PolicyChange{RunID: "run-1", Policy: "low-risk"}, time.Now(), 0)
	publish(env)
	r.noticed(t, approvals.AuditPolicyRefused, "("+approvals.ReasonNotAllowed+")")
	// Within the ceiling, but above what its signer may approve: a policy
	// approves every call of its tier unasked.
	env, _ = approvals.SignPolicy(r.lola, approvals.PolicyChange{RunID: "run-1", Policy: "low-risk"}, time.Now(), 0)
	publish(env)
	r.noticed(t, approvals.AuditPolicyRefused, "("+approvals.ReasonTier+")")
	select {
	case p := <-r.policy:
		t.Fatalf("a refused change reached the gate: %+v", p)
	case <-time.After(100 * time.Millisecond):
	}
	env, _ = approvals.SignPolicy(r.admin, approvals.PolicyChange{RunID: "run-1", Policy: "low-risk"}, time.Now(), 0)
	publish(env)
	select {
	case p := <-r.policy:
		if p.Policy != "low-risk" {
			t.Fatalf("%+v", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a valid change never arrived")
	}
	publish(env) // replayed
	r.noticed(t, approvals.AuditPolicyRefused, "("+approvals.ReasonReplay+")")
}

// The server goes away while a request waits and comes back on the same
// port and store: the request is still there, and a decision made after
// the restart reaches the run.
func TestServerRestartLosesNothing(t *testing.T) {
	r := newRig(t, time.Minute, "", "")
	r.ask("call_1")
	r.pendingFor("call_1")
	r.srv.Close()
	time.Sleep(300 * time.Millisecond)
	r.start()
	waitConnected(t, r.apConn)
	waitConnected(t, r.runConn)
	rec := r.pendingFor("call_1")
	if err := r.decide(rec, r.alice, nil); err != nil {
		t.Fatal(err)
	}
	r.want(t, true, "remote:alice")
}

// A connection that is gone for good declines what waits: never approved.
func TestLostBusDeclines(t *testing.T) {
	r := newRig(t, time.Minute, "", "")
	r.ask("call_1")
	r.pendingFor("call_1")
	r.runConn.Close()
	r.want(t, false, messages.DecidedByNobody)
}

func waitConnected(t *testing.T, nc *nats.Conn) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !nc.IsConnected() {
		if time.Now().After(deadline) {
			t.Fatal("never reconnected")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// What a person reads is bound: a store writer who rewrites the pending
// record's message and diff (the action, and so its hash, left alone) gets
// an approver to sign what it forged, and the run refuses that decision,
// puts its own request back, and still takes a decision on the truth.
func TestForgedDisplayIsRefused(t *testing.T) {
	r := newRig(t, time.Minute, "", "")
	r.ask("call_1")
	honest := r.pendingFor("call_1")
	for name, forge := range map[string]func(*approvals.Request){
		"diff":      func(q *approvals.Request) { q.PreviewDiff = "+harmless typo fix" },
		"message":   func(q *approvals.Request) { q.Message = "Write a note nobody reads" },
		"tier":      func(q *approvals.Request) { q.RiskTier = "read-only" },
		"directory": func(q *approvals.Request) { q.WorkDir = "/tmp/scratch" },
		"agent":     func(q *approvals.Request) { q.Agent = "trusted-bot"; q.Depth = 0 },
		"persona":   func(q *approvals.Request) { q.Persona = "reviewer" },
	} {
		rec := r.pendingFor("call_1")
		forged := rec.Request
		forge(&forged)
		raw, err := json.Marshal(approvals.Record{Status: approvals.StatusPending, Request: forged})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.apStore.RawUpdate(context.Background(), approvals.Key(forged.RunID, forged.RequestID), raw, rec.Revision); err != nil {
			t.Fatal(err)
		}
		// The approver reads the forgery and signs exactly what it read
		// (the run may have written its own request back already: it
		// reads back what it wrote, and the decision lands on that).
		seen := approvals.Record{Status: approvals.StatusPending, Request: forged}
		if err := r.decide(seen, r.alice, nil); err != nil {
			t.Fatalf("%s: write: %v", name, err)
		}
		r.noticed(t, approvals.AuditRefused, "("+approvals.ReasonShownMismatch+")")
		r.nothing(t, 50*time.Millisecond)
	}
	// The run put back the request it wrote; a decision on it lands.
	rec := r.pendingFor("call_1")
	deadline := time.Now().Add(5 * time.Second)
	for !reflect.DeepEqual(rec.Request, honest.Request) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		rec = r.pendingFor("call_1")
	}
	if !reflect.DeepEqual(rec.Request, honest.Request) {
		t.Fatalf("the run did not restore its own request: %+v", rec.Request)
	}
	if err := r.decide(rec, r.alice, nil); err != nil {
		t.Fatal(err)
	}
	r.want(t, true, "remote:alice")
}

// A pending record made to vanish by another client, announced (a delete
// marker) or not (a copy of it rewritten with a short TTL, which expires
// without a word on the bus), is written again and the refusal audited:
// approvers still see it, and a genuine decision still lands.
func TestVanishedRecordIsWrittenAgain(t *testing.T) {
	r := newRig(t, time.Minute, "", "")
	r.ask("call_1")
	rec := r.pendingFor("call_1")
	key := approvals.Key("run-1", rec.Request.RequestID)
	gone := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := r.apStore.GetKey(context.Background(), key); err != nil {
				return
			}
		}
		t.Fatalf("%s: the record never went", what)
	}
	del := nats.NewMsg(approvals.KeySubject(key))
	del.Header.Set("KV-Operation", "DEL")
	if _, err := r.apConn.RequestMsg(del, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	r.noticed(t, approvals.AuditRefused, "deleted by another client")
	rec = r.pendingFor("call_1")
	// The same record, rewritten to expire in a second: its write looks
	// like the run's own (pending), and its end is announced to nobody.
	data, _ := json.Marshal(approvals.Record{Status: approvals.StatusPending, Request: rec.Request})
	short := nats.NewMsg(approvals.KeySubject(key))
	short.Header.Set("Nats-TTL", "1s")
	short.Data = data
	ack, err := r.apConn.RequestMsg(short, 2*time.Second)
	if err != nil || strings.Contains(string(ack.Data), "error") {
		t.Fatalf("rewrite with a TTL: %v %s", err, ack.Data)
	}
	gone("rewritten with a 1 s TTL")
	rec = r.pendingFor("call_1")
	if err := r.decide(rec, r.alice, nil); err != nil {
		t.Fatal(err)
	}
	r.want(t, true, "remote:alice")
	n := 0
	r.mu.Lock()
	for _, x := range r.notices {
		if x.Kind == approvals.AuditRefused && strings.Contains(x.Message, "deleted by another client") {
			n++
		}
	}
	r.mu.Unlock()
	if n < 2 {
		t.Errorf("%d refusals audited for 2 vanished records: %+v", n, r.notices)
	}
}

// A request is decided once. Written again afterwards, with the decision
// taken (a replay) or reopened and decided anew, the record changes
// nothing: the gate hears no second decision, and each write is audited.
func TestDecisionOnADecidedRequestIsAudited(t *testing.T) {
	r := newRig(t, time.Minute, "", "")
	r.ask("call_1")
	rec := r.pendingFor("call_1")
	if err := r.decide(rec, r.alice, nil); err != nil {
		t.Fatal(err)
	}
	r.want(t, true, "remote:alice")
	ctx := context.Background()
	key := approvals.Key("run-1", rec.Request.RequestID)
	done, err := r.apStore.GetKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// The decided record, written again as it is.
	data, _ := json.Marshal(done)
	rev, err := r.apStore.RawUpdate(ctx, key, data, done.Revision)
	if err != nil {
		t.Fatal(err)
	}
	r.noticed(t, approvals.AuditRefused, "("+approvals.ReasonReplay+")")
	// Put back as pending, then decided again (denied this time) by
	// another approver through the store as a client does.
	pend, _ := json.Marshal(approvals.Record{Status: approvals.StatusPending, Request: rec.Request})
	if _, err := r.apStore.RawUpdate(ctx, key, pend, rev); err != nil {
		t.Fatal(err)
	}
	again, err := r.apStore.GetKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.decide(again, r.admin, func(d *approvals.Decision) { d.Approved = false }); err != nil {
		t.Fatal(err)
	}
	r.nothing(t, 300*time.Millisecond)
	n := 0
	r.mu.Lock()
	for _, x := range r.notices {
		if x.Kind == approvals.AuditRefused && strings.Contains(x.Message, "already decided") {
			n++
		}
	}
	r.mu.Unlock()
	if n != 2 {
		t.Errorf("%d refusals audited for 2 decisions written on a decided request: %+v", n, r.notices)
	}
}

// TestSubagentRequestSaysItsPersona: a sub-agent's request tells the
// approver its persona and its task besides the name the model chose for
// it (a coder may be called "researcher"), and they are part of what the
// approver's signature is bound to.
func TestSubagentRequestSaysItsPersona(t *testing.T) {
	r := newRig(t, time.Minute, "", "")
	m := messages.ApprovalRequired{Place: messages.Place{RunID: "run-1", AgentID: "a1.2", AgentName: "researcher", Depth: 1}, ToolCallID: "call_1",
		ToolName: "write_file", RiskLevel: "high-risk", Message: "Write note.txt", Persona: "coder", Task: "tidy the notes",
		ExecuteToolName: "execute_write_file", ExecuteArgs: writeArgs}
	r.remote.Ask(m)
	rec := r.pendingFor("call_1")
	if q := rec.Request; q.Subagent != "researcher" || q.Persona != "coder" || q.Task != "tidy the notes" {
		t.Fatalf("request %+v", q)
	}
	if err := r.decide(rec, r.alice, nil); err != nil {
		t.Fatal(err)
	}
	r.want(t, true, "remote:alice")
}
