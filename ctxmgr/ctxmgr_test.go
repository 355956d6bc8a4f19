package ctxmgr

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/messages"
)

func sys() messages.ChatMessage {
	return messages.ChatMessage{Role: messages.RoleSystem, Content: "You are a test agent."}
}
func user(s string) messages.ChatMessage {
	return messages.ChatMessage{Role: messages.RoleUser, Content: s}
}
func calls(ids ...string) messages.ChatMessage {
	m := messages.ChatMessage{Role: messages.RoleAssistant}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, messages.ToolCall{ID: id, Name: "read_file", Arguments: `{"path":"` + id + `.txt"}`})
	}
	return m
}
func result(id string, n int) messages.ChatMessage {
	return messages.ChatMessage{Role: messages.RoleTool, ToolCallID: id, Name: "read_file", Content: strings.Repeat("x", n)}
}

// history is a system message, one prompt, then n read_file iterations
// with results of size bytes each.
func history(n, size int) []messages.ChatMessage {
	h := []messages.ChatMessage{sys(), user("read every file and report")}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		h = append(h, calls(id), result(id, size))
	}
	return h
}

func TestCounterCalibrates(t *testing.T) {
	for _, truth := range []float64{2.5, 3.3, 4.8} {
		c := NewCounter()
		rng := rand.New(rand.NewPCG(1, uint64(truth*10)))
		const overhead = 300
		for range 20 {
			h := history(1+rng.IntN(30), 100+rng.IntN(5000))
			m := c.Measure(h, 2000)
			prompt := m.Fixed + int(float64(m.Bytes)/truth) + overhead
			c.Calibrate(m, prompt)
		}
		if r := c.Ratio(); r < truth*0.95 || r > truth*1.05 {
			t.Errorf("truth %.1f: ratio %.2f", truth, r)
		}
		h := history(40, 3000)
		m := c.Measure(h, 2000)
		want := m.Fixed + int(float64(m.Bytes)/truth) + overhead
		if got := c.Request(h, 2000); got < want*95/100 || got > want*105/100 {
			t.Errorf("truth %.1f: estimate %d, real %d", truth, got, want)
		}
	}
}

func TestCounterRefusesNonsense(t *testing.T) {
	c := NewCounter()
	m := c.Measure(history(3, 1000), 0)
	for _, p := range []int{0, -5, m.Fixed} {
		c.Calibrate(m, p)
	}
	if c.Samples() != 0 || c.Ratio() != DefaultRatio {
		t.Fatalf("learned from nonsense: %d samples, ratio %v", c.Samples(), c.Ratio())
	}
	c.Calibrate(m, 1<<30) // absurdly many tokens: clamped, not 0.000…
	if c.Ratio() != MinRatio {
		t.Errorf("ratio %v, want clamped to %v", c.Ratio(), MinRatio)
	}
	c2 := NewCounter()
	c2.Calibrate(m, m.Fixed+1) // absurdly few
	if c2.Ratio() != MaxRatio {
		t.Errorf("ratio %v, want clamped to %v", c2.Ratio(), MaxRatio)
	}
}

func TestClear(t *testing.T) {
	c := NewCounter()
	h := history(10, 8000) // ~2000 tokens a result
	h = append(h, calls("small"), result("small", 100))
	orig := slices.Clone(h)
	out, cleared := Clear(h, c)
	if !slices.EqualFunc(h, orig, func(a, b messages.ChatMessage) bool { return a.Content == b.Content }) {
		t.Fatal("Clear changed its input")
	}
	if len(out) != len(h) {
		t.Fatalf("Clear dropped messages: %d → %d", len(h), len(out))
	}
	// 11 results: the 5 newest stay (small among them), 6 old big ones go.
	if len(cleared) != 6 {
		t.Fatalf("cleared %d results, want 6: %+v", len(cleared), cleared)
	}
	for _, cl := range cleared {
		m := out[cl.Index]
		if m.Role != messages.RoleTool || m.ToolCallID != cl.CallID || !strings.HasPrefix(m.Content, ClearedPrefix) ||
			!strings.Contains(m.Content, "read_file, ~2") {
			t.Errorf("cleared message %d: %+v", cl.Index, m)
		}
	}
	if again, more := Clear(out, c); len(more) != 0 || len(again) != len(out) {
		t.Errorf("a second pass cleared %d more", len(more))
	}
}

