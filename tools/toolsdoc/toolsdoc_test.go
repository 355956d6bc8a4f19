package toolsdoc

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
)

func TestRender(t *testing.T) {
	schema := `{"type":"object","required":["path"],"properties":{
	  "path":{"type":"string","minLength":1,"description":"a | b\nc"},
	  "mode":{"type":"string","enum":["a","b"],"default":"a"},
	  "edits":{"type":"array","items":{"type":"object","properties":{"old":{"type":"string"}}}}}}`
	propose := tools.Tool{Name: "put", Description: "Put a file.", Schema: json.RawMessage(schema), Level: messages.LevelHighRisk}
	ts := tools.Pair(propose, nil, 10*time.Minute)
	ts = append(ts, tools.Tool{Name: "look", Description: "Look.", Level: messages.LevelReadOnly, LongRunning: true})
	reg, err := tools.NewRegistry(ts...)
	if err != nil {
		t.Fatal(err)
	}
	out := string(Render(reg, Section{Title: "Extra", Body: "rules"}))
	for _, want := range []string{
		"| [`put`](#put) | `high-risk` | pair: propose, then `execute_put` on approval | 3 min |",
		"| [`look`](#look) | `read-only` | none | none (long-running) |",
		"The approved step `execute_put` may run 10 min.",
		"| `path` | string | yes | length ≥ 1 | a \\| b c |",
		"| `mode` | string |  | one of `\"a\"`, `\"b\"`; default `\"a\"` |",
		"| `edits[].old` | string |",
		"| `edits` | array of object |",
		"## look\n\nTier `read-only`. Gate: none. Time limit: none (long-running).\n\nLook.\n\nNo arguments.",
		"## Extra\n\nrules",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "## execute_put") {
		t.Error("a hidden twin has a section of its own")
	}
}
