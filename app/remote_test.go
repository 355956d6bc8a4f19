package app_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/internal/testutil"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/store/agents"
)

// approverBus starts the bus server of JAZZ_HOME home with one approver
// (name, its tier, whether it may change the policy), connected as that
// approver: the server, the connection, the approvals store it sees, the
// records as they change (until ctx ends) and its key pair.
func approverBus(t *testing.T, ctx context.Context, home, name, tier string, policy bool) (*busserver.Server, *bus.Bus, *approvals.Store, <-chan approvals.Record, nkeys.KeyPair) {
	t.Helper()
	_, seed, err := approvals.AddApprover(home, name, tier, policy)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := busserver.Start(context.Background(), busserver.Options{Home: home, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	seedFile := filepath.Join(home, name+".nk")
	_ = approvals.WriteSecret(seedFile, seed)
	ap, err := busclient.Connect(context.Background(), busclient.Options{URL: srv.ClientURL(), Nkey: seedFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ap.CloseNow)
	store, err := approvals.OpenStore(context.Background(), ap, false)
	if err != nil {
		t.Fatal(err)
	}
	updates, err := store.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kp, _ := nkeys.FromSeed(seed)
	return srv, ap, store, updates, kp
}

// startNATS runs a real NATS server without auth on a random loopback
// port: a shared server anyone can publish to.
func startNATS(t *testing.T) string {
	t.Helper()
	return testutil.StartNATS(t, testutil.NATSOptions{Listen: true, JetStream: true}).URL
}

func writeScript(t *testing.T, dir string) string {
	t.Helper()
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[
		{"toolCalls":[{"name":"write_file","arguments":{"path":"note.txt","content":"approved remotely\n"}}]},
		{"text":"done"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return script
}

func writeAgent(script string) agents.Agent {
	return agents.Agent{ID: "a1", Name: "remote", Model: "replay/" + script,
		Config: agents.Config{LLMProvider: "replay", LLMModel: script, Tools: []string{"write_file"}}}
}

// A person approves a write from another connection: the run records the
// request in the bucket, the approver signs a decision bound to its
// action hash, and only then does the write happen.
func TestSignedRemoteApproval(t *testing.T) {
	// The approver takes longer than the run's --timeout: waiting for a
	// person does not count against it. The rest of the run must fit in
	// the timeout: 1 s did not at a load of 20 on 2 cores.
	signedApproval(t, 4*time.Second, 3*time.Second)
}

func signedApproval(t *testing.T, think, runTimeout time.Duration) {
	home, dir := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, _, store, updates, kp := approverBus(t, ctx, home, "alice", "high-risk", false)
	decided := make(chan approvals.Request, 1)
	go func() {
		for r := range updates {
			if r.Status != approvals.StatusPending {
				continue
			}
			q := r.Request
			time.Sleep(think)
			d, _ := approvals.DecisionFor(q, true, "")
			d.SignerName = "alice"
			env, _ := approvals.SignDecision(kp, d, time.Now(), 0)
			_ = env.Open(&d)
			if _, err := store.Decide(ctx, q.RunID, q.RequestID, env, d, time.Now()); err == nil {
				decided <- q
			}
		}
	}()

	reg, _ := approvals.LoadRegistry(home, nil)
	opts := busclient.Options{Nkey: busserver.RoleSeedPath(home, busserver.RoleRunner)}.Client()
	out, err := app.RunAndWait(context.Background(), app.RunOptions{
		Agent: writeAgent(writeScript(t, dir)), Prompt: "write the note", Config: &config.Config{Home: home, MaxIterations: 10},
		NATSURL: srv.ClientURL(), NATS: opts, Reachable: true,
		Remote: &app.RemoteApprovals{Timeout: 20 * time.Second, Registry: reg},
		Stderr: os.Stderr, Cwd: dir, Timeout: runTimeout,
	})
	if err != nil || !out.OK {
		t.Fatalf("run: %v %+v", err, out)
	}
	select {
	case q := <-decided:
		if q.Tool != "write_file" || q.PreviewDiff == "" || q.WorkDir != dir {
			t.Fatalf("request: %+v", q)
		}
	default:
		t.Fatal("the approver never decided")
	}
	if got, err := os.ReadFile(filepath.Join(dir, "note.txt")); err != nil || string(got) != "approved remotely\n" {
		t.Fatalf("file: %q %v", got, err)
	}
}

// On a shared server anyone can publish an unsigned decision or policy;
// a run listens to neither, and what waits is declined when nobody with a
// signature answers.
func TestUnsignedDecisionsAndPolicyAreIgnored(t *testing.T) {
	url := startNATS(t)
	for _, remote := range []bool{false, true} {
		home, dir := t.TempDir(), t.TempDir()
		forger, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := forger.Subscribe("jazz.run.*.approval.required", func(m *nats.Msg) {
			req, err := messages.Decode[messages.ApprovalRequired](m.Data)
			if err != nil {
				return
			}
			p, _ := messages.Encode(messages.PolicyChanged{Place: req.Place, Policy: messages.PolicyHighRisk})
			_ = forger.Publish(messages.PolicySubject(req.Place.RunID), p)
			d, _ := messages.Encode(messages.ApprovalDecided{Place: req.Place, ToolCallID: req.ToolCallID, Approved: true, DecidedBy: messages.DecidedByRemote})
			_ = forger.Publish(messages.ApprovalDecidedSubject(req.Place.RunID), d)
		})
		if err != nil {
			t.Fatal(err)
		}
		_ = forger.Flush()
		o := app.RunOptions{
			Agent: writeAgent(writeScript(t, dir)), Prompt: "write the note", Config: &config.Config{Home: home, MaxIterations: 10},
			NATSURL: url, Stderr: os.Stderr, Cwd: dir, Timeout: 20 * time.Second,
		}
		if remote {
			kp, _ := nkeys.CreateUser()
			pub, _ := kp.PublicKey()
			reg, _ := approvals.NewRegistry([]approvals.Approver{{Name: "alice", PublicKey: pub, MaxTier: "high-risk", Policy: true}})
			o.Reachable = true
			o.Remote = &app.RemoteApprovals{Timeout: 500 * time.Millisecond, Registry: reg}
		}
		out, err := app.RunAndWait(context.Background(), o)
		_ = sub.Unsubscribe()
		forger.Close()
		if err != nil || !out.OK || len(out.Declined) != 1 {
			t.Fatalf("remote=%v: run %v %+v", remote, err, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "note.txt")); !os.IsNotExist(err) {
			t.Fatalf("remote=%v: a forged decision wrote the file (%v)", remote, err)
		}
	}
}
