package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/store/agents"
)

// A run started at read-only, capped there, with a policy approver who
// may approve read-only calls only: that approver signs a change to the
// unset policy, then denies what it is asked. Unset is the gate's
// default, which with a person to answer (the approvers) approves
// low-risk calls unasked, so taking the change would let the next
// low-risk call through with nobody asked: it is refused, and that call
// is asked (and denied) like the first.
func TestSignedUnsetPolicyWidensNothing(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, ap, store, updates, kp := approverBus(t, ctx, home, "lola", "read-only", true)
	go func() {
		first := true
		for r := range updates {
			if r.Status != approvals.StatusPending {
				continue
			}
			q := r.Request
			if first {
				first = false
				env, _ := approvals.SignPolicy(kp, approvals.PolicyChange{RunID: q.RunID, Policy: messages.PolicyNone}, time.Now(), 0)
				data, _ := json.Marshal(env)
				_ = ap.Conn().Publish(messages.PolicySubject(q.RunID), data)
				_ = ap.Conn().Flush()
			}
			d, _ := approvals.DecisionFor(q, false, "no")
			env, _ := approvals.SignDecision(kp, d, time.Now(), 0)
			_ = env.Open(&d)
			_, _ = store.Decide(ctx, q.RunID, q.RequestID, env, d, time.Now())
		}
	}()

	todo := `{"todos":[{"content":"x","status":"pending","priority":"low"}]}`
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[
		{"toolCalls":[{"name":"manage_todos","arguments":`+todo+`}]},
		{"toolCalls":[{"name":"manage_todos","arguments":`+todo+`}]},
		{"text":"done"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := agents.Agent{ID: "a1", Name: "remote", Model: "replay/" + script,
		Config: agents.Config{LLMProvider: "replay", LLMModel: script, Tools: []string{"manage_todos"}}}
	reg, _ := approvals.LoadRegistry(home, nil)
	opts := busclient.Options{Nkey: busserver.RoleSeedPath(home, busserver.RoleRunner)}.Client()
	out, err := app.RunAndWait(context.Background(), app.RunOptions{
		Agent: agent, Prompt: "plan", Config: &config.Config{Home: home, MaxIterations: 10},
		NATSURL: srv.ClientURL(), NATS: opts, Reachable: true, Policy: messages.PolicyReadOnly,
		Remote: &app.RemoteApprovals{Timeout: 20 * time.Second, Ceiling: messages.PolicyReadOnly, Registry: reg},
		Stderr: os.Stderr, Cwd: dir, Timeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatalf("run: %v %+v", err, out)
	}
	for _, c := range out.ToolCalls {
		if c.DecidedBy == messages.DecidedByPolicy {
			t.Errorf("call %s was approved by the policy a read-only approver set, above the run's read-only ceiling", c.ID)
		}
	}
	if len(out.Declined) != 2 {
		t.Errorf("%d of 2 low-risk calls were asked and denied: %+v", len(out.Declined), out.ToolCalls)
	}
}
