package ledger

import (
	"math"
	"sync"
	"testing"

	"github.com/jazz-run/jazz/messages"
)

// perToken prices 1 $ per token, so costs read as token counts.
func perToken(u messages.Usage) (float64, bool) {
	return float64(u.PromptTokens + u.CompletionTokens), true
}

func usage(p, c int) messages.Usage {
	return messages.Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
}

func TestServerFiguresAreNotTrusted(t *testing.T) {
	for _, tc := range []struct {
		name     string
		u        messages.Usage
		reported bool
	}{
		{"negative cancels nothing", usage(-6_000_000, 0), true},
		{"negative cache read", messages.Usage{PromptTokens: 5, CacheReadTokens: -1}, true},
		{"absurd", usage(MaxCallTokens+1, 0), true},
		{"near overflow", usage(math.MaxInt, math.MaxInt), true},
		{"missing", messages.Usage{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := New(messages.Place{AgentID: "top"}, perToken)
			if err := l.RecordUsage(usage(6, 4), true); err != nil {
				t.Fatal(err)
			}
			if err := l.RecordUsage(tc.u, tc.reported); err == nil {
				t.Fatalf("%+v (reported %v) was accepted", tc.u, tc.reported)
			}
			got := l.Totals()
			if got.CostKnown || got.CostUSD != 10 || got.Usage.PromptTokens != 6 {
				t.Fatalf("totals %+v: want the earlier 10 $ kept, cost unknown", got)
			}
		})
	}
}

func TestValidUsageIsPricedAndKnown(t *testing.T) {
	l := New(messages.Place{}, perToken)
	for i := 0; i < 3; i++ {
		if err := l.RecordUsage(usage(MaxCallTokens, MaxCallTokens), true); err != nil {
			t.Fatal(err)
		}
	}
	got := l.Totals()
	if !got.CostKnown || got.CostUSD != 6*MaxCallTokens || got.Usage.TotalTokens != 6*MaxCallTokens {
		t.Fatalf("totals %+v", got)
	}
	if New(messages.Place{}, nil).Totals().CostKnown {
		t.Fatal("an unpriced model's cost is known")
	}
}

func TestAddSaturates(t *testing.T) {
	big := messages.Usage{PromptTokens: math.MaxInt - 1, CompletionTokens: math.MaxInt}
	got := Add(big, usage(5, 5))
	if got.PromptTokens != math.MaxInt || got.CompletionTokens != math.MaxInt || got.TotalTokens != 10 {
		t.Fatalf("Add = %+v", got)
	}
}

// TestSubtreeTotals: a node's totals cover its children, in the order
// things happened, each call with its agent; a child's unknown cost makes
// the parent's unknown; siblings do not see each other.
func TestSubtreeTotals(t *testing.T) {
	root := New(messages.Place{AgentID: "top", AgentName: "Top"}, perToken)
	kid := root.Child(messages.Place{AgentID: "k1", AgentName: "Kid", Depth: 1})
	sib := root.Child(messages.Place{AgentID: "k2", Depth: 1})
	grand := kid.Child(messages.Place{AgentID: "g", Depth: 2})
	root.RecordCalls([]messages.ToolCall{{ID: "1", Name: "spawn_subagent"}})
	kid.RecordCalls([]messages.ToolCall{{ID: "1", Name: "write_file"}})
	grand.RecordCalls([]messages.ToolCall{{ID: "1", Name: "execute_command"}})
	grand.RecordDeclined(messages.ToolCall{ID: "1", Name: "execute_command"})
	_ = root.RecordUsage(usage(1, 0), true)
	_ = kid.RecordUsage(usage(2, 0), true)
	_ = grand.RecordUsage(usage(4, 0), true)
	_ = sib.RecordUsage(messages.Usage{}, false)

	k := kid.Totals()
	if !k.CostKnown || k.CostUSD != 6 || len(k.ToolCalls) != 2 || len(k.Declined) != 1 {
		t.Fatalf("kid %+v", k)
	}
	r := root.Totals()
	if r.CostKnown || r.CostUSD != 7 {
		t.Fatalf("root cost %v known %v, want 7 and unknown (a sibling reported no usage)", r.CostUSD, r.CostKnown)
	}
	want := []string{"top", "k1", "g"}
	for i, c := range r.ToolCalls {
		if c.AgentID != want[i] || c.Depth != i {
			t.Fatalf("calls %+v", r.ToolCalls)
		}
	}
	if d := r.Declined; len(d) != 1 || d[0].AgentID != "g" || d[0].Depth != 2 {
		t.Fatalf("declined %+v", d)
	}
	var none *Ledger
	if none.Child(messages.Place{}) != nil || none.RecordUsage(usage(1, 1), true) != nil || none.Totals().ToolCalls == nil {
		t.Fatal("a nil ledger is not inert")
	}
}

func TestConcurrentRecords(t *testing.T) {
	root := New(messages.Place{}, perToken)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := root.Child(messages.Place{Depth: 1})
			for j := 0; j < 100; j++ {
				_ = n.RecordUsage(usage(1, 0), true)
				n.RecordCalls([]messages.ToolCall{{ID: "x"}})
				_ = root.Totals()
			}
		}()
	}
	wg.Wait()
	if got := root.Totals(); got.CostUSD != 800 || len(got.ToolCalls) != 800 {
		t.Fatalf("totals %v, %d calls", got.CostUSD, len(got.ToolCalls))
	}
}

func TestRecordRemoteKeepsAgentsBelowAndRefusesBadUsage(t *testing.T) {
	root := New(messages.Place{AgentID: "top"}, func(u messages.Usage) (float64, bool) { return float64(u.TotalTokens), true })
	child := root.Child(messages.Place{AgentID: "c1", AgentName: "kid", Depth: 1})
	calls := []messages.AgentCall{
		{ToolCall: messages.ToolCall{ID: "1", Name: "ls"}, AgentID: "c1", Depth: 1},
		{ToolCall: messages.ToolCall{ID: "2", Name: "ls"}, AgentID: "c1-1-2", AgentName: "grandkid", Depth: 2},
		// Claims to be the top-level agent: the child answers for it.
		{ToolCall: messages.ToolCall{ID: "3", Name: "write_file"}, AgentID: "top", Depth: 0, DecidedBy: "policy"},
	}
	if err := child.RecordRemote(messages.Usage{TotalTokens: 7}, true, calls, calls[2:]); err != nil {
		t.Fatal(err)
	}
	tot := root.Totals()
	if tot.Usage.TotalTokens != 7 || !tot.CostKnown || tot.CostUSD != 7 {
		t.Fatalf("totals = %+v", tot)
	}
	if len(tot.ToolCalls) != 3 || tot.ToolCalls[1].AgentID != "c1-1-2" || tot.ToolCalls[2].AgentID != "c1" || tot.ToolCalls[2].Depth != 1 {
		t.Fatalf("calls = %+v", tot.ToolCalls)
	}
	if len(tot.Declined) != 1 || tot.Declined[0].AgentID != "c1" || tot.Declined[0].DecidedBy != "policy" {
		t.Fatalf("declined = %+v", tot.Declined)
	}
	if err := child.RecordRemote(messages.Usage{TotalTokens: -5}, true, nil, nil); err == nil {
		t.Fatal("negative usage accepted")
	}
	if tot := root.Totals(); tot.CostKnown || tot.Usage.TotalTokens != 7 {
		t.Fatalf("after refused usage: %+v", tot)
	}
}
