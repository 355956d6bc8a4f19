package events_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/messages"
)

// hugeEvents are events whose model-chosen parts make a long line even
// with every string cut: a call's arguments with many or long keys, deep
// or wide, a batch naming thousands of calls, a response with thousands
// of tool calls.
func hugeEvents() []messages.Event {
	var wide, longKeys bytes.Buffer
	wide.WriteString("{")
	longKeys.WriteString("{")
	for i := range 20000 {
		if i > 0 {
			wide.WriteString(",")
			longKeys.WriteString(",")
		}
		fmt.Fprintf(&wide, `"k%d":[%d,"\u0085\u202e%s"]`, i, i, strings.Repeat("x", 300))
		fmt.Fprintf(&longKeys, `"%s%d":1`, strings.Repeat("\u0085", 500), i)
	}
	wide.WriteString("}")
	longKeys.WriteString("}")
	deep := strings.Repeat(`{"`+strings.Repeat("k", 300)+`":[`, 3000) + "1" + strings.Repeat(`]}`, 3000)
	names := make([]string, 20000)
	calls := make([]messages.EventToolCallBody, 5000)
	for i := range names {
		names[i] = fmt.Sprintf("tool_%d_%s", i, strings.Repeat("n", 190))
	}
	for i := range calls {
		calls[i] = messages.EventToolCallBody{ID: fmt.Sprint(i), Type: "function", Function: messages.EventFunctionBody{Name: "t", Arguments: strings.Repeat("a", 300)}}
	}
	return []messages.Event{
		{Type: messages.EventToolExecutionStart, ToolName: "t", Arguments: json.RawMessage(wide.Bytes())},
		{Type: messages.EventToolExecutionStart, ToolName: "t", Arguments: json.RawMessage(longKeys.Bytes())},
		{Type: messages.EventToolExecutionStart, ToolName: "t", Arguments: json.RawMessage(deep)},
		{Type: messages.EventToolsDetected, ToolNames: names},
		{Type: messages.EventComplete, Response: &messages.EventResponse{ID: "r", Model: "m", Content: "c", ToolCalls: calls}},
	}
}

// TestRenderedLineIsBounded: whatever a model puts in an event, its line
// is one JSON object under the 64 KiB a bufio.Scanner reads, with its type
// and leading fields intact, nothing a terminal would hide shown raw, and
// what was left out marked.
func TestRenderedLineIsBounded(t *testing.T) {
	for _, ev := range hugeEvents() {
		line := events.Render(ev)
		if len(line) >= 64<<10 {
			t.Errorf("%s: a line of %d bytes", ev.Type, len(line))
		}
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Errorf("%s: not one line", ev.Type)
		}
		var back map[string]any
		if err := json.Unmarshal(line, &back); err != nil {
			t.Fatalf("%s: not a JSON object: %v", ev.Type, err)
		}
		if back["type"] != ev.Type {
			t.Errorf("%s: the type became %v", ev.Type, back["type"])
		}
		if !bytes.Contains(line, []byte(`"…"`)) {
			t.Errorf("%s: nothing says what was left out", ev.Type)
		}
		if bytes.Contains(line, []byte("\u0085")) || bytes.Contains(line, []byte("\u202e")) {
			t.Errorf("%s: a hidden character shown raw", ev.Type)
		}
	}
}

// TestBoundLineKeepsShortLines: a line within the bound is left exactly
// as it is, and a bounded line keeps its members in order.
func TestBoundLineKeepsShortLines(t *testing.T) {
	ev := messages.Event{Type: messages.EventToolExecutionStart, ToolName: "t", Arguments: json.RawMessage(`{"b":1,"a":[true,null,1.50,"x"]}`)}
	data, _ := json.Marshal(ev)
	if got := events.BoundLine(data, events.MaxLine); !bytes.Equal(got, data) {
		t.Errorf("BoundLine changed a short line: %s", got)
	}
	got := events.BoundLine(data, 40)
	if !json.Valid(got) || !bytes.HasPrefix(got, []byte(`{"type":"tool_execution_start"`)) || !bytes.Contains(got, []byte(`"…":"…"`)) {
		t.Errorf("BoundLine(40) = %s", got)
	}
	if got := events.BoundLine([]byte(`{"type":`+strings.Repeat(" ", 100)), 40); !json.Valid(got) {
		t.Errorf("BoundLine on broken input = %s", got)
	}
}
