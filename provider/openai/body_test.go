package openai

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
)

// TestRequestBodyEqualsMarshal: the hand-built body is byte for byte what
// encoding/json writes (requestBodyMarshal), and fails exactly where and
// how it fails, over random requests: every role (and unknown ones), tool
// calls on roles that do not send them, empty contents, hostile strings,
// tools with and without parameters, temperatures (NaN too), reasoning,
// and vendor fields that add keys, override ours or cannot be encoded.
func TestRequestBodyEqualsMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 4000 {
		c, req := randomRequest(r)
		want, wantErr := c.requestBodyMarshal(req)
		got, gotErr := c.requestBody(req)
		if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
			t.Fatalf("case %d: error %v, want %v", i, gotErr, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d: body\n%s\nwant\n%s", i, got, want)
		}
		// The fast path itself must take every request the reference
		// takes (else the speed-up silently never happens).
		if _, ok := c.appendBody(nil, req); ok != (wantErr == nil) {
			t.Fatalf("case %d: fast path ok=%v, reference error %v", i, ok, wantErr)
		}
	}
}

// TestRequestBodyTakesTheFastPath: a plain conversation (the shape of
// every real request) is built by appendBody, not by the fallback.
func TestRequestBodyTakesTheFastPath(t *testing.T) {
	c := New(Options{})
	temp := 0.2
	req := provider.Request{Model: "m", Stream: true, Temperature: &temp, ReasoningEffort: "high",
		Tools: []messages.ToolSpec{{Name: "read_file", Description: "reads <a> file", Parameters: json.RawMessage(`{ "type": "object" }`)}},
		Messages: []messages.ChatMessage{
			{Role: messages.RoleSystem, Content: "be brief"},
			{Role: messages.RoleUser, Content: "read f.txt"},
			{Role: messages.RoleAssistant, ToolCalls: []messages.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"f.txt"}`}}},
			{Role: messages.RoleTool, ToolCallID: "call_1", Content: `{"content":"1\tline\n"}`},
		}}
	got, ok := c.appendBody(nil, req)
	if !ok {
		t.Fatal("appendBody refused a plain request")
	}
	want, err := c.requestBodyMarshal(req)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("body\n%s\nwant\n%s (%v)", got, want, err)
	}
}

func randomRequest(r *rand.Rand) (*Client, provider.Request) {
	opts := Options{}
	switch r.IntN(6) {
	case 0:
		opts.ExtraBody = map[string]any{"keep_alive": "5m", "options": map[string]any{"num_ctx": 8192, "<x>": []int{1, 2}}}
	case 1:
		// Overrides of our own keys win, as they did.
		opts.ExtraBody = map[string]any{"messages": "replaced", "tools": nil, "model": 7, "stream": "yes"}
	case 2:
		opts.ExtraBody = map[string]any{"a": math.Inf(1)} // cannot be encoded
	case 3:
		opts.ExtraBody = map[string]any{"": true, "zz": []string{randomString(r)}, randomString(r): 1.5e-7}
	}
	if r.IntN(4) == 0 {
		opts.Reasoning = func(effort string) map[string]any {
			return map[string]any{"reasoning": map[string]any{"effort": effort}, "temperature": "overridden"}
		}
	}
	c := New(opts)
	req := provider.Request{Stream: r.IntN(2) == 0, ReasoningEffort: []string{"", "low", "high", "disable"}[r.IntN(4)]}
	if r.IntN(30) != 0 {
		req.Model = randomString(r) + "m"
	}
	if r.IntN(3) == 0 {
		temp := []float64{0, 0.7, 1, 2.5e-9, 1e21, math.NaN()}[r.IntN(6)]
		req.Temperature = &temp
	}
	for range r.IntN(3) {
		params := []json.RawMessage{nil, {}, json.RawMessage(` {"type" : "object", "description":"<&>"} `), json.RawMessage(`{bad`)}[r.IntN(4)]
		if r.IntN(10) != 0 && len(params) > 0 && params[0] == '{' && params[1] == 'b' {
			params = nil // invalid parameters only now and then
		}
		req.Tools = append(req.Tools, messages.ToolSpec{Name: randomString(r), Description: randomString(r), Parameters: params})
	}
	roles := []string{messages.RoleSystem, messages.RoleUser, messages.RoleAssistant, messages.RoleTool}
	for range r.IntN(12) {
		m := messages.ChatMessage{Role: roles[r.IntN(len(roles))], Content: randomString(r)}
		if r.IntN(40) == 0 {
			m.Role = "critic" // unknown: refused
		}
		if r.IntN(3) == 0 {
			m.Content = ""
		}
		if r.IntN(2) == 0 {
			for range 1 + r.IntN(3) {
				m.ToolCalls = append(m.ToolCalls, messages.ToolCall{ID: randomString(r), Name: randomString(r), Arguments: randomString(r)})
			}
		}
		if m.Role == messages.RoleTool || r.IntN(4) == 0 {
			m.ToolCallID = randomString(r)
			if r.IntN(30) == 0 {
				m.ToolCallID = "" // a tool message without an id: refused
			}
		}
		req.Messages = append(req.Messages, m)
	}
	return c, req
}

// randomString mixes plain text with every kind of byte the encoder
// treats specially.
func randomString(r *rand.Rand) string {
	pieces := []string{"plain text ", "abcdefgh", `"`, `\`, "<", ">", "&", "\n", "\t", "\r", "\b", "\f", "\x00", "\x1f", "\x7f",
		"é", "日本", "😀", "\u2028", "\u2029", "\xff", "\xe2\x80", "\xc3", `{"k":"v\n"}`, "\ufffd", "0123456789"}
	var sb strings.Builder
	for range r.IntN(10) {
		sb.WriteString(pieces[r.IntN(len(pieces))])
	}
	return sb.String()
}
