package approvals_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
)

type party struct {
	kp nkeys.KeyPair
	a  approvals.Approver
}

func newParty(t *testing.T, name, tier string, policy bool) party {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	return party{kp, approvals.Approver{Name: name, PublicKey: pub, MaxTier: tier, Policy: policy}}
}

func refusal(t *testing.T, err error) string {
	t.Helper()
	var r *approvals.RefusedError
	if !errors.As(err, &r) {
		t.Fatalf("want a refusal, got %v", err)
	}
	return r.Reason
}

// Every way a decision can be wrong is refused, each for its own reason,
// and only the exact, fresh, authorised decision passes.
func TestVerifyDecisionClasses(t *testing.T) {
	alice := newParty(t, "alice", "high-risk", false)
	lowbob := newParty(t, "bob", "low-risk", false)
	mallory := newParty(t, "mallory", "high-risk", false)
	reg, err := approvals.NewRegistry([]approvals.Approver{alice.a, lowbob.a})
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := approvals.ActionHash("execute_command", json.RawMessage(`{"command":"rm -rf build","cwd":"/w"}`))
	shown, _ := approvals.ShownHash(approvals.Request{RunID: "run-1", RequestID: "ap-1", Message: "rm -rf build", ActionHash: hash})
	exp := approvals.Expect{RunID: "run-1", RequestID: "ap-1", ActionHash: hash, ShownHash: shown, RiskTier: "high-risk"}
	now := time.Now()
	sign := func(p party, d approvals.Decision, at time.Time, validity time.Duration) approvals.Envelope {
		env, err := approvals.SignDecision(p.kp, d, at, validity)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	good := approvals.Decision{RunID: "run-1", RequestID: "ap-1", ActionHash: hash, ShownHash: shown, Approved: true, Note: "ok"}

	seen := approvals.NonceSet{}
	env := sign(alice, good, now, 0)
	d, who, err := approvals.VerifyDecision(env, reg, exp, now, seen)
	if err != nil || !d.Approved || who.Name != "alice" {
		t.Fatalf("good decision: %v %+v %+v", err, d, who)
	}
	if _, _, err := approvals.VerifyDecision(env, reg, exp, now, seen); refusal(t, err) != approvals.ReasonReplay {
		t.Errorf("replay: %v", err)
	}

	tampered := env
	tampered.Payload = json.RawMessage(strings.Replace(string(env.Payload), `"ok"`, `"OK"`, 1))
	other := good
	other.RunID = "run-2"
	otherReq := good
	otherReq.RequestID = "ap-2"
	otherHash := good
	otherHash.ActionHash, _ = approvals.ActionHash("execute_command", json.RawMessage(`{"command":"rm -rf /","cwd":"/w"}`))
	otherShown := good
	otherShown.ShownHash, _ = approvals.ShownHash(approvals.Request{RunID: "run-1", RequestID: "ap-1", Message: "update the docs", ActionHash: hash})
	noShown := good
	noShown.ShownHash = ""
	stolenSig := sign(mallory, good, now, 0)
	stolenSig.Signer = alice.a.PublicKey
	for name, c := range map[string]struct {
		env  approvals.Envelope
		want string
	}{
		"unknown signer":  {sign(mallory, good, now, 0), approvals.ReasonUnknownSigner},
		"borrowed name":   {stolenSig, approvals.ReasonBadSignature},
		"tampered note":   {tampered, approvals.ReasonBadSignature},
		"another run":     {sign(alice, other, now, 0), approvals.ReasonOtherRun},
		"another request": {sign(alice, otherReq, now, 0), approvals.ReasonOtherRequest},
		"another action":  {sign(alice, otherHash, now, 0), approvals.ReasonActionMismatch},
		"shown a forgery": {sign(alice, otherShown, now, 0), approvals.ReasonShownMismatch},
		"shown nothing":   {sign(alice, noShown, now, 0), approvals.ReasonShownMismatch},
		"tier too low":    {sign(lowbob, good, now, 0), approvals.ReasonTier},
		"expired":         {sign(alice, good, now.Add(-10*time.Minute), time.Minute), approvals.ReasonExpired},
		"from the future": {sign(alice, good, now.Add(time.Hour), time.Minute), approvals.ReasonExpired},
		"forever":         {sign(alice, good, now, 48*time.Hour), approvals.ReasonExpired},
		"policy as verdict": {func() approvals.Envelope {
			e, _ := approvals.SignPolicy(alice.kp, approvals.PolicyChange{RunID: "run-1", Policy: "high-risk"}, now, 0)
			return e
		}(), approvals.ReasonMalformed},
	} {
		if _, _, err := approvals.VerifyDecision(c.env, reg, exp, now, approvals.NonceSet{}); refusal(t, err) != c.want {
			t.Errorf("%s: got %v, want %s", name, err, c.want)
		}
	}
	// A low-tier approver may still deny.
	deny := good
	deny.Approved = false
	if _, _, err := approvals.VerifyDecision(sign(lowbob, deny, now, 0), reg, exp, now, approvals.NonceSet{}); err != nil {
		t.Errorf("a low-tier denial: %v", err)
	}
	if _, err := approvals.SignDecision(alice.kp, approvals.Decision{Note: strings.Repeat("x", approvals.MaxNote+1)}, now, 0); err == nil ||
		!strings.Contains(err.Error(), "at most 4096") {
		t.Errorf("huge note: %v", err)
	}
}

func TestVerifyPolicyClasses(t *testing.T) {
	admin := newParty(t, "ada", "high-risk", true)
	plain := newParty(t, "pat", "high-risk", false)
	reg, _ := approvals.NewRegistry([]approvals.Approver{admin.a, plain.a})
	now := time.Now()
	sign := func(p party, policy string) approvals.Envelope {
		e, err := approvals.SignPolicy(p.kp, approvals.PolicyChange{RunID: "run-1", Policy: policy}, now, 0)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	if p, _, err := approvals.VerifyPolicy(sign(admin, "low-risk"), reg, approvals.PolicyExpect{RunID: "run-1", Ceiling: "low-risk"}, now, approvals.NonceSet{}); err != nil || p.Policy != "low-risk" {
		t.Fatalf("allowed change: %v", err)
	}
	if _, _, err := approvals.VerifyPolicy(sign(admin, "high-risk"), reg, approvals.PolicyExpect{RunID: "run-1", Ceiling: "low-risk"}, now, approvals.NonceSet{}); refusal(t, err) != approvals.ReasonCeiling {
		t.Errorf("above the ceiling: %v", err)
	}
	if _, _, err := approvals.VerifyPolicy(sign(admin, "read-only"), reg, approvals.PolicyExpect{RunID: "run-1", Ceiling: ""}, now, approvals.NonceSet{}); refusal(t, err) != approvals.ReasonCeiling {
		t.Errorf("any automatic approval above a none ceiling: %v", err)
	}
	if _, _, err := approvals.VerifyPolicy(sign(plain, "read-only"), reg, approvals.PolicyExpect{RunID: "run-1", Ceiling: "high-risk"}, now, approvals.NonceSet{}); refusal(t, err) != approvals.ReasonNotAllowed {
		t.Errorf("not a policy approver: %v", err)
	}
	// A policy approves every call up to its tier unasked: a policy
	// approver capped below it may not set it, whatever the ceiling, and
	// one narrowed in approvers.json since the run started is held to
	// its new tier.
	for _, tc := range []struct{ max, policy string }{{"read-only", "low-risk"}, {"read-only", "high-risk"}, {"low-risk", "high-risk"}} {
		low := newParty(t, "lou-"+tc.max, tc.max, true)
		lreg, _ := approvals.NewRegistry([]approvals.Approver{low.a})
		if _, _, err := approvals.VerifyPolicy(sign(low, tc.policy), lreg, approvals.PolicyExpect{RunID: "run-1", Ceiling: "high-risk"}, now, approvals.NonceSet{}); err == nil || refusal(t, err) != approvals.ReasonTier {
			t.Errorf("a %s policy approver set policy %s: %v", tc.max, tc.policy, err)
		}
		for _, ok := range []string{"read-only", tc.max} {
			if _, _, err := approvals.VerifyPolicy(sign(low, ok), lreg, approvals.PolicyExpect{RunID: "run-1", Ceiling: "high-risk"}, now, approvals.NonceSet{}); err != nil {
				t.Errorf("a %s policy approver setting %q: %v", tc.max, ok, err)
			}
		}
		// Unset approves low-risk calls unasked at a run a person
		// answers: it is low-risk to set.
		_, _, err := approvals.VerifyPolicy(sign(low, ""), lreg, approvals.PolicyExpect{RunID: "run-1", Ceiling: "high-risk"}, now, approvals.NonceSet{})
		if tc.max == "read-only" && (err == nil || refusal(t, err) != approvals.ReasonTier) || tc.max != "read-only" && err != nil {
			t.Errorf("a %s policy approver setting the unset policy: %v", tc.max, err)
		}
	}
	// Unset is above a read-only ceiling, and changes nothing under an
	// unset one.
	if _, _, err := approvals.VerifyPolicy(sign(admin, ""), reg, approvals.PolicyExpect{RunID: "run-1", Ceiling: "read-only"}, now, approvals.NonceSet{}); err == nil || refusal(t, err) != approvals.ReasonCeiling {
		t.Errorf("unset above a read-only ceiling: %v", err)
	}
	for _, ceiling := range []string{"", "low-risk", "high-risk"} {
		if _, _, err := approvals.VerifyPolicy(sign(admin, ""), reg, approvals.PolicyExpect{RunID: "run-1", Ceiling: ceiling}, now, approvals.NonceSet{}); err != nil {
			t.Errorf("unset under a %q ceiling: %v", ceiling, err)
		}
	}
	home := t.TempDir()
	if _, err := approvals.AddApproverKey(home, "nat", admin.a.PublicKey, "high-risk", true); err != nil {
		t.Fatal(err)
	}
	freg, err := approvals.LoadRegistry(home, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := approvals.RemoveApprover(home, "nat"); err != nil {
		t.Fatal(err)
	}
	if _, err := approvals.AddApproverKey(home, "nat", admin.a.PublicKey, "low-risk", true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := approvals.VerifyPolicy(sign(admin, "high-risk"), freg, approvals.PolicyExpect{RunID: "run-1", Ceiling: "high-risk"}, now, approvals.NonceSet{}); err == nil || refusal(t, err) != approvals.ReasonTier {
		t.Errorf("a policy approver narrowed to low-risk since the run started set high-risk: %v", err)
	}
	if _, _, err := approvals.VerifyPolicy(sign(admin, "unknown"), reg, approvals.PolicyExpect{RunID: "run-1", Ceiling: "high-risk"}, now, approvals.NonceSet{}); refusal(t, err) != approvals.ReasonMalformed {
		t.Errorf("bogus policy: %v", err)
	}
	if _, _, err := approvals.VerifyPolicy(approvals.Envelope{Payload: json.RawMessage(`{"policy":"high-risk"}`)}, reg, approvals.PolicyExpect{RunID: "run-1", Ceiling: "high-risk"}, now, approvals.NonceSet{}); refusal(t, err) != approvals.ReasonBadSignature {
		t.Errorf("unsigned: %v", err)
	}
}

func TestRegistryRefusesBadEntries(t *testing.T) {
	ok := newParty(t, "ok", "low-risk", false).a
	for _, a := range []approvals.Approver{
		{Name: "", PublicKey: ok.PublicKey, MaxTier: "low-risk"},
		{Name: "x/y", PublicKey: ok.PublicKey, MaxTier: "low-risk"},
		{Name: "x", PublicKey: "not-a-key", MaxTier: "low-risk"},
		{Name: "x", PublicKey: ok.PublicKey, MaxTier: "everything"},
	} {
		if _, err := approvals.NewRegistry([]approvals.Approver{a}); err == nil {
			t.Errorf("accepted %+v", a)
		}
	}
}
