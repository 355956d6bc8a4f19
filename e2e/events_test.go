package e2e

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"
)

// hlEventsScript reasons, talks, calls one ungated and one gated tool in
// one batch, then answers.
func hlEventsScript() map[string]any {
	return map[string]any{"turns": []any{
		map[string]any{
			"reasoning": "I should read the file and write a copy.",
			"text":      "Reading and writing.",
			"toolCalls": []any{
				map[string]any{"name": "read_file", "arguments": map[string]any{"path": "long.txt"}},
				map[string]any{"name": "write_file", "arguments": map[string]any{"path": "copy.txt", "content": "copy\n"}},
			},
			"usage": map[string]any{"promptTokens": 50, "completionTokens": 10},
		},
		map[string]any{"text": "Done.", "usage": map[string]any{"promptTokens": 80, "completionTokens": 3}},
	}}
}

// hlSchema lists, per event type, fields that must be present and their
// JSON kinds: s string, n number, b bool, o object, a array.
var hlSchema = map[string]map[string]byte{
	"stream_start":            {"provider": 's', "model": 's', "timestamp": 'n'},
	"thinking_start":          {"provider": 's'},
	"thinking_chunk":          {"content": 's', "sequence": 'n'},
	"thinking_complete":       {},
	"text_start":              {},
	"text_chunk":              {"delta": 's', "accumulated": 's', "sequence": 'n'},
	"tool_call":               {"toolCall": 'o', "sequence": 'n'},
	"tools_detected":          {"toolNames": 'a', "toolsRequiringApproval": 'a', "agentName": 's'},
	"tool_execution_start":    {"toolName": 's', "toolCallId": 's', "arguments": 'o'},
	"tool_execution_complete": {"toolCallId": 's', "result": 's', "durationMs": 'n', "success": 'b'},
	"usage_update":            {"usage": 'o'},
	"complete":                {"response": 'o', "totalDurationMs": 'n'},
	"approval_required":       {"toolCallId": 's', "toolName": 's', "message": 's', "riskLevel": 's'},
	"approval_resolved":       {"toolCallId": 's', "toolName": 's', "approved": 'b', "auto": 'b'},
	"error":                   {"error": 'o', "recoverable": 'b'},
	"warning":                 {"message": 's'},
	"status":                  {"level": 's', "message": 's'},
	"run_start":               {"runId": 's', "agentName": 's', "model": 's', "policy": 's'},
	"run_end":                 {"runId": 's', "ok": 'b', "stopReason": 's', "costUSD": 'n', "usage": 'o'},
}

func hlKind(v any) byte {
	switch v.(type) {
	case string:
		return 's'
	case float64:
		return 'n'
	case bool:
		return 'b'
	case map[string]any:
		return 'o'
	case []any:
		return 'a'
	}
	return '?'
}

