package workerpool

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/jazz-run/jazz/ledger"
	"github.com/jazz-run/jazz/messages"
)

// hostileCount is a token count a worker might send: plausible, zero,
// negative, past what any response reports, or the largest int.
func hostileCount(rng *rand.Rand) int {
	switch rng.IntN(8) {
	case 0:
		return -1 - rng.IntN(1000)
	case 1:
		return ledger.MaxCallTokens + 1 + rng.IntN(1000)
	case 2:
		return math.MaxInt
	case 3:
		return math.MinInt
	case 4:
		return 0
	default:
		return rng.IntN(100_000)
	}
}

func hostileUsage(rng *rand.Rand) messages.Usage {
	return messages.Usage{PromptTokens: hostileCount(rng), CompletionTokens: hostileCount(rng), TotalTokens: hostileCount(rng),
		ReasoningTokens: hostileCount(rng), CacheReadTokens: hostileCount(rng), CacheWriteTokens: hostileCount(rng)}
}

func fieldMax(a, b messages.Usage) messages.Usage {
	return messages.Usage{PromptTokens: max(a.PromptTokens, b.PromptTokens), CompletionTokens: max(a.CompletionTokens, b.CompletionTokens),
		TotalTokens: max(a.TotalTokens, b.TotalTokens), ReasoningTokens: max(a.ReasoningTokens, b.ReasoningTokens),
		CacheReadTokens: max(a.CacheReadTokens, b.CacheReadTokens), CacheWriteTokens: max(a.CacheWriteTokens, b.CacheWriteTokens)}
}

func notBelow(a, b messages.Usage) bool { return fieldMax(a, b) == a }

// TestHostileSpendNeverLowersOrPoisonsTheLedger: whatever counts a
// worker's heartbeats and result carry, in whatever order, over one or
// two attempts, the run's ledger books exactly the most the attempts
// validly reported (an oracle kept here, independently of spend), its
// totals never go down from one message to the next, its priced cost is
// finite and never negative, and the cost is known only when every
// report of every attempt was valid, rising and said usage was known,
// and no attempt was lost.
func TestHostileSpendNeverLowersOrPoisonsTheLedger(t *testing.T) {
	price := func(u messages.Usage) (float64, bool) {
		return float64(u.PromptTokens)*1e-6 + float64(u.CompletionTokens)*3e-6 + float64(u.CacheReadTokens)*1e-7, true
	}
	for seed := uint64(0); seed < 400; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		r := newRig(t)
		r.tk.cfg.Ledger = ledger.New(r.tk.cfg.Place, price)
		var want messages.Usage // Σ over attempts of the highest valid report
		known := true
		var last ledger.Totals
		check := func(step string) {
			got := r.tk.cfg.Ledger.Totals()
			if !notBelow(got.Usage, last.Usage) {
				t.Fatalf("seed %d, %s: the ledger went down: %+v after %+v", seed, step, got.Usage, last.Usage)
			}
			if math.IsNaN(got.CostUSD) || math.IsInf(got.CostUSD, 0) || got.CostUSD < 0 || got.CostUSD < last.CostUSD {
				t.Fatalf("seed %d, %s: cost %v after %v", seed, step, got.CostUSD, last.CostUSD)
			}
			last = got
		}
		attempts := 1 + rng.IntN(2)
		for a := 1; a <= attempts; a++ {
			if a > 1 {
				r.handle(messages.WorkKindClaim, messages.WorkClaimed{TaskID: "t1", Attempt: a})
				known = false // the lost attempt's cost is a lower bound
				check("a retry")
			}
			var best messages.Usage
			reports := rng.IntN(6)
			if a == attempts {
				reports++ // the last report is the result
			}
			for n := range reports {
				u, unknown := hostileUsage(rng), rng.IntN(5) == 0
				if rng.IntN(3) == 0 {
					u = best // the same again, sometimes one count lower
					if rng.IntN(2) == 0 && u.PromptTokens > 0 {
						u.PromptTokens--
					}
				}
				if ledger.Validate(u) != nil || !notBelow(u, best) || unknown {
					known = false
				}
				if ledger.Validate(u) == nil {
					best = fieldMax(best, u)
				}
				if a == attempts && n == reports-1 {
					_, end := r.handle(messages.WorkKindResult, messages.WorkResult{TaskID: "t1", Attempt: a, Usage: u,
						UsageUnknown: unknown, Finished: messages.RunFinished{OK: true}})
					if !end {
						t.Fatalf("seed %d: the result did not end the task", seed)
					}
					check("the result")
					break
				}
				r.handle(messages.WorkKindBeat, messages.WorkBeat{TaskID: "t1", Attempt: a, Usage: u, UsageUnknown: unknown})
				check("a heartbeat")
			}
			want = ledger.Add(want, best)
		}
		got := r.tk.cfg.Ledger.Totals()
		if got.Usage != want {
			t.Fatalf("seed %d: booked %+v, the attempts validly reported %+v", seed, got.Usage, want)
		}
		if got.CostKnown != known {
			t.Fatalf("seed %d: cost known %v, want %v (usage %+v)", seed, got.CostKnown, known, got.Usage)
		}
	}
}

