package events

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/visible"
)

func TestTruncateStrings(t *testing.T) {
	long := strings.Repeat("a", 250)
	cut := strings.Repeat("a", 200) + "…"
	uni := strings.Repeat("é", 201) // 402 bytes, 201 characters
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short is untouched", `{"type":"x","a":"hi"}`, `{"type":"x","a":"hi"}`},
		{"exactly 200 stays", `{"a":"` + strings.Repeat("b", 200) + `"}`, `{"a":"` + strings.Repeat("b", 200) + `"}`},
		{"long value cut", `{"type":"x","a":"` + long + `","z":1}`, `{"type":"x","a":"` + cut + `","z":1}`},
		{"keys never cut", `{"` + long + `":"v"}`, `{"` + long + `":"v"}`},
		{"nested and arrays, order kept", `{"z":{"b":["` + long + `",2]},"a":true}`, `{"z":{"b":["` + cut + `",2]},"a":true}`},
		{"characters, not bytes", `{"a":"` + uni + `"}`, `{"a":"` + strings.Repeat("é", 200) + `…"}`},
		{"200 two-byte characters stay", `{"a":"` + strings.Repeat("é", 200) + `"}`, `{"a":"` + strings.Repeat("é", 200) + `"}`},
		{"escapes count as one character", `{"a":"` + strings.Repeat(`\"`, 201) + `"}`, `{"a":"` + strings.Repeat(`\"`, 200) + `…"}`},
		{"a quote inside does not end the scan", `{"a":"x\"y","b":"` + long + `"}`, `{"a":"x\"y","b":"` + cut + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(TruncateStrings([]byte(tc.in)))
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("output is not JSON")
			}
		})
	}
}

func TestRender(t *testing.T) {
	long := strings.Repeat("q", 500)
	for _, tc := range []struct {
		name   string
		ev     messages.Event
		cutOff bool
	}{
		{"tool result cut", messages.Event{Type: messages.EventToolExecutionComplete, Result: &long}, true},
		{"error message cut", messages.Event{Type: messages.EventErrorType, Err: &messages.EventError{Name: "E", Message: long}, Recoverable: messages.Ptr(false)}, true},
		{"question never cut", messages.Event{Type: messages.EventUserInputRequired, Question: long}, false},
		{"approval request never cut", messages.Event{Type: messages.EventApprovalRequired, Message: "About to run echo " + long + "; touch x"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := Render(tc.ev)
			if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
				t.Fatalf("not one line: %q", line)
			}
			if !bytes.HasPrefix(line, []byte(`{"type":"`+tc.ev.Type+`"`)) {
				t.Errorf("type is not first: %s", line)
			}
			has := bytes.Contains(line, []byte(long))
			if has == tc.cutOff {
				t.Errorf("cut = %v, want %v", !has, tc.cutOff)
			}
		})
	}
	// tools_detected always carries toolsRequiringApproval, [] when empty.
	line := Render(messages.Event{Type: messages.EventToolsDetected, ToolNames: []string{"ls"}, ToolsRequiringAppr: []string{}})
	if !bytes.Contains(line, []byte(`"toolsRequiringApproval":[]`)) {
		t.Errorf("empty toolsRequiringApproval dropped: %s", line)
	}
}

// TestRenderEscapesHidden: what a terminal would not show (or would obey)
// is written as a \u escape, and the line decodes to the same value.
func TestRenderEscapesHidden(t *testing.T) {
	msg := "ok\u202e\u200b\x7f\u009b\u2028\U000e0041 é 🙂 \x1b[2K\r"
	line := Render(messages.Event{Type: messages.EventWarning, Message: msg})
	for _, r := range string(line[:len(line)-1]) {
		if r < 0x20 || r == 0x7f || (r > 0x7f && visible.Hidden(r)) {
			t.Errorf("raw %U in %s", r, line)
		}
	}
	if !bytes.Contains(line, []byte(`é 🙂`)) || !bytes.Contains(line, []byte(`\u202e`)) || !bytes.Contains(line, []byte(`\udb40\udc41`)) {
		t.Errorf("line = %s", line)
	}
	var back messages.Event
	if err := json.Unmarshal(line, &back); err != nil || back.Message != msg {
		t.Errorf("decodes to %q, %v; want %q", back.Message, err, msg)
	}
}