func TestClearLeavesProtectedTurns(t *testing.T) {
	c := NewCounter()
	var h []messages.ChatMessage
	h = append(h, sys())
	for turn := range 5 {
		h = append(h, user(fmt.Sprintf("turn %d", turn)))
		for i := range 3 {
			id := fmt.Sprintf("t%dc%d", turn, i)
			h = append(h, calls(id), result(id, 8000))
		}
		h = append(h, messages.ChatMessage{Role: messages.RoleAssistant, Content: "done"})
	}
	h = h[:len(h)-1] // the last turn is in progress
	tu := TurnsOf(h)
	_, cleared := Clear(h, c)
	for _, cl := range cleared {
		if cl.Index >= tu.Protected && cl.Index < tu.Current {
			t.Errorf("cleared %d inside the protected turns [%d, %d)", cl.Index, tu.Protected, tu.Current)
		}
	}
	// turn 0's three results are outside protection; turn 4's are the newest.
	if len(cleared) != 3 {
		t.Errorf("cleared %d, want turn 0's 3", len(cleared))
	}
}

// checkPairs fails unless every tool result follows the assistant
// message that called it and every call has exactly one result.
func checkPairs(t *testing.T, h []messages.ChatMessage) {
	t.Helper()
	for i := 0; i < len(h); i++ {
		m := h[i]
		if m.Role == messages.RoleTool {
			t.Fatalf("orphan result at %d (%s)", i, m.ToolCallID)
		}
		if m.Role != messages.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		want := map[string]bool{}
		for _, tc := range m.ToolCalls {
			want[tc.ID] = true
		}
		for i+1 < len(h) && h[i+1].Role == messages.RoleTool {
			i++
			if !want[h[i].ToolCallID] {
				t.Fatalf("result %s at %d answers no open call", h[i].ToolCallID, i)
			}
			delete(want, h[i].ToolCallID)
		}
		if len(want) > 0 {
			t.Fatalf("calls without results: %v", want)
		}
	}
}

// randomHistory is a few turns of random iterations, with the odd summary
// and text-only answer.
func randomHistory(rng *rand.Rand) []messages.ChatMessage {
	h := []messages.ChatMessage{sys()}
	if rng.IntN(3) == 0 {
		h = append(h, SummaryMessage("earlier work"))
	}
	n := 0
	for turn := range 1 + rng.IntN(5) {
		h = append(h, user(fmt.Sprintf("turn %d %s", turn, strings.Repeat("p", rng.IntN(400)))))
		for range rng.IntN(12) {
			if rng.IntN(5) == 0 {
				h = append(h, messages.ChatMessage{Role: messages.RoleAssistant, Content: strings.Repeat("t", rng.IntN(2000))})
				continue
			}
			k := 1 + rng.IntN(3)
			var ids []string
			for range k {
				n++
				ids = append(ids, fmt.Sprintf("c%d", n))
			}
			h = append(h, calls(ids...))
			for _, id := range ids {
				h = append(h, result(id, rng.IntN(12000)))
			}
		}
	}
	return h
}

func TestTrimProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	c := NewCounter()
	for n := range 2000 {
		h := randomHistory(rng)
		target := 500 + rng.IntN(12000)
		out, dropped := Trim(h, c, target)
		if dropped != len(h)-len(out) {
			t.Fatalf("#%d: dropped %d, lengths %d → %d", n, dropped, len(h), len(out))
		}
		checkPairs(t, out)
		if out[0].Role != messages.RoleSystem {
			t.Fatalf("#%d: system message lost", n)
		}
		// A subsequence of h, in order.
		j := 0
		for _, m := range out {
			for j < len(h) && !same(h[j], m) {
				j++
			}
			if j == len(h) {
				t.Fatalf("#%d: output is not an ordered subsequence", n)
			}
			j++
		}
		tu := TurnsOf(h)
		if !slices.ContainsFunc(out, func(m messages.ChatMessage) bool { return same(m, h[tu.Current]) }) {
			t.Fatalf("#%d: the current prompt was dropped", n)
		}
		for _, m := range h {
			if m.Kind == messages.KindSummary && !slices.ContainsFunc(out, func(o messages.ChatMessage) bool { return same(o, m) }) {
				t.Fatalf("#%d: the summary was dropped", n)
			}
		}
		if last := h[len(h)-1]; last.Role != messages.RoleUser && !same(out[len(out)-1], last) {
			t.Fatalf("#%d: the newest unit was dropped", n)
		}
		// Over target only when what must stay is itself over it.
		if c.Messages(out) > target {
			must := 0
			for i := range h {
				if keeps(h, i, tu) {
					must += c.Message(h[i])
				}
			}
			all := units(h, 0)
			for i := all[len(all)-1].Start; i < len(h); i++ {
				if !keeps(h, i, tu) {
					must += c.Message(h[i])
				}
			}
			if c.Messages(out) > must && c.Messages(out) > target {
				// Everything kept beyond the must-keeps fitted when it was taken.
				extra := c.Messages(out) - must
				if extra > target {
					t.Fatalf("#%d: %d tokens kept beyond the must-keeps, target %d", n, extra, target)
				}
			}
		}
	}
}