func TestEventsSchemaAndOrder(t *testing.T) {
	t.Parallel()
	e := hlNewEnv(t)
	e.writeFile("long.txt", strings.Repeat("é long line of text ", 60))
	e.replayAgent("ev", hlEventsScript(), "read_file", "write_file")
	r := e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "ev", "--events", "all", "--approval-policy", "high-risk", "go"}})
	if r.code != 0 {
		t.Fatalf("exit %d: %s\n%s", r.code, r.stdout, r.stderr)
	}
	evs := r.events(t)
	seen := map[string]int{}
	for i, ev := range evs {
		typ, _ := ev["type"].(string)
		want, known := hlSchema[typ]
		if !known {
			t.Errorf("event %d: unknown type %q", i, typ)
			continue
		}
		seen[typ]++
		for field, kind := range want {
			if got := hlKind(ev[field]); got != kind {
				t.Errorf("%s: field %s is %c, want %c: %v", typ, field, got, kind, ev)
			}
		}
		for k, v := range ev {
			if s, ok := v.(string); ok && utf8.RuneCountInString(s) > 201 {
				t.Errorf("%s.%s has %d characters, over the 200 cut", typ, k, utf8.RuneCountInString(s))
			}
		}
	}
	for typ := range hlSchema {
		if typ == "error" || typ == "warning" || typ == "status" {
			continue
		}
		if seen[typ] == 0 {
			t.Errorf("no %s event", typ)
		}
	}
	// Lines start with the type and keep the struct's key order.
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "{") && !strings.HasPrefix(l, `{"type":`) {
			t.Errorf("line does not start with type: %.80s", l)
		}
	}
	// Truncation: the long read_file result is cut to 200 + "…".
	for _, ev := range hlOfType(evs, "tool_execution_complete") {
		s := ev["result"].(string)
		if strings.Contains(s, "long line") && (!strings.HasSuffix(s, "…") || utf8.RuneCountInString(s) != 201) {
			t.Errorf("long result not cut to 200+…: %d chars", utf8.RuneCountInString(s))
		}
	}
	// Ordering.
	pos := func(typ, callID string) int {
		for i, ev := range evs {
			if ev["type"] == typ && (callID == "" || ev["toolCallId"] == callID) {
				return i
			}
		}
		return -1
	}
	td := hlOfType(evs, "tools_detected")[0]
	if req, _ := td["toolsRequiringApproval"].([]any); len(req) != 1 || req[0] != "write_file" {
		t.Errorf("toolsRequiringApproval = %v", td["toolsRequiringApproval"])
	}
	var readID, writeID string
	for _, ev := range hlOfType(evs, "tool_call") {
		f := ev["toolCall"].(map[string]any)["function"].(map[string]any)
		id := ev["toolCall"].(map[string]any)["id"].(string)
		if f["name"] == "read_file" {
			readID = id
		} else {
			writeID = id
		}
	}
	detected := pos("tools_detected", "")
	if tc := pos("tool_call", ""); tc < detected {
		t.Errorf("tools_detected must open the batch: tool_call at %d, tools_detected at %d", tc, detected)
	}
	if s := pos("tool_execution_start", readID); !(detected < s && s < pos("tool_execution_complete", readID)) {
		t.Errorf("ungated order: detected %d start %d complete %d", detected, s, pos("tool_execution_complete", readID))
	}
	ar, rs, st, co := pos("approval_required", writeID), pos("approval_resolved", writeID), pos("tool_execution_start", writeID), pos("tool_execution_complete", writeID)
	if !(detected < ar && ar < rs && rs < st && st < co) {
		t.Errorf("gated order: detected %d required %d resolved %d start %d complete %d", detected, ar, rs, st, co)
	}
	if res := evs[rs]; res["approved"] != true || res["auto"] != true {
		t.Errorf("approval_resolved = %v, want approved and auto", res)
	}
	if ts := pos("thinking_start", ""); ts < 0 || ts > pos("thinking_chunk", "") || pos("thinking_complete", "") < pos("thinking_chunk", "") {
		t.Errorf("thinking events out of order")
	}
	if ts := pos("text_start", ""); ts < 0 || ts > pos("text_chunk", "") {
		t.Errorf("text_start after text_chunk")
	}
	if strings.Contains(r.stderr, "◉") || strings.Contains(r.stderr, "✔") {
		t.Errorf("text chatter mixed into the NDJSON stream")
	}
}

