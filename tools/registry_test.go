package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
)

const testSchema = `{
  "type": "object", "additionalProperties": false, "required": ["path"],
  "properties": {
    "path": {"type": "string", "minLength": 1},
    "lines": {"type": "integer", "minimum": 1, "maximum": 50},
    "mode": {"type": "string", "enum": ["a", "b"]},
    "tags": {"type": "array", "minItems": 1, "items": {"type": "string"}},
    "ops": {"type": "array", "items": {"anyOf": [
      {"type": "object", "required": ["type", "line"], "properties": {"type": {"const": "insert"}, "line": {"type": "integer", "minimum": 0}}},
      {"type": "object", "required": ["type", "text"], "properties": {"type": {"const": "append"}, "text": {"type": "string"}}}
    ]}}
  }
}`

func TestValidate(t *testing.T) {
	reg, err := NewRegistry(Tool{Name: "t", Schema: json.RawMessage(testSchema), Level: messages.LevelReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args string
		want string // "" = valid; else a substring of the error
	}{
		{`{"path":"x"}`, ""},
		{`{"path":"x","lines":3,"mode":"a","tags":["q"]}`, ""},
		{`{"path":"x","lines":3.0}`, ""},
		{`{}`, `(root): missing required property "path"`},
		{`{"path":""}`, "path: must not be empty"},
		{`{"path":1}`, "path: expected string, got integer"},
		{`{"path":"x","extra":true}`, `(root): unknown property "extra"`},
		{`{"path":"x","lines":0}`, "lines: must be >= 1"},
		{`{"path":"x","lines":51}`, "lines: must be <= 50"},
		{`{"path":"x","lines":2.5}`, "lines: expected integer, got number"},
		{`{"path":"x","lines":"3"}`, "lines: expected integer, got string"},
		{`{"path":"x","mode":"c"}`, `mode: must be one of "a", "b"`},
		{`{"path":"x","tags":[]}`, "tags: must have at least 1 item(s)"},
		{`{"path":"x","tags":[1]}`, "tags.0: expected string"},
		{`{"path":"x","ops":[{"type":"insert","line":0},{"type":"append","text":"t"}]}`, ""},
		{`{"path":"x","ops":[{"type":"insert","line":-1}]}`, "ops.0.line: must be >= 0"},
		{`{"path":"x","ops":[{"type":"nope"}]}`, "ops.0: does not match any of the allowed shapes"},
		{`{"path":1,"lines":0}`, "path: expected string, got integer; lines"},
	}
	for _, tc := range cases {
		t.Run(tc.args, func(t *testing.T) {
			err := reg.Validate("t", json.RawMessage(tc.args))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), strings.Split(tc.want, "; ")[0]) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPairHidesTwinAndSubsetKeepsIt(t *testing.T) {
	noop := func(context.Context, *Env, json.RawMessage) Result { return OK("ok") }
	pair := Pair(Tool{Name: "write_file", Level: messages.LevelHighRisk, Handler: noop}, noop, 15*time.Minute)
	reg, err := NewRegistry(append(pair, Tool{Name: "ls", Level: messages.LevelReadOnly, Handler: noop})...)
	if err != nil {
		t.Fatal(err)
	}
	twin, ok := reg.Lookup("execute_write_file")
	if !ok || !twin.Hidden || twin.Timeout != 15*time.Minute {
		t.Fatalf("twin: %+v", twin)
	}
	sub := reg.Subset([]string{"write_file", "execute_write_file", "ghost"})
	if got := sub.Names(); len(got) != 2 || got[0] != "write_file" || got[1] != "execute_write_file" {
		t.Fatalf("subset: %v", got)
	}
	for _, v := range sub.Visible() {
		if v.Hidden {
			t.Fatal("a twin is offered to the model")
		}
	}
	if _, err := NewRegistry(pair[0], pair[0]); err == nil {
		t.Fatal("duplicate names must fail")
	}
}
