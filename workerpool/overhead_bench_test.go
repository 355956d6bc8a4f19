package workerpool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/workerpool"
)

// overheadRig runs children one at a time, in the parent's process
// (local) or on a worker (remote, in this process, on a 3-node cluster),
// with the same model caller and a 20 ms model. call, when set, stands
// around every model call of both.
type overheadRig struct {
	b             *testing.B
	local, remote *actors.Subagents
}

func newOverheadRig(b *testing.B, call func(actors.ModelCaller) actors.ModelCaller, got func()) *overheadRig {
	f := newFixture(b, 3, func(int, chatserver.Request) chatserver.Turn {
		if got != nil {
			got()
		}
		return chatserver.Turn{Text: "done", Delay: 20 * time.Millisecond}
	})
	if call != nil {
		f.wrap = func(rt workerpool.Runtime) workerpool.Runtime { return wrappedRuntime{rt, call} }
	}
	f.worker("w1", 4, 10*time.Second)
	// The cluster moves the new pool consumer's leader to the task
	// stream leader's node within its 1 s watch: measured is the pool
	// after that, not the one stall of the move.
	time.Sleep(1500 * time.Millisecond)
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
	b.Cleanup(nc.CloseNow)
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
		if call != nil {
			cfg.Call = call(cfg.Call)
		}
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
	r := &overheadRig{b: b, local: spawner(false), remote: spawner(true)}
	// Warm both paths: connections, the pool consumer, the provider.
	for i := 0; i < 3; i++ {
		r.child(r.local)
		r.child(r.remote)
	}
	return r
}

// child runs one child to its end and says how long it took.
func (r *overheadRig) child(s *actors.Subagents) time.Duration {
	start := time.Now()
	if o := s.Spawn(context.Background(), "", json.RawMessage(`{"task": "answer"}`)); !o.Success {
		r.b.Fatalf("child: %+v", o)
	}
	return time.Since(start)
}

// wrappedRuntime puts call around the model caller of every agent a
// worker builds.
type wrappedRuntime struct {
	workerpool.Runtime
	call func(actors.ModelCaller) actors.ModelCaller
}

func (w wrappedRuntime) Agent(ctx context.Context, t messages.WorkTask) (actors.Config, error) {
	cfg, err := w.Runtime.Agent(ctx, t)
	if err == nil {
		cfg.Call = w.call(cfg.Call)
	}
	return cfg, err
}

// at is the q-quantile of d (sorted in place), in ms.
func at(d []time.Duration, q float64) float64 {
	slices.Sort(d)
	return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000
}

// BenchmarkRemoteChildOverhead is what going remote costs one child, in
// one run: children alternately in the parent's process and on a worker;
// it reports both p50s, their difference (goal: at most 2 ms) and the
// difference of the p99s. bench/scale measures the same across processes
// and under load.
//
//	go test -run '^$' -bench RemoteChildOverhead -benchtime 40x ./workerpool/
func BenchmarkRemoteChildOverhead(b *testing.B) {
	r := newOverheadRig(b, nil, nil)
	var l, rm []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l = append(l, r.child(r.local))
		rm = append(rm, r.child(r.remote))
	}
	b.StopTimer()
	lp, rp := at(l, 0.5), at(rm, 0.5)
	b.ReportMetric(lp, "local-p50-ms")
	b.ReportMetric(rp, "remote-p50-ms")
	b.ReportMetric(rp-lp, "overhead-p50-ms")
	b.ReportMetric(at(rm, 0.99)-at(l, 0.99), "overhead-p99-ms")
}

// BenchmarkRemoteChildTimeline says where a remote child's time goes:
// for each step of its trip (the runner queues it, a worker is handed
// it, claims it, builds and starts its agent, the agent asks the model
// and hears back, the worker sends the result, the runner hears it), the
// p50 time since the child was spawned, beside a local child's model
// call. It logs the table; the metrics are the model call's start and
// the child's end, local and remote.
//
//	go test -run '^$' -bench RemoteChildTimeline -benchtime 40x -v ./workerpool/
func BenchmarkRemoteChildTimeline(b *testing.B) {
	var (
		mu sync.Mutex
		// cur is the running child's steps; task its task (set by its
		// first step), so a late step of the child before is not its.
		cur  map[string]time.Time
		task string
	)
	note := func(id, stage string) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if cur == nil {
			return
		}
		if stage == "publish" {
			task = id
		}
		if id != "" && id != task {
			return
		}
		if _, seen := cur[stage]; !seen {
			cur[stage] = now
		}
	}
	workerpool.SetMark(note)
	b.Cleanup(func() { workerpool.SetMark(nil) })
	r := newOverheadRig(b, func(next actors.ModelCaller) actors.ModelCaller {
		return func(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
			note("", "model-ask")
			resp, err := next(ctx, req, onDelta)
			note("", "model-answer")
			return resp, err
		}
	}, func() { note("", "model-got") })
	stages := map[string][]time.Duration{}
	one := func(side string, s *actors.Subagents) {
		mu.Lock()
		cur, task = map[string]time.Time{}, "none"
		mu.Unlock()
		start := time.Now()
		r.child(s)
		end := time.Now()
		mu.Lock()
		got := cur
		cur = nil
		mu.Unlock()
		got["end"] = end
		for k, t := range got {
			stages[side+" "+k] = append(stages[side+" "+k], t.Sub(start))
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		one("local", r.local)
		one("remote", r.remote)
	}
	b.StopTimer()
	order := []string{"publish", "delivered", "claimed", "built", "start", "model-ask", "model-got", "model-answer", "ended", "result", "heard", "end", "queued", "stored"}
	var t strings.Builder
	fmt.Fprintf(&t, "%-14s %9s %9s %9s\n", "step", "local", "remote", "remote-local")
	for _, st := range order {
		l, lok := stages["local "+st]
		rm, rok := stages["remote "+st]
		if !rok {
			continue
		}
		lp, rp := "", fmt.Sprintf("%.2f", at(rm, 0.5))
		diff := ""
		if lok {
			lv := at(l, 0.5)
			lp, diff = fmt.Sprintf("%.2f", lv), fmt.Sprintf("%+.2f", at(rm, 0.5)-lv)
		}
		fmt.Fprintf(&t, "%-14s %9s %9s %9s\n", st, lp, rp, diff)
	}
	b.Logf("p50 ms since spawn, %d children each:\n%s", b.N, t.String())
	b.ReportMetric(at(stages["local model-ask"], 0.5), "local-ask-ms")
	b.ReportMetric(at(stages["remote model-ask"], 0.5), "remote-ask-ms")
	b.ReportMetric(at(stages["local end"], 0.5), "local-end-ms")
	b.ReportMetric(at(stages["remote end"], 0.5), "remote-end-ms")
}
