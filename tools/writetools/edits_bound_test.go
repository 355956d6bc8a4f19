//go:build unix

package writetools

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/tools/pattern"
)

// referenceEdits is the oracle for simulate: the spec's §4 rules applied
// the plainest way (whole texts joined and split at every step), with the
// largest text any step leaves, so that the bound can be judged from
// outside. It knows nothing of how simulate counts sizes.
func referenceEdits(t *testing.T, content string, ops []editOp) (text string, largest int, ok bool) {
	t.Helper()
	lines := strings.Split(content, "\n")
	largest = len(content)
	for _, op := range ops {
		n := len(lines)
		switch op.Type {
		case "replace_lines", "delete_lines":
			if op.EndLine > n || op.StartLine > n {
				return "", 0, false
			}
			var repl []string
			if op.Type == "replace_lines" {
				repl = strings.Split(op.Content, "\n")
			}
			lines = append(append(append([]string{}, lines[:op.StartLine-1]...), repl...), lines[op.EndLine:]...)
		case "insert":
			if op.Line > n {
				return "", 0, false
			}
			ins := strings.Split(op.Content, "\n")
			lines = append(append(append([]string{}, lines[:op.Line]...), ins...), lines[op.Line:]...)
		case "replace_pattern":
			text := strings.Join(lines, "\n")
			n := 1
			if op.Count != nil {
				n = *op.Count
			}
			var out string
			if body, isRe := strings.CutPrefix(op.Pattern, pattern.Prefix); isRe {
				re, err := pattern.CompileRegex(body)
				if err != nil {
					t.Fatal(err)
				}
				spans := re.FindAllStringIndex(text, n)
				if len(spans) == 0 {
					return "", 0, false
				}
				prev := 0
				for _, s := range spans {
					out += text[prev:s[0]] + op.Replacement
					prev = s[1]
				}
				out += text[prev:]
			} else {
				if !strings.Contains(text, op.Pattern) {
					return "", 0, false
				}
				out = strings.Replace(text, op.Pattern, op.Replacement, n)
			}
			lines = strings.Split(out, "\n")
		}
		largest = max(largest, len(strings.Join(lines, "\n")))
	}
	return strings.Join(lines, "\n"), largest, true
}

// randomOps draws edit sequences that grow, shrink and reshape a text:
// every op type, literal and regex patterns, replacements longer and
// shorter than their match.
func randomOps(r *rand.Rand) (string, []editOp) {
	words := []string{"a", "b", "ab", "", "xyz", "a\nb", "\n"}
	pick := func() string { return words[r.IntN(len(words))] }
	var content string
	for range r.IntN(6) {
		content += pick()
	}
	var ops []editOp
	for range 1 + r.IntN(6) {
		lines := strings.Count(content, "\n") + 1 // a guess; out of bounds is fine too
		switch r.IntN(5) {
		case 0:
			s := 1 + r.IntN(lines+1)
			ops = append(ops, editOp{Type: "replace_lines", StartLine: s, EndLine: s + r.IntN(2), Content: strings.Repeat(pick(), r.IntN(4))})
		case 1:
			s := 1 + r.IntN(lines+1)
			ops = append(ops, editOp{Type: "delete_lines", StartLine: s, EndLine: s + r.IntN(2)})
		case 2:
			ops = append(ops, editOp{Type: "insert", Line: r.IntN(lines + 1), Content: strings.Repeat(pick(), r.IntN(4))})
		default:
			pat := []string{"a", "b", "ab", "re:a+", "re:b?", "re:[ab]"}[r.IntN(6)]
			count := []int{1, 2, -1}[r.IntN(3)]
			ops = append(ops, editOp{Type: "replace_pattern", Pattern: pat, Replacement: strings.Repeat("ab", r.IntN(4)), Count: &count})
		}
	}
	return content, ops
}

