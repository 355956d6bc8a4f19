package approvals_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/messages"
)

// Revocation is immediate for a running run: an approver removed from
// approvers.json (or narrowed there) after the run loaded its registry
// decides nothing more, with no reload and no restart; an approver added
// later is not admitted by a run that did not start with them.
func TestRevocationIsImmediate(t *testing.T) {
	home := t.TempDir()
	alice, err := approvals.AddApproverKey(home, "alice", newParty(t, "x", "high-risk", true).a.PublicKey, "high-risk", true)
	_ = alice
	if err != nil {
		t.Fatal(err)
	}
	p := newParty(t, "bob", "high-risk", true)
	if _, err := approvals.AddApproverKey(home, "bob", p.a.PublicKey, "high-risk", true); err != nil {
		t.Fatal(err)
	}
	reg, err := approvals.LoadRegistry(home, nil)
	if err != nil {
		t.Fatal(err)
	}
	exp := approvals.Expect{RunID: "run-1", RequestID: "ap-1", ActionHash: "sha256:a", ShownHash: "sha256:s", RiskTier: messages.LevelHighRisk}
	decide := func() error {
		env, err := approvals.SignDecision(p.kp, approvals.Decision{RunID: "run-1", RequestID: "ap-1", ActionHash: "sha256:a", ShownHash: "sha256:s", Approved: true}, time.Now(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = approvals.VerifyDecision(env, reg, exp, time.Now(), approvals.NonceSet{})
		return err
	}
	if err := decide(); err != nil {
		t.Fatalf("bob before revocation: %v", err)
	}
	// Narrowed to low-risk: a high-risk approval is refused.
	write := func(list []approvals.Approver) {
		t.Helper()
		if err := os.Remove(approvals.ApproversPath(home)); err != nil {
			t.Fatal(err)
		}
		for _, a := range list {
			if _, err := approvals.AddApproverKey(home, a.Name, a.PublicKey, a.MaxTier, a.Policy); err != nil {
				t.Fatal(err)
			}
		}
	}
	write([]approvals.Approver{alice, {Name: "bob", PublicKey: p.a.PublicKey, MaxTier: messages.LevelLowRisk}})
	if err := decide(); err == nil || refusal(t, err) != approvals.ReasonTier {
		t.Fatalf("bob narrowed to low-risk approved a high-risk call: %v", err)
	}
	write([]approvals.Approver{alice})
	if err := decide(); err == nil || refusal(t, err) != approvals.ReasonRevoked {
		t.Fatalf("bob, removed, still decides: %v", err)
	}
	// Put back with more than the run started with: the run's own list
	// still bounds him.
	write([]approvals.Approver{alice, {Name: "bob", PublicKey: p.a.PublicKey, MaxTier: messages.LevelHighRisk}})
	if err := decide(); err != nil {
		t.Fatalf("bob restored: %v", err)
	}
	late := newParty(t, "carol", "high-risk", true)
	if _, err := approvals.AddApproverKey(home, "carol", late.a.PublicKey, "high-risk", true); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Lookup(late.a.PublicKey); ok {
		t.Error("an approver added after the run started is admitted by it")
	}
	// An approvers.json that cannot be read admits nobody from it.
	if err := os.WriteFile(approvals.ApproversPath(home), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Lookup(p.a.PublicKey); ok {
		t.Error("a broken approvers.json still admits bob")
	}
}

// RemoveApprover takes exactly the named approver out of approvers.json
// and deletes the seed jazz kept for them; a name not listed is an error
// that says who is.
func TestRemoveApprover(t *testing.T) {
	home := t.TempDir()
	for _, name := range []string{"alice", "bob"} {
		_, seed, err := approvals.AddApprover(home, name, "high-risk", false)
		if err != nil {
			t.Fatal(err)
		}
		if err := approvals.WriteSecret(approvals.ApproverSeedPath(home, name), seed); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := approvals.RemoveApprover(home, "carol"); err == nil || !strings.Contains(err.Error(), "alice, bob") {
		t.Errorf("removing nobody: %v", err)
	}
	gone, err := approvals.RemoveApprover(home, "bob")
	if err != nil || gone.Name != "bob" {
		t.Fatalf("remove bob: %+v %v", gone, err)
	}
	list, err := approvals.ReadApproversFile(home)
	if err != nil || len(list) != 1 || list[0].Name != "alice" {
		t.Fatalf("after removing bob: %+v %v", list, err)
	}
	if _, err := os.Stat(approvals.ApproverSeedPath(home, "bob")); !os.IsNotExist(err) {
		t.Errorf("bob's seed is still there: %v", err)
	}
	if _, err := os.Stat(approvals.ApproverSeedPath(home, "alice")); err != nil {
		t.Errorf("alice's seed went too: %v", err)
	}
	// The name is free again: bob may be re-added with a new key.
	if _, _, err := approvals.AddApprover(home, "bob", "low-risk", false); err != nil {
		t.Errorf("re-adding bob: %v", err)
	}
	if _, err := approvals.RemoveApprover(home, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := approvals.RemoveApprover(home, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := approvals.RemoveApprover(home, "bob"); err == nil || !strings.Contains(err.Error(), "lists none") {
		t.Errorf("removing from an empty list: %v", err)
	}
}