func same(a, b messages.ChatMessage) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID && len(a.ToolCalls) == len(b.ToolCalls) &&
		(len(a.ToolCalls) == 0 || a.ToolCalls[0].ID == b.ToolCalls[0].ID)
}

func TestTrimDropsOldestFirst(t *testing.T) {
	c := NewCounter()
	h := history(20, 4000) // ~1000 tokens a result
	out, dropped := Trim(h, c, 6000)
	if dropped == 0 || c.Messages(out) > 6000 {
		t.Fatalf("dropped %d, %d tokens left", dropped, c.Messages(out))
	}
	if out[0].Role != messages.RoleSystem || out[1].Content != "read every file and report" {
		t.Fatalf("head: %+v %+v", out[0], out[1])
	}
	// What stays is the newest iterations, contiguous.
	if out[2].ToolCalls[0].ID != fmt.Sprintf("c%d", 20-(len(out)-2)/2) || out[len(out)-1].ToolCallID != "c19" {
		t.Errorf("kept %s … %s", out[2].ToolCalls[0].ID, out[len(out)-1].ToolCallID)
	}
	if same, n := Trim(out, c, 6000); n != 0 || len(same) != len(out) {
		t.Error("a history that fits must come back unchanged")
	}
}

func TestDropOrphans(t *testing.T) {
	h := []messages.ChatMessage{
		sys(), result("lost", 5), user("u"),
		calls("a", "b"), result("b", 3), result("x", 3),
		{Role: messages.RoleAssistant, Content: "thinking", ToolCalls: []messages.ToolCall{{ID: "z", Name: "ls"}}},
		calls("q"),
	}
	out := DropOrphans(h)
	checkPairs(t, out)
	if len(out) != 5 || out[2].ToolCalls[0].ID != "b" || len(out[2].ToolCalls) != 1 || out[4].Content != "thinking" || len(out[4].ToolCalls) != 0 {
		t.Fatalf("out = %+v", out)
	}
}

func TestPlanAndApply(t *testing.T) {
	c := NewCounter()
	h := append([]messages.ChatMessage{sys(), SummaryMessage("we read a.txt: it says 42")}, history(30, 4000)[1:]...)
	p, ok := PlanCompaction(h, c, 10000)
	if !ok {
		t.Fatal("nothing to summarize")
	}
	if p.From != 1 || p.Prior != "we read a.txt: it says 42" || p.Task != 2 {
		t.Fatalf("plan %+v", p)
	}
	recent := c.Messages(h[p.To:])
	if recent > 2000 && p.To != len(h)-2 {
		t.Errorf("recent part %d tokens, over 20%% of 10000", recent)
	}
	for _, m := range p.Middle {
		if m.Kind == messages.KindSummary || m.Content == "read every file and report" {
			t.Errorf("middle holds %+v", m)
		}
	}
	// The history grew at its end since the plan (summarize_context's own batch).
	grown := append(slices.Clone(h), calls("late"), result("late", 10))
	out := Apply(grown, p, "merged notes")
	checkPairs(t, out)
	if out[0].Role != messages.RoleSystem || out[1].Kind != messages.KindSummary || !strings.HasSuffix(out[1].Content, "merged notes") ||
		out[2].Content != "read every file and report" || out[len(out)-1].ToolCallID != "late" {
		t.Fatalf("applied: %+v", out[:3])
	}
	if len(out) != 3+len(grown)-p.To {
		t.Errorf("len %d", len(out))
	}
	// Nothing between the system message and the recent part: no plan.
	if _, ok := PlanCompaction([]messages.ChatMessage{sys(), user("hi")}, c, 10000); ok {
		t.Error("a two-message history has nothing to summarize")
	}
	// An orphaned result at the start of the recent part is dropped.
	odd := []messages.ChatMessage{sys(), user("u"), calls("a"), result("a", 40000), result("stray", 10), calls("b"), result("b", 10)}
	p2, ok := PlanCompaction(odd, c, 10000)
	if !ok {
		t.Fatal("odd: no plan")
	}
	checkPairs(t, Apply(odd, p2, "s"))
}