func TestEventsCategories(t *testing.T) {
	t.Parallel()
	e := hlNewEnv(t)
	e.writeFile("long.txt", "short")
	e.replayAgent("ev", hlEventsScript(), "read_file", "write_file")
	for _, tc := range []struct {
		cats    string
		allowed []string
	}{
		{"tools", []string{"tools_detected", "tool_call", "tool_execution_start", "tool_execution_complete"}},
		{"usage", []string{"stream_start", "usage_update", "complete"}},
		{"approval", []string{"approval_required", "approval_resolved"}},
		{"text", []string{"text_start", "text_chunk"}},
		{"reasoning", []string{"thinking_start", "thinking_chunk", "thinking_complete"}},
		{" Tools , USAGE ", []string{"tools_detected", "tool_call", "tool_execution_start", "tool_execution_complete", "stream_start", "usage_update", "complete"}},
	} {
		t.Run(tc.cats, func(t *testing.T) {
			r := e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "ev", "--events", tc.cats, "go"}})
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stdout)
			}
			got := map[string]bool{}
			for _, ev := range r.events(t) {
				got[ev["type"].(string)] = true
			}
			for typ := range got {
				always := []string{"error", "warning", "status", "run_start", "run_end"}
				if !contains(always, typ) && !contains(tc.allowed, typ) {
					t.Errorf("%s let through by %q", typ, tc.cats)
				}
			}
			for _, typ := range tc.allowed {
				if typ == "approval_required" || typ == "approval_resolved" {
					continue // unattended, no policy: the gate still reports
				}
				if !got[typ] {
					t.Errorf("%s missing for %q", typ, tc.cats)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestEventsStreamingRule: stdout is a pipe here, so streaming is off by
// default; asking for text or reasoning turns it on; the flags win.
func TestEventsStreamingRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		cfg  map[string]any
		want bool
	}{
		{"pipe: off", []string{"--events", "tools"}, nil, nil, false},
		{"text turns it on", []string{"--events", "text"}, nil, nil, true},
		{"reasoning turns it on", []string{"--events", "reasoning"}, nil, nil, true},
		{"all turns it on", []string{"--events", "all"}, nil, nil, true},
		{"--no-stream wins", []string{"--events", "text", "--no-stream"}, nil, nil, false},
		{"--stream wins", []string{"--stream"}, nil, nil, true},
		{"config true", nil, nil, map[string]any{"output": map[string]any{"streaming": map[string]any{"enabled": true}}}, true},
		{"config false beats events? no: events first", []string{"--events", "text"}, nil, map[string]any{"output": map[string]any{"streaming": map[string]any{"enabled": false}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := hlNewEnv(t)
			chat := hlNewChat(t, func(int, hlChatReq) hlReply {
				return hlReply{Content: "one two three", Chunks: []string{"one ", "two ", "three"}}
			})
			e.openAIAgent(chat, "s", false, tc.cfg)
			r := e.run(hlRunOpts{args: append(append([]string{"run", "--json", "--agent", "s"}, tc.args...), "hi"), env: tc.env})
			if r.code != 0 {
				t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
			}
			if got := chat.requests()[0].Stream; got != tc.want {
				t.Errorf("stream = %v, want %v", got, tc.want)
			}
			if r.envelope(t).Answer != "one two three" {
				t.Errorf("answer = %s", r.stdout)
			}
			if tc.want && contains(tc.args, "text") && len(hlOfType(r.events(t), "text_chunk")) != 3 {
				t.Errorf("want 3 text_chunk events:\n%s", r.stderr)
			}
		})
	}
}

// BenchmarkEventsThroughput streams 10,000 text chunks to a reader of
// stderr and reports text_chunk events per second end to end (model SSE →
// provider → bus → NDJSON on the pipe).
func BenchmarkEventsThroughput(b *testing.B) {
	const chunks = 10_000
	e := hlNewEnv(b)
	pieces := make([]string, chunks)
	for i := range pieces {
		pieces[i] = fmt.Sprintf("w%d ", i)
	}
	chat := hlNewChat(b, func(int, hlChatReq) hlReply {
		return hlReply{Content: strings.Join(pieces, ""), Chunks: pieces, Prompt: 1, Completion: chunks}
	})
	e.openAIAgent(chat, "bench", false, nil)
	b.ResetTimer()
	var total float64
	for b.Loop() {
		var got atomic.Int64
		r := e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "bench", "--events", "text", "go"},
			onStderr: func(l string) {
				if strings.HasPrefix(l, `{"type":"text_chunk"`) {
					got.Add(1)
				}
			}})
		if r.code != 0 || got.Load() != chunks {
			b.Fatalf("exit %d, %d of %d chunks", r.code, got.Load(), chunks)
		}
		total += r.elapsed.Seconds()
	}
	b.ReportMetric(float64(chunks)*float64(b.N)/total, "events/s")
}
