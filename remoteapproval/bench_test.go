package remoteapproval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/remoteapproval"
)

// TestApproverProcess is not a test: re-executed by the benchmark, it is
// the approver process. It approves every request for tool "decide_me"
// it sees, signing each with its own key, until killed.
func TestApproverProcess(t *testing.T) {
	url, seed := os.Getenv("JAZZ_BENCH_URL"), os.Getenv("JAZZ_BENCH_SEED")
	if url == "" {
		t.Skip("the benchmark's approver process")
	}
	nc, err := busclient.Connect(context.Background(), busclient.Options{URL: url, Nkey: seed})
	if err != nil {
		t.Fatal(err)
	}
	store, err := approvals.OpenStore(context.Background(), nc, false)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := approvals.LoadSigner(seed)
	if err != nil {
		t.Fatal(err)
	}
	updates, err := store.Watch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	for r := range updates {
		q := r.Request
		if r.Status != approvals.StatusPending || q.Tool != "decide_me" {
			continue
		}
		d, err := approvals.DecisionFor(q, true, "")
		if err != nil {
			continue
		}
		d.SignerName = "bench"
		env, _ := approvals.SignDecision(kp, d, time.Now(), 0)
		_ = env.Open(&d)
		_, _ = store.DecideRecord(context.Background(), r, env, d, time.Now())
	}
}

// BenchmarkApprovalRoundTrip: from the run's request to the run holding a
// verified decision signed by an approver in another process, over
// loopback TCP with nkey auth, once with nothing else pending and once
// with 10,000 other requests pending.
func BenchmarkApprovalRoundTrip(b *testing.B) {
	for _, idle := range []int{0, 10000} {
		b.Run(fmt.Sprintf("pending=%d", idle), func(b *testing.B) { roundTrip(b, idle) })
	}
}

func roundTrip(b *testing.B, idle int) {
	home := b.TempDir()
	_, seed, err := approvals.AddApprover(home, "bench", "high-risk", false)
	if err != nil {
		b.Fatal(err)
	}
	seedFile := approvals.ApproverSeedPath(home, "bench")
	_ = approvals.WriteSecret(seedFile, seed)
	srv, err := busserver.Start(context.Background(), busserver.Options{Home: home, Port: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	runConn, err := busclient.Connect(context.Background(), busclient.Options{URL: srv.ClientURL(), Nkey: busserver.RoleSeedPath(home, busserver.RoleRunner)})
	if err != nil {
		b.Fatal(err)
	}
	defer runConn.CloseNow()
	store, err := approvals.OpenStore(context.Background(), runConn, false)
	if err != nil {
		b.Fatal(err)
	}
	reg, _ := approvals.LoadRegistry(home, nil)
	got := make(chan messages.ApprovalDecided, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	remote, err := remoteapproval.Start(ctx, remoteapproval.Config{Bus: runConn, Store: store, RunID: "run-bench", Registry: reg,
		Timeout: time.Hour, Report: func(n remoteapproval.Notice) { b.Log(n.Message) }, Deliver: func(d messages.ApprovalDecided) {
			if d.ToolName == "decide_me" {
				got <- d
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		c, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		remote.Close(c)
	}()
	args := json.RawMessage(`{"path":"/w/a.txt","content":"x"}`)
	for i := 0; i < idle; i++ {
		remote.Ask(messages.ApprovalRequired{Place: messages.Place{RunID: "run-bench"}, ToolCallID: fmt.Sprintf("idle_%d", i),
			ToolName: "idle", RiskLevel: "high-risk", ExecuteToolName: "execute_idle", ExecuteArgs: args})
	}
	if idle > 0 {
		waitStored(b, store, idle)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestApproverProcess$", "-test.v=false")
	cmd.Env = append(os.Environ(), "JAZZ_BENCH_URL="+srv.ClientURL(), "JAZZ_BENCH_SEED="+seedFile)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	ready := make([]byte, 6)
	if _, err := out.Read(ready); err != nil {
		b.Fatal(err)
	}

	n := b.N
	if n < 1000 {
		n = 1000 // p99 needs the 1,000 approvals the goal names
	}
	lat := make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		start := time.Now()
		remote.Ask(messages.ApprovalRequired{Place: messages.Place{RunID: "run-bench"}, ToolCallID: fmt.Sprintf("call_%d", i),
			ToolName: "decide_me", RiskLevel: "high-risk", ExecuteToolName: "execute_decide_me", ExecuteArgs: args})
		select {
		case d := <-got:
			if !d.Approved {
				b.Fatalf("declined: %+v", d)
			}
		case <-time.After(30 * time.Second):
			b.Fatalf("no decision for approval %d", i)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(lat)), "approvals")
}

func waitStored(b *testing.B, store *approvals.Store, n int) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		recs, err := store.Snapshot(context.Background())
		if err == nil && len(recs) >= n {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatalf("the %d idle requests were never all stored", n)
}