func TestSummarizerInput(t *testing.T) {
	secret := "SECRET-AFTER-THE-CUT"
	args := `{"path":"` + strings.Repeat("a", 250) + secret + `"}`
	middle := []messages.ChatMessage{
		user("old question"),
		{Role: messages.RoleAssistant, Content: "let me look", Reasoning: "private chain of thought", ToolCalls: []messages.ToolCall{{ID: "1", Name: "read_file", Arguments: args}}},
		{Role: messages.RoleTool, ToolCallID: "1", Name: "read_file", Content: strings.Repeat("r", 10000)},
	}
	in := SummarizerInput(Plan{Middle: middle, Prior: "PRIOR"}, 100000)
	for _, bad := range []string{secret, "private chain of thought", strings.Repeat("r", resultChars+1)} {
		if strings.Contains(in, bad) {
			t.Errorf("summarizer input holds %.40q", bad)
		}
	}
	for _, want := range []string{"<previous-summary>\nPRIOR", "[user] old question", "[assistant] let me look", "[assistant called read_file] " + args[:ArgumentChars], "[result of read_file] rrr"} {
		if !strings.Contains(in, want) {
			t.Errorf("summarizer input lacks %.60q", want)
		}
	}
	var many []messages.ChatMessage
	for i := range 200 {
		many = append(many, user(fmt.Sprintf("message %03d %s", i, strings.Repeat("z", 500))))
	}
	small := SummarizerInput(Plan{Middle: many, Prior: "PRIOR"}, 20000)
	if len(small) > 20000 || !strings.Contains(small, "PRIOR") || !strings.Contains(small, "message 199") || strings.Contains(small, "message 000") ||
		!strings.Contains(small, "earlier messages left out") {
		t.Errorf("capped input: %d bytes", len(small))
	}
}

func TestManagerRungs(t *testing.T) {
	m := NewManager(Settings{Budget: 10000, Warn: 0.7, Compact: 0.8})
	h := history(4, 4000) // ~4000 tokens: under every rung
	if _, _, ok := m.Clear(h, m.Usage(h)); ok || m.Warning(m.Usage(h)) != "" || m.CompactDue(m.Usage(h)) || m.Pressure(m.Usage(h)) != "" {
		t.Fatal("a small history set off a rung")
	}
	h = history(7, 4000) // ~7100: above clear and warn
	out, st, ok := m.Clear(h, m.Usage(h))
	if !ok || st.Rung != RungClear || len(st.Cleared) != 2 || st.Saved() <= 0 {
		t.Fatalf("clear: %v %+v", ok, st)
	}
	h2 := append(out, calls("n1"), result("n1", 4000), calls("n2"), result("n2", 4000))
	if _, _, ok := m.Clear(h2, m.Usage(h2)); ok {
		t.Error("cleared twice in one crossing")
	}
	if _, _, ok := m.Clear(history(2, 100), m.Usage(history(2, 100))); ok {
		t.Fatal("nothing to clear below the ratio")
	}
	if _, _, ok := m.Clear(h2, m.Usage(h2)); !ok {
		t.Error("a new crossing must clear again")
	}
	mid := m.Usage(history(7, 4200))
	w := m.Warning(mid)
	if !strings.HasPrefix(w, "context 7") || !strings.HasSuffix(w, "full of 10000 tokens — will auto-compact soon") {
		t.Errorf("warning %q", w)
	}
	if m.Warning(mid) != "" {
		t.Error("warned twice")
	}
	if p := m.Pressure(mid); !strings.HasPrefix(p, "[CONTEXT WARNING: context is 7") {
		t.Errorf("pressure %q", p)
	}
	big := history(10, 4000)
	bu := m.Usage(big)
	if !m.CompactDue(bu) || !strings.HasPrefix(m.Pressure(bu), "[CONTEXT CRITICAL:") {
		t.Errorf("at %.2f: compact %v, pressure %q", m.Ratio(bu), m.CompactDue(bu), m.Pressure(bu))
	}
	trimmed, st, ok := m.Trim(big, bu)
	if !ok || st.Rung != RungTrim || m.Usage(trimmed) > 8000 {
		t.Fatalf("trim: %v %+v, %d tokens", ok, st, m.Usage(trimmed))
	}
	checkPairs(t, trimmed)
	if TrimWarning(3) != "context still over budget after compacting — dropped 3 older message(s) without summarizing them" {
		t.Error(TrimWarning(3))
	}
}

