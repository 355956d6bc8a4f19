package humanio

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/jazz-run/jazz/messages"
)

// TestBridgeLineSaysHowFarCommandReaches: a bridge may answer
// "remember":"command", which allowlists the command's keys, and the key
// of `npm -v` is "npm": every later npm command. The terminal prompt says
// so beside its "c" choice; the bridge's line carried neither the keys
// nor the command's reach, so a person approving `npm -v` "always" there
// approved `npm publish` unseen. The line carries the keys the gate
// computed, exactly as they will be added.
func TestBridgeLineSaysHowFarCommandReaches(t *testing.T) {
	pub, out := &recorded{}, &lines{}
	b := NewBridge("r", pub, out)
	args, _ := json.Marshal(map[string]string{"command": "npm -v"})
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "call_1", ToolName: "execute_command",
		ExecuteToolName: "execute_execute_command", ExecuteArgs: args, Command: "npm -v", CommandKeys: []string{"npm"}})
	if len(out.got) != 1 {
		t.Fatalf("lines %v", out.got)
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(out.got[0]), &line); err != nil {
		t.Fatal(err)
	}
	if got := line["commandKeys"]; !reflect.DeepEqual(got, []any{"npm"}) {
		t.Errorf("commandKeys = %#v in %s", got, out.got[0])
	}
}
