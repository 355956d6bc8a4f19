package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jazz-run/jazz/messages"
)

// Strings that encoding/json escapes in every way it has.
var envStrings = []string{
	"", "4", "plain answer", `quote " and backslash \`, "<script>&amp;</script>", "tab\tnew\nline\rret\bbs\fff",
	"\x00\x01\x1f\x7f", "bad\xffutf8\xc3", "\xed\xa0\x80", "line\u2028para\u2029end", "é漢字🎷", "\ufffd", `{"path":"a.txt"}`,
	strings.Repeat("long ", 200),
}

var envFloats = []float64{0, 0.000006, 1e-6, 9.99e-7, 5e-7, 1.5e-10, 0.12345678, 1, 42.5, 1e20, 1e21, 1.5e300, -0.000001, math.Copysign(0, -1), 123456789.12345678}

func randomCalls(r *rand.Rand) []toolCallView {
	switch r.IntN(4) {
	case 0:
		return nil
	case 1:
		return []toolCallView{}
	}
	out := make([]toolCallView, r.IntN(4)+1)
	pick := func() string { return envStrings[r.IntN(len(envStrings))] }
	for i := range out {
		out[i] = toolCallView{ID: pick(), Name: pick(), Arguments: pick(), AgentID: pick(), AgentName: pick(), Depth: r.IntN(4) - 1, DecidedBy: pick()}
	}
	return out
}

func randomUsage(r *rand.Rand) usageView {
	n := func() int { return []int{0, 1, 25, -3, math.MaxInt32, math.MaxInt64}[r.IntN(6)] }
	return usageView{PromptTokens: n(), CompletionTokens: n(), TotalTokens: n(), CacheReadTokens: n()}
}

// TestEnvelopeEncodersAreMarshal: the envelopes are written by hand; for
// every kind of string, number and list they hold, the bytes are
// encoding/json.Marshal's (the contract the e2e and script tests check
// on a few runs).
func TestEnvelopeEncodersAreMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	pick := func() string { return envStrings[r.IntN(len(envStrings))] }
	for i := range 3000 {
		s := successEnvelope{OK: r.IntN(2) == 0, Answer: pick(), StopReason: pick(), CostUSD: envFloats[r.IntN(len(envFloats))],
			CostKnown: r.IntN(2) == 0, TokenUsage: randomUsage(r), ToolCalls: randomCalls(r), Declined: randomCalls(r)}
		if r.IntN(5) == 0 {
			s.Messages = []messages.ChatMessage{{Role: "user", Content: pick()}}
		}
		f := runFailureEnvelope{OK: r.IntN(2) == 0, Error: pick(), StopReason: pick(), Answer: pick(), CostUSD: envFloats[r.IntN(len(envFloats))],
			TokenUsage: randomUsage(r), ToolCalls: randomCalls(r), Declined: randomCalls(r)}
		for _, c := range []struct {
			v   any
			enc func() ([]byte, error)
		}{{s, func() ([]byte, error) { return s.appendJSON(nil) }}, {f, func() ([]byte, error) { return f.appendJSON(nil) }}} {
			want, werr := json.Marshal(c.v)
			got, gerr := c.enc()
			if werr != nil || gerr != nil || !bytes.Equal(got, want) {
				t.Fatalf("case %d, %T:\n hand    %s (%v)\n Marshal %s (%v)", i, c.v, got, gerr, want, werr)
			}
			if !utf8.Valid(got) || !json.Valid(got) {
				t.Fatalf("case %d: not valid JSON: %q", i, got)
			}
		}
	}
}

// TestEnvelopeEncodersRefuseWhatMarshalRefuses: a cost that is not a
// number fails the encoding, with Marshal's message.
func TestEnvelopeEncodersRefuseWhatMarshalRefuses(t *testing.T) {
	for _, c := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, werr := json.Marshal(successEnvelope{CostUSD: c})
		_, gerr := successEnvelope{CostUSD: c}.appendJSON(nil)
		_, ferr := runFailureEnvelope{CostUSD: c}.appendJSON(nil)
		if werr == nil || gerr == nil || ferr == nil || gerr.Error() != werr.Error() || ferr.Error() != werr.Error() {
			t.Errorf("cost %v: Marshal %v, hand %v / %v", c, werr, gerr, ferr)
		}
	}
}

// TestWriteRunFailureLine: one line, the envelope and a newline.
func TestWriteRunFailureLine(t *testing.T) {
	var buf bytes.Buffer
	f := messages.RunFinished{Answer: "partial <b>", StopReason: messages.StopInterrupted,
		ToolCalls: []messages.AgentCall{{ToolCall: messages.ToolCall{ID: "c1", Name: "ls", Arguments: `{}`}, Depth: 1}}}
	writeRunFailure(&buf, "stopped & gone", f, 0.25)
	want, _ := json.Marshal(runFailureEnvelope{OK: false, Error: "stopped & gone", StopReason: messages.StopInterrupted, Answer: "partial <b>",
		CostUSD: 0.25, TokenUsage: usageOf(f.Usage), ToolCalls: callViews(f.ToolCalls), Declined: callViews(nil)})
	if buf.String() != string(want)+"\n" {
		t.Errorf("wrote %q, want %q", buf.String(), want)
	}
}