// TestSimulateIsBoundedAndExact: for random edit sequences and random
// bounds, simulate gives exactly the reference's text when no step of the
// reference passes the bound, and refuses, saying which edit and what
// bound, when one does. The bound is judged on every step, not on the
// result: an edit that grows the text past it and a later one that
// shrinks it back are still refused, since the text was built between.
func TestSimulateIsBoundedAndExact(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	stats := map[string]int{}
	for i := range 5000 {
		content, ops := randomOps(r)
		limit := len(content) + r.IntN(24)
		want, largest, ok := referenceEdits(t, content, ops)
		sim, err := simulate(context.Background(), content, ops, editLimits{size: limit, work: maxEditWork})
		name := fmt.Sprintf("case %d: %q %+v limit %d", i, content, ops, limit)
		switch {
		case !ok:
			stats["failed"]++
			if err == nil {
				t.Fatalf("%s: simulate succeeded where the reference fails: %q", name, sim.text)
			}
		case largest > limit:
			stats["bounded"]++
			if err == nil || !strings.Contains(err.msg, "the most edit_file writes; nothing was changed") {
				t.Fatalf("%s: a step reaches %d bytes, past the bound, and simulate gave %q, %v", name, largest, sim.text, err)
			}
		default:
			stats["applied"]++
			if err != nil {
				t.Fatalf("%s: %v (reference: %q)", name, err, want)
			}
			if sim.text != want {
				t.Fatalf("%s: got %q, want %q", name, sim.text, want)
			}
		}
	}
	t.Logf("outcomes: %v", stats)
	for _, k := range []string{"failed", "bounded", "applied"} {
		if stats[k] < 250 {
			t.Errorf("only %d cases %s: the generator does not exercise it", stats[k], k)
		}
	}
}

// TestEditsCannotGrowWithoutBound: a few hundred bytes of arguments that
// double a small file again and again (forty times would be terabytes;
// before the bound, 22 times cost the propose half 624 MB of allocation)
// are refused by the propose half, which no one approves, at the edit
// that passes the bound; as are a single replacement of every match in a
// large file by a long text, literal or regex, an insert past it, and a
// write_file of more than the bound, propose half and twin.
func TestEditsCannotGrowWithoutBound(t *testing.T) {
	h := newHarness(t)
	h.write("f.txt", "aaa")
	var doubling []E
	for range 23 {
		doubling = append(doubling, E{"type": "replace_pattern", "pattern": "a", "replacement": "aa", "count": -1})
	}
	h.write("big.txt", strings.Repeat("a\n", 4<<20))
	h.write("lines.txt", strings.Repeat("a\n", 1000))
	for _, c := range []struct {
		path  string
		edits []E
		want  string
	}{
		{"f.txt", doubling, "Edit 23 would make the file larger than 16 MB"},
		{"big.txt", []E{{"type": "replace_pattern", "pattern": "a", "replacement": strings.Repeat("b", 100), "count": -1}}, "Edit 1 would make"},
		{"lines.txt", []E{{"type": "replace_pattern", "pattern": "re:a", "replacement": strings.Repeat("b", 20000), "count": -1}}, "Edit 1 would make"},
		{"big.txt", []E{{"type": "insert", "line": 0, "content": strings.Repeat("c", 9<<20)}}, "Edit 1 would make"},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res := h.call("edit_file", E{"path": c.path, "edits": c.edits})
		runtime.ReadMemStats(&after)
		if res.Approval != nil || !strings.Contains(res.Error, c.want) {
			t.Errorf("%s %.80v: %.200s", c.path, c.edits, res.Error)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 400<<20 {
			t.Errorf("%s: the refused edit allocated %d MB", c.path, grew>>20)
		}
	}
	res := h.call("write_file", E{"path": "huge.txt", "content": strings.Repeat("x", maxWriteBytes+1)})
	if res.Approval != nil || !strings.Contains(res.Error, "more than the 16 MB write_file and edit_file write") {
		t.Errorf("a write past the bound: %.200s", res.Error)
	}
	raw := fmt.Sprintf(`{"path":"huge.txt","content":%q,"expectedState":"x"}`, strings.Repeat("x", maxWriteBytes+1))
	if res := h.run(context.Background(), "execute_write_file", []byte(raw)); !strings.Contains(res.Error, "more than the 16 MB") {
		t.Errorf("the twin wrote past the bound: %.200s", res.Error)
	}
}

// TestSimulateStopsWithItsContext: a cancelled call simulates no more edits.
func TestSimulateStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ops := []editOp{{Type: "insert", Line: 0, Content: "x"}}
	if _, err := simulate(ctx, "a", ops, callLimits()); err == nil || !strings.Contains(err.msg, "stopped") {
		t.Fatalf("a cancelled simulation: %v", err)
	}
}

// referenceWork is the oracle for simulate's work bound: the sum, over
// the edits, of the text's size and lines when each applies, and what
// the edits would cost on the text as it is (their number times the
// first's cost), found by applying them the plainest way.
func referenceWork(t *testing.T, content string, ops []editOp) (sum, upfront int) {
	t.Helper()
	text := content
	for i := range ops {
		sum += len(text) + strings.Count(text, "\n") + 1
		var ok bool
		text, _, ok = referenceEdits(t, text, ops[i:i+1])
		if !ok {
			t.Fatalf("reference failed on an edit sequence it applied whole")
		}
	}
	return sum, len(ops) * (len(content) + strings.Count(content, "\n") + 1)
}