func TestValidRatios(t *testing.T) {
	nan := 0.0
	nan /= nan
	tests := []struct{ warn, compact, w, c float64 }{
		{0.7, 0.8, 0.7, 0.8},
		{0.5, 0.6, 0.5, 0.6},
		{0.9, 0.8, 0.7, 0.8},  // warn above compact
		{0.7, 0.96, 0.7, 0.8}, // compact at or above trim
		{0.7, 0.5, 0.5, 0.5},  // warn falls to min(0.7, compact)… below it
		{nan, 1.5, 0.7, 0.8},
		{-1, 0, 0.7, 0.8},
	}
	for _, tt := range tests {
		w, c := Valid(tt.warn, tt.compact)
		if c != tt.c || (w != tt.w && !(tt.w == tt.c && w < c)) || w >= c {
			t.Errorf("Valid(%v, %v) = %v, %v", tt.warn, tt.compact, w, c)
		}
	}
}

func TestBudget(t *testing.T) {
	tests := []struct {
		name    string
		w       Window
		want    int
		guessed bool
	}{
		{"catalog", Window{Catalog: 200000}, 200000, false},
		{"unknown", Window{}, 128000, true},
		{"ceiling lowers", Window{Catalog: 200000, MaxContextTokens: 50000}, 50000, false},
		{"ceiling never raises a known window", Window{Catalog: 8000, MaxContextTokens: 50000}, 8000, false},
		{"placeholder never caps", Window{MaxContextTokens: 500000}, 500000, false},
		{"local pinned", Window{Local: true, Pinned: 16384, Server: 4096, ModelMax: 131072}, 16384, false},
		{"local server", Window{Local: true, Server: 4096, ModelMax: 131072}, 4096, false},
		{"local model max", Window{Local: true, ModelMax: 32768}, 32768, false},
		{"local unknown", Window{Local: true}, 128000, true},
	}
	for _, tt := range tests {
		if got, g := Budget(tt.w); got != tt.want || g != tt.guessed {
			t.Errorf("%s: %d %v, want %d %v", tt.name, got, g, tt.want, tt.guessed)
		}
	}
}

// BenchmarkIteration is what context management costs an iteration of a
// 200-message history: the usage estimate, the clear check (its
// once-per-crossing pass already spent), the warning, the compact check,
// the pressure line and the trim check, plus measuring the request and
// calibrating against its usage.
func BenchmarkIteration(b *testing.B) {
	h := history(100, 6000)[:200]
	m := NewManager(Settings{Budget: 128000, Warn: 0.7, Compact: 0.8})
	m.ToolBytes = 8000
	h, _, _ = m.Clear(h, m.Usage(h))
	meas := m.Counter().Measure(h, m.ToolBytes)
	b.ReportAllocs()
	for b.Loop() {
		used := m.Usage(h)
		_, _, _ = m.Clear(h, used)
		_ = m.Warning(used)
		_ = m.CompactDue(used)
		_ = m.Pressure(used)
		_, _, _ = m.Trim(h, used)
		meas = m.Counter().Measure(h, m.ToolBytes)
		m.Counter().Calibrate(meas, 140000)
	}
}

// TestTrimKeepsTheCallsInFlight: trimming right after an answer with
// tool calls (their results not in yet) keeps the calls.
func TestTrimKeepsTheCallsInFlight(t *testing.T) {
	c := NewCounter()
	h := append(history(20, 4000), calls("new1", "new2"))
	out, dropped := Trim(h, c, 3000)
	last := out[len(out)-1]
	if dropped == 0 || len(last.ToolCalls) != 2 || last.ToolCalls[0].ID != "new1" {
		t.Fatalf("dropped %d, last %+v", dropped, last)
	}
	checkPairs(t, out[:len(out)-1])
}
