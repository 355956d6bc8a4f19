package remoteapproval_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/messages"
)

// A signed change to the empty policy is no "nothing automatic" at the
// gate: a run that takes signed changes has a person to answer it (its
// approvers), and there an unset policy is the default, which approves
// every low-risk call unasked (tools-and-approval.md §4). So it is held
// to the ceiling and to its signer's tier as low-risk is: a run started
// at read-only is not widened to low-risk by it, whoever signs it.
func TestUnsetPolicyIsHeldAsTheLowRiskItMeans(t *testing.T) {
	for _, tc := range []struct {
		name, start, ceiling string
		signer               func(*rig) nkeys.KeyPair
		refusal              string // "" = taken
	}{
		{"above a read-only ceiling", "read-only", "read-only", func(r *rig) nkeys.KeyPair { return r.admin }, approvals.ReasonCeiling},
		{"above a read-only signer", "read-only", "low-risk", func(r *rig) nkeys.KeyPair { return r.lola }, approvals.ReasonTier},
		{"within ceiling and tier", "read-only", "low-risk", func(r *rig) nkeys.KeyPair { return r.admin }, ""},
		{"the run started unset", "", "", func(r *rig) nkeys.KeyPair { return r.admin }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, time.Minute, tc.start, tc.ceiling)
			env, err := approvals.SignPolicy(tc.signer(r), approvals.PolicyChange{RunID: "run-1", Policy: messages.PolicyNone}, time.Now(), 0)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := json.Marshal(env)
			if err := r.apConn.Publish(messages.PolicySubject("run-1"), data); err != nil {
				t.Fatal(err)
			}
			if tc.refusal != "" {
				r.noticed(t, approvals.AuditPolicyRefused, "("+tc.refusal+")")
				select {
				case p := <-r.policy:
					t.Fatalf("a change to the unset policy reached the gate: %+v", p)
				case <-time.After(100 * time.Millisecond):
				}
				return
			}
			select {
			case p := <-r.policy:
				if p.Policy != messages.PolicyNone {
					t.Fatalf("%+v", p)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("an allowed change never arrived; notices %+v", r.notices)
			}
		})
	}
}