// TestSimulateWorkIsBounded: for random edit sequences that apply and
// random work bounds, simulate refuses exactly when the edits would work
// through more than the bound (on the text as it is, or as it grows),
// and otherwise gives the reference's text. The propose half runs before
// anyone is asked, so what a call may make it do is bounded by its
// arguments' count and the file's size, not their product.
func TestSimulateWorkIsBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	stats := map[string]int{}
	for i := range 5000 {
		content, ops := randomOps(r)
		want, largest, ok := referenceEdits(t, content, ops)
		if !ok || largest > maxWriteBytes {
			continue
		}
		sum, upfront := referenceWork(t, content, ops)
		work := r.IntN(max(sum, upfront) + 4)
		sim, err := simulate(context.Background(), content, ops, editLimits{size: maxWriteBytes, work: work})
		name := fmt.Sprintf("case %d: %q %+v work %d (reference %d, up front %d)", i, content, ops, work, sum, upfront)
		if sum > work || upfront > work {
			stats["bounded"]++
			if err == nil || !strings.Contains(err.msg, "would work through more than") {
				t.Fatalf("%s: simulate gave %q, %v", name, sim.text, err)
			}
			continue
		}
		stats["applied"]++
		if err != nil || sim.text != want {
			t.Fatalf("%s: got %q, %v; want %q", name, sim.text, err, want)
		}
	}
	t.Logf("outcomes: %v", stats)
	for _, k := range []string{"bounded", "applied"} {
		if stats[k] < 250 {
			t.Errorf("only %d cases %s: the generator does not exercise it", stats[k], k)
		}
	}
}

// TestManyEditsAreRefusedUpFront: forty thousand inserts (14 s of the
// propose half's time before the bound), and a few dozen edits of a 16 MB
// file, are refused by the propose half with what to do instead, and
// allocate next to nothing; the schema offers at most maxEdits, and the
// twin refuses what the schema would.
func TestManyEditsAreRefusedUpFront(t *testing.T) {
	h := newHarness(t)
	h.write("small.txt", "a\n")
	h.write("big.txt", strings.Repeat("a\n", 8<<20-1))
	var inserts, patterns []E
	for range 40000 {
		inserts = append(inserts, E{"type": "insert", "line": 0, "content": "x"})
	}
	for range 20 {
		patterns = append(patterns, E{"type": "replace_pattern", "pattern": "re:a", "replacement": "b"})
	}
	raw := mustJSON(t, E{"path": "small.txt", "edits": inserts})
	if err := h.reg.Validate("edit_file", mustJSON(t, E{"path": "small.txt", "edits": make([]E, 1001)})); err == nil {
		t.Error("the schema admits 1001 edits")
	}
	p := h.call("edit_file", E{"path": "small.txt", "edits": inserts[:1000]})
	if p.Approval == nil {
		t.Fatalf("1000 inserts into a small file: %.300s", p.Error)
	}
	var approved struct{ ExpectedState string }
	must(t, json.Unmarshal(p.Approval.ExecuteArgs, &approved))
	for _, c := range []struct {
		name string
		raw  json.RawMessage
		want string
	}{
		{"40000 inserts", raw, "at most 1000 edits in one call, and this call has 40000"},
		{"40000 inserts, twin", mustJSON(t, E{"path": "small.txt", "edits": inserts, "expectedState": approved.ExpectedState}), "at most 1000 edits"},
		{"20 regex edits of 16 MB", mustJSON(t, E{"path": "big.txt", "edits": patterns}), "These 20 edits would work through more than 256 MB"},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		name := "edit_file"
		if strings.Contains(c.name, "twin") {
			name = "execute_edit_file"
		}
		start := time.Now()
		res := h.run(context.Background(), name, c.raw)
		runtime.ReadMemStats(&after)
		t.Logf("%s: %v", c.name, time.Since(start))
		if res.Approval != nil || res.Success || !strings.Contains(res.Error, c.want) {
			t.Errorf("%s: %.300s", c.name, res.Error)
		}
		// The file's read (16 MB) and the arguments' decoding are all
		// the refusal may cost; simulating the edits is not.
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 200<<20 {
			t.Errorf("%s: the refused call allocated %d MB", c.name, grew>>20)
		}
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return b
}
