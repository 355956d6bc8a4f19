package actors

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/provider/replay"
)

// BenchmarkSubagents1000Concurrent is issue 16's scale check in one
// process: a parent spawns 1,000 subagents at once (cap raised to 1,000)
// on an instant model, and every child's model call is held until all
// 1,000 are inside theirs, so they provably run at the same time. One
// op is the whole run, spawn to teardown; goal: at most 2 s and 300 MB
// (peak-RSS-MiB is the process's high-water mark).
func BenchmarkSubagents1000Concurrent(b *testing.B) {
	const n = 1000
	instant, err := replay.Parse("bench", []byte(saFanOutScript(b, n)))
	if err != nil {
		b.Fatal(err)
	}
	var (
		mu      sync.Mutex
		release chan struct{}
		waiting atomic.Int32
	)
	caller := func(ctx context.Context, req provider.Request, d func(provider.Delta)) (provider.Response, error) {
		if strings.Contains(req.Messages[1].Content, "[SUB-AGENT TASK]") {
			mu.Lock()
			rel := release
			mu.Unlock()
			if waiting.Add(1) == n {
				close(rel)
			}
			select {
			case <-rel:
			case <-ctx.Done():
			}
		}
		return instant.Chat(ctx, req, d)
	}
	r := saNewRig(b, saOptions{caller: caller, maxDepth: 3, calls: n})
	var worst time.Duration
	b.ResetTimer()
	for range b.N {
		mu.Lock()
		release = make(chan struct{})
		mu.Unlock()
		waiting.Store(0)
		// Should fewer than n ever be in flight at once, the run fails
		// at this bound instead of hanging.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		start := time.Now()
		f := r.run(b, ctx, "fan out")
		worst = max(worst, time.Since(start))
		cancel()
		if !f.OK || f.Usage.TotalTokens != n*11 {
			b.Fatalf("run = ok %v tokens %d error %q (%d children were in flight at once)", f.OK, f.Usage.TotalTokens, f.Error, waiting.Load())
		}
	}
	b.StopTimer()
	b.ReportMetric(worst.Seconds(), "worst-wall-s")
	b.ReportMetric(saPeakRSS()/(1<<20), "peak-RSS-MiB")
}
