package workerpool_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/workerpool"
)

// BenchmarkRemoteChildOverhead is what going remote costs one child, in
// one run: children one at a time, alternately in the parent's process
// and on a worker (in this process, on a 3-node cluster), with the same
// model caller and a 20 ms model; it reports both p50s and their
// difference (goal: at most 2 ms). bench/scale measures the same across
// processes and under load.
//
//	go test -run '^$' -bench RemoteChildOverhead -benchtime 40x ./workerpool/
func BenchmarkRemoteChildOverhead(b *testing.B) {
	f := newFixture(b, 3, func(int, chatserver.Request) chatserver.Turn {
		return chatserver.Turn{Text: "done", Delay: 20 * time.Millisecond}
	})
	f.worker("w1", 4, 10*time.Second)
	ctx := context.Background()
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		b.Fatal(err)
	}
	nc, err := busclient.Connect(ctx, busclient.Options{URL: f.cluster.URL(),
		Nkey: busserver.RoleSeedPath(f.home, busserver.RoleRunner), Name: "runner"})
	if err != nil {
		b.Fatal(err)
	}
	defer nc.CloseNow()
	rt, err := app.NewWorkerRuntime(ctx, app.WorkerOptions{Config: f.config(`{"maxRetries": 0}`), Getenv: f.getenv, WorkDir: f.cwd})
	if err != nil {
		b.Fatal(err)
	}
	reg, err := tools.NewRegistry()
	if err != nil {
		b.Fatal(err)
	}
	spawner := func(remote bool) *actors.Subagents {
		run := workerpool.NewTaskID()
		place := messages.Place{RunID: run, AgentID: "top", AgentName: "parent"}
		cfg, err := rt.Agent(ctx, messages.WorkTask{Provider: "openai", Model: "gpt-4o-mini", Place: place, MaxIterations: 5})
		if err != nil {
			b.Fatal(err)
		}
		cfg.Registry, cfg.Env.JazzHome = reg, f.home
		s := actors.NewSubagents(engine, cfg, 1, 0)
		if remote {
			d, err := workerpool.NewDispatcher(ctx, workerpool.DispatcherOptions{Conn: nc, Pool: workerpool.DefaultPool, RunID: run})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(d.Close)
			s.Runner = d
		}
		return s
	}
	local, remote := spawner(false), spawner(true)
	child := func(s *actors.Subagents) time.Duration {
		start := time.Now()
		if r := s.Spawn(ctx, "", json.RawMessage(`{"task": "answer"}`)); !r.Success {
			b.Fatalf("child: %+v", r)
		}
		return time.Since(start)
	}
	// Warm both paths: connections, the pool consumer, the provider.
	for i := 0; i < 3; i++ {
		child(local)
		child(remote)
	}
	var l, r []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l = append(l, child(local))
		r = append(r, child(remote))
	}
	b.StopTimer()
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	lp, rp := p50(l), p50(r)
	b.ReportMetric(lp, "local-p50-ms")
	b.ReportMetric(rp, "remote-p50-ms")
	b.ReportMetric(rp-lp, "overhead-p50-ms")
}
