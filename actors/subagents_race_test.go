package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestCancelRacingChildrenLeavesNothing: a run whose agent fans out to
// ten children that each fan out again is cancelled at many moments of
// its life (before the first spawn, mid-spawn, while the grandchildren
// run); every time the run ends and no goroutine of it is left.
func TestCancelRacingChildrenLeavesNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	spawns := func(task string, n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = saSpawn(fmt.Sprintf("%s %d", task, i))
		}
		return out
	}
	script := saScript(t, map[string]any{"conversations": []saConv{
		{"match": "leaf", "turns": []saTurn{{"text": "leaf done", "delayMs": 30}}},
		{"match": "branch", "turns": []saTurn{{"toolCalls": spawns("leaf", 3), "delayMs": 5}, {"text": "branch done"}}},
		{"turns": []saTurn{{"toolCalls": spawns("branch", 10)}, {"text": "all done"}}},
	}})
	for _, after := range []time.Duration{0, time.Millisecond, 3 * time.Millisecond, 8 * time.Millisecond, 15 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond} {
		r := saNewRig(t, saOptions{script: script, maxDepth: 3})
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(after, cancel)
		f := r.run(t, ctx, "go")
		timer.Stop()
		cancel()
		if f.OK && after < 30*time.Millisecond {
			t.Fatalf("cancelled after %s, the run reported success", after)
		}
	}
}
