package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/deadline"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/tools"
)

// memProvider is an in-memory provider.Provider (for the benchmark only):
// the first request of a run gets n tool calls, a request that already
// holds tool results gets the answer.
type memProvider struct {
	calls []messages.ToolCall
}

func (p *memProvider) Chat(_ context.Context, req provider.Request, _ func(provider.Delta)) (provider.Response, error) {
	for _, m := range req.Messages {
		if m.Role == messages.RoleTool {
			return say("done"), nil
		}
	}
	return ask(p.calls...), nil
}

var _ provider.Provider = (*memProvider)(nil)

// BenchmarkToolCallOverhead is the runtime's own cost per tool call: one
// op is a run of two model turns (instant, in memory) with 100 trivial
// tool calls between them, wired as app wires a plain run: the root
// actor, the real gate, events on an embedded bus nobody listens to, the
// run's deadline, the 10-at-once dispatch and result formatting. ns/call
// is the op's wall time divided by 100; cpu-ns/call the process's CPU
// time (user+sys, GC included) per call, which the machine's load
// disturbs less.
//
// read-only calls never reach the gate (nothing is decided for them);
// gated calls are a propose/execute pair the policy approves: the propose
// half, the gate's round trip, then the twin.
//
// Each handler checks the working directory it was given and returns its
// own arguments; the run must end with every call's own result in its
// transcript (and, for the pair, every twin run once), so a shortcut that
// skips a call or mixes results up fails the benchmark.
func BenchmarkToolCallOverhead(b *testing.B) {
	b.Run("read-only", func(b *testing.B) { benchCalls(b, false) })
	b.Run("gated", func(b *testing.B) { benchCalls(b, true) })
}

func benchCalls(b *testing.B, gated bool) {
	const n = 100
	dir := b.TempDir()
	var executed atomic.Int64
	// The handler's own cost is kept near nothing: the arguments come
	// back as the result, unparsed.
	echo := func(_ context.Context, env *tools.Env, args json.RawMessage) tools.Result {
		if env.WorkDir != dir {
			return tools.Fail("wrong working directory " + env.WorkDir)
		}
		return tools.OK(args)
	}
	name := "noop"
	ts := []tools.Tool{tool(name, echo)}
	policy := messages.PolicyReadOnly
	if gated {
		name = "poke"
		ts = tools.Pair(tools.Tool{Name: name, Description: name, Schema: json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"}},"required":["i"]}`),
			Level: messages.LevelLowRisk, Handler: func(_ context.Context, _ *tools.Env, args json.RawMessage) tools.Result {
				return tools.Result{Approval: &messages.ApprovalRequest{Message: "poke " + string(args), ExecuteToolName: tools.TwinName(name), ExecuteArgs: args}}
			}}, func(ctx context.Context, env *tools.Env, args json.RawMessage) tools.Result {
			executed.Add(1)
			return echo(ctx, env, args)
		}, 0)
		policy = messages.PolicyLowRisk
	}
	reg := mustRegistry(b, ts...)
	p := &memProvider{}
	for i := range n {
		p.calls = append(p.calls, messages.ToolCall{ID: fmt.Sprintf("call_%03d", i), Name: name, Arguments: fmt.Sprintf(`{"i":%d}`, i)})
	}
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		b.Fatal(err)
	}
	place := messages.Place{RunID: "bench", AgentID: "a1", AgentName: "bench"}
	// A plain run's bus: embedded, started only when someone subscribes,
	// which nobody does here.
	bs := bus.New(bus.Options{})
	defer func() { _ = bs.Close(context.Background()) }()
	em := events.NewEmitter(bs, place.RunID)
	out := make(chan actors.RunOutcome, 1)
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		dl := deadline.New(0)
		gate := gateactor.New(gateactor.Config{RunID: place.RunID, Policy: policy, Events: em, Deadline: dl, Ctx: context.Background()})
		root := e.Spawn(actors.NewRun(actors.RunConfig{
			Place: place,
			Gate:  gate,
			Agent: func(gate, root *actor.PID) actor.Producer {
				return actors.New(actors.Config{Place: place, Model: "m", Call: p.Chat, Registry: reg, Gate: gate, Root: root,
					Env: &tools.Env{WorkDir: dir}, Events: em, Deadline: dl, MaxIterations: 5, Ctx: context.Background()})
			},
			Request:  messages.RunRequested{Place: place, Prompt: "go"},
			Events:   em,
			Bus:      bs,
			Finished: func(o actors.RunOutcome) { out <- o },
		}), "run", actor.WithID(fmt.Sprint(i)), actor.WithMiddleware(supervisor.Recover(place, nil)))
		var o actors.RunOutcome
		select {
		case o = <-out:
		case <-time.After(20 * time.Second):
			b.Fatal("the run did not end within 20 s")
		}
		b.StopTimer()
		c := cpuTime()
		checkRun(b, o.RunFinished, p.calls)
		cpu0 += cpuTime() - c // not the runtime's
		b.StartTimer()
		<-e.Poison(root).Done()
	}
	b.StopTimer()
	if gated && executed.Load() != int64(n*i) {
		b.Fatalf("%d twins ran, want %d", executed.Load(), n*i)
	}
	calls := float64(b.N) * n
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/calls, "ns/call")
	if cpu := cpuTime(); cpu > 0 {
		b.ReportMetric(float64((cpu-cpu0).Nanoseconds())/calls, "cpu-ns/call")
	}
}

// checkRun fails unless the run ended well with each call's own result.
func checkRun(b *testing.B, f messages.RunFinished, calls []messages.ToolCall) {
	b.Helper()
	if !f.OK || len(f.ToolCalls) != len(calls) {
		b.Fatalf("run: ok=%v calls=%d err=%s", f.OK, len(f.ToolCalls), f.Error)
	}
	got := map[string]string{}
	for _, m := range f.Transcript {
		if m.Role == messages.RoleTool {
			got[m.ToolCallID] = m.Content
		}
	}
	for i, c := range calls {
		if r := got[c.ID]; !strings.Contains(r, fmt.Sprintf(`{"i":%d}`, i)) {
			b.Fatalf("result of %s: %q", c.ID, r)
		}
	}
	if len(got) != len(calls) {
		b.Fatalf("%d results for %d calls", len(got), len(calls))
	}
}