func FuzzEscapeHidden(f *testing.F) {
	f.Add("a\u202eb")
	f.Add("\x7f\u0085")
	f.Fuzz(func(t *testing.T, s string) {
		data, _ := json.Marshal(map[string]string{s: s})
		out := EscapeHidden(data)
		var a, b map[string]string
		if json.Unmarshal(data, &a) != nil || json.Unmarshal(out, &b) != nil || len(a) != len(b) || a[s] != b[s] {
			t.Fatalf("EscapeHidden changed the value: %s -> %s", data, out)
		}
		for _, r := range string(out) {
			if r >= 0x7f && visible.Hidden(r) {
				t.Fatalf("raw %U left in %s", r, out)
			}
		}
	})
}

func TestFilter(t *testing.T) {
	for _, tc := range []struct {
		cats  []string
		typ   string
		allow bool
	}{
		{[]string{"tools"}, messages.EventToolCall, true},
		{[]string{"tools"}, messages.EventUsageUpdate, false},
		{[]string{"tools"}, messages.EventErrorType, true},
		{[]string{"tools"}, messages.EventWarning, true},
		{[]string{"usage"}, messages.EventStreamStart, true},
		{[]string{"text"}, messages.EventThinkingChunk, false},
		{[]string{"reasoning"}, messages.EventThinkingChunk, true},
		{[]string{"all"}, messages.EventSubagentStart, true},
		{[]string{"approval"}, messages.EventApprovalResolved, true},
		{nil, messages.EventErrorType, true},
	} {
		if got := NewFilter(tc.cats).Allows(tc.typ); got != tc.allow {
			t.Errorf("%v allows %s = %v, want %v", tc.cats, tc.typ, got, tc.allow)
		}
	}
}

type recorder struct{ evs []messages.Event }

func (r *recorder) Publish(_ string, msg any, _ messages.Trace) error {
	r.evs = append(r.evs, msg.(messages.Event))
	return nil
}

// TestEmitterCutsAccumulated: the growing text is cut before it reaches
// the bus, and renders exactly as if it had not been.
func TestEmitterCutsAccumulated(t *testing.T) {
	rec := &recorder{}
	acc := strings.Repeat("x", 10_000)
	NewEmitter(rec, "r").Emit(messages.Event{Type: messages.EventTextChunk, Delta: "x", Accumulated: acc})
	got := rec.evs[0]
	if utf8.RuneCountInString(got.Accumulated) != MaxString+1 || got.RunID != "r" {
		t.Fatalf("published accumulated has %d characters", utf8.RuneCountInString(got.Accumulated))
	}
	full := messages.Event{Type: messages.EventTextChunk, Place: messages.Place{RunID: "r"}, Delta: "x", Accumulated: acc}
	if !bytes.Equal(Render(got), Render(full)) {
		t.Errorf("rendering differs:\n%s\n%s", Render(got), Render(full))
	}
}

func BenchmarkRenderTextChunk(b *testing.B) {
	ev := messages.Event{Type: messages.EventTextChunk, Place: messages.Place{RunID: "run-1", AgentName: "a"},
		Delta: "word ", Accumulated: strings.Repeat("word ", 100), Sequence: messages.Ptr(7)}
	for b.Loop() {
		_ = Render(ev)
	}
}

// BenchmarkEscapeHidden: the pass that makes hidden runes visible, on a
// text_chunk line with non-ASCII text (the slow path) and without.
func BenchmarkEscapeHidden(b *testing.B) {
	for _, tc := range []struct{ name, text string }{{"ascii", "word "}, {"accents", "éà漢 "}} {
		data, _ := json.Marshal(messages.Event{Type: messages.EventTextChunk, Accumulated: strings.Repeat(tc.text, 40)})
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				_ = EscapeHidden(data)
			}
		})
	}
}
