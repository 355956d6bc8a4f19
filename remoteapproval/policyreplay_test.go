package remoteapproval_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/messages"
)

func (r *rig) publishPolicy(env approvals.Envelope) {
	r.t.Helper()
	data, _ := json.Marshal(env)
	if err := r.apConn.Publish(messages.PolicySubject("run-1"), data); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) wantPolicy(t *testing.T, policy string) {
	t.Helper()
	select {
	case p := <-r.policy:
		if p.Policy != policy {
			t.Fatalf("policy set to %q, want %q", p.Policy, policy)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("policy %q never reached the gate; notices %+v", policy, r.notices)
	}
}

func (r *rig) noPolicy(t *testing.T) {
	t.Helper()
	select {
	case p := <-r.policy:
		t.Fatalf("a refused change reached the gate: %+v", p)
	case <-time.After(200 * time.Millisecond):
	}
}

// A signed change this run never heard (sent while its connection was
// away, or captured before it listened), published by anyone who may
// publish there after a newer change was applied, is refused: it would
// put back a state the newer change replaced. Before, its nonce was
// unknown and it was applied within its validity.
func TestUnheardOlderPolicyChangeIsNotReplayedOverANewerOne(t *testing.T) {
	r := newRig(t, time.Minute, "read-only", "high-risk")
	older, _ := approvals.SignPolicy(r.admin, approvals.PolicyChange{RunID: "run-1", Policy: "high-risk"}, time.Now().Add(-10*time.Second), 0)
	newer, _ := approvals.SignPolicy(r.admin, approvals.PolicyChange{RunID: "run-1", Policy: "low-risk"}, time.Now(), 0)
	r.publishPolicy(newer)
	r.wantPolicy(t, "low-risk")
	r.publishPolicy(older)
	r.noticed(t, approvals.AuditPolicyRefused, "("+approvals.ReasonStale+")")
	r.noPolicy(t)
}

// A signed change is spent once the run has seen it, whether it was
// taken or not: sent again it never counts (here, refused first for the
// ceiling, it stays refused as a replay).
func TestRefusedPolicyChangeIsSpent(t *testing.T) {
	r := newRig(t, time.Minute, "read-only", "low-risk")
	env, _ := approvals.SignPolicy(r.admin, approvals.PolicyChange{RunID: "run-1", Policy: "high-risk"}, time.Now(), 0)
	r.publishPolicy(env)
	r.noticed(t, approvals.AuditPolicyRefused, "("+approvals.ReasonCeiling+")")
	r.publishPolicy(env)
	r.noticed(t, approvals.AuditPolicyRefused, "("+approvals.ReasonReplay+")")
	r.noPolicy(t)
}

// Changes published while the run's connection is away are read from
// the stream once it is back, in order: the run ends in the newest
// state, and a copy of the older one sent afterwards is a replay.
func TestPolicyChangesSentWhileDisconnectedAreReadInOrder(t *testing.T) {
	r := newRig(t, time.Minute, "read-only", "high-risk")
	first, _ := approvals.SignPolicy(r.admin, approvals.PolicyChange{RunID: "run-1", Policy: "high-risk"}, time.Now().Add(-time.Second), 0)
	second, _ := approvals.SignPolicy(r.admin, approvals.PolicyChange{RunID: "run-1", Policy: "low-risk"}, time.Now(), 0)
	// The run's connection drops; the approver publishes both changes
	// at once, while it reconnects.
	if err := r.runConn.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	r.publishPolicy(first)
	r.publishPolicy(second)
	r.wantPolicy(t, "high-risk")
	r.wantPolicy(t, "low-risk")
	r.publishPolicy(first)
	r.noticed(t, approvals.AuditPolicyRefused, "("+approvals.ReasonReplay+")")
	r.noPolicy(t)
}