// TestResultSaysNothingOfCostOrDeciders: the child's cost, whether it is
// known, its iterations and who decided its calls are the runner's to
// say. Whatever the result claims (a negative, vast or tiny cost called
// known, iterations past the child's budget or below zero, a person or
// an approver deciding calls the root gate never saw), the outcome's
// cost is the ledger's own pricing of what it booked, finite and never
// negative, known only when the ledger knows it; its iterations are
// within the budget; and a call's decider is the root gate's record.
func TestResultSaysNothingOfCostOrDeciders(t *testing.T) {
	price := func(u messages.Usage) (float64, bool) { return float64(u.PromptTokens) * 1e-6, true }
	claims := []float64{-1, -math.MaxFloat64, math.MaxFloat64, 1e-300, 0, 123.45}
	deciders := []string{messages.DecidedByHuman, messages.DecidedByRemote + ":alice", messages.DecidedByPolicy, "", "anything"}
	for seed := uint64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		r := newRig(t)
		r.tk.cfg.Ledger = ledger.New(r.tk.cfg.Place, price)
		r.tk.cfg.MaxIterations = 30
		// The root gate decided call g1 of the child (declined by policy).
		r.tk.decisions[[2]int{1, 1}] = messages.WorkDecision{TaskID: "t1", Attempt: 1, Seq: 1, Decision: messages.ApprovalDecided{
			Place: r.tk.cfg.Place, ToolCallID: "g1", DecidedBy: messages.DecidedByPolicy}}
		u := hostileUsage(rng)
		unknown := rng.IntN(3) == 0
		var calls []messages.AgentCall
		for i := range 1 + rng.IntN(4) {
			id := fmt.Sprintf("c%d", i)
			if i == 0 {
				id = "g1"
			}
			calls = append(calls, messages.AgentCall{ToolCall: messages.ToolCall{ID: id, Name: "write_file"},
				AgentID: r.tk.cfg.Place.AgentID, Depth: 1, DecidedBy: deciders[rng.IntN(len(deciders))]})
		}
		res := messages.WorkResult{TaskID: "t1", Attempt: 1, Usage: u, UsageUnknown: unknown, Calls: calls, Declined: calls[:1],
			Finished: messages.RunFinished{OK: true, CostUSD: claims[rng.IntN(len(claims))], CostKnown: true,
				Iterations: []int{-5, 0, 7, 30, 31, math.MaxInt}[rng.IntN(6)]}}
		o, end := r.handle(messages.WorkKindResult, res)
		if !end {
			t.Fatalf("seed %d: the result did not end the task", seed)
		}
		tot := r.tk.cfg.Ledger.Totals()
		f := o.Finished
		if f.CostUSD != tot.CostUSD || f.CostKnown != tot.CostKnown || math.IsNaN(f.CostUSD) || math.IsInf(f.CostUSD, 0) || f.CostUSD < 0 {
			t.Fatalf("seed %d: outcome cost %v known %v, the ledger's %v known %v", seed, f.CostUSD, f.CostKnown, tot.CostUSD, tot.CostKnown)
		}
		if valid := ledger.Validate(u) == nil && !unknown; f.CostKnown != valid {
			t.Fatalf("seed %d: cost known %v for usage %+v (unknown %v)", seed, f.CostKnown, u, unknown)
		}
		if f.Iterations < 0 || f.Iterations > 30 {
			t.Fatalf("seed %d: %d iterations of a 30-iteration child", seed, f.Iterations)
		}
		for _, list := range [][]messages.AgentCall{f.ToolCalls, f.Declined, tot.ToolCalls, tot.Declined} {
			for _, c := range list {
				want := ""
				if c.ID == "g1" {
					want = messages.DecidedByPolicy
				}
				if c.DecidedBy != want {
					t.Fatalf("seed %d: call %s decided by %q, the gate's record says %q", seed, c.ID, c.DecidedBy, want)
				}
			}
		}
	}
}
