package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestCustomToolsValid(t *testing.T) {
	raw := `[
	 {"name": "note", "description": "Record a note.", "handler": {"type": "record"}},
	 {"name": "ack", "description": " Ack. ", "parameters": {"type": "object"}, "handler": {"type": "record", "response": "ok"}},
	 {"name": "deploy", "description": "Deploy.", "parameters": {"type": "object", "$schema": "x", "properties": {
	    "env": {"type": "string", "enum": ["dev", "prod"], "format": "dropped"},
	    "n": {"type": "integer", "minimum": 1},
	    "loose": {"description": "untyped"},
	    "tags": {"type": "array", "items": {"type": "string"}},
	    "opt": {"type": ["string", "null"]}},
	    "required": ["env"], "additionalProperties": false},
	  "handler": {"type": "command", "command": ["/bin/deploy", "--now"], "timeoutMs": 1500}}
	]`
	got, err := ParseCustomToolsJSON(json.RawMessage(raw), "config.customTools")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d tools", len(got))
	}
	if got[0].Handler.Response != DefaultRecordResponse || string(got[0].Parameters) != `{"properties":{},"type":"object"}` {
		t.Errorf("defaults: %+v %s", got[0].Handler, got[0].Parameters)
	}
	if got[1].Description != "Ack." || got[1].Handler.Response != "ok" {
		t.Errorf("ack = %+v", got[1])
	}
	d := got[2]
	if d.Handler.Type != HandlerCommand || strings.Join(d.Handler.Command, " ") != "/bin/deploy --now" || d.Handler.Timeout != 1500*time.Millisecond {
		t.Errorf("deploy handler = %+v", d.Handler)
	}
	want := `{"additionalProperties":false,"properties":{"env":{"enum":["dev","prod"],"type":"string"},"loose":{"additionalProperties":true,"description":"untyped","properties":{},"type":"object"},"n":{"minimum":1,"type":"integer"},"opt":{"type":["string","null"]},"tags":{"items":{"type":"string"},"type":"array"}},"required":["env"],"type":"object"}`
	if string(d.Parameters) != want {
		t.Errorf("reduced schema:\n got %s\nwant %s", d.Parameters, want)
	}
	// The same declaration twice is the same canonical form; a changed one is not.
	again, _ := ParseCustomToolsJSON(json.RawMessage(raw), "x")
	if again[2].Canonical != d.Canonical {
		t.Error("identical declarations differ")
	}
	changed, _ := ParseCustomToolsJSON(json.RawMessage(strings.Replace(raw, "1500", "1600", 1)), "x")
	if changed[2].Canonical == d.Canonical {
		t.Error("a changed timeout went unnoticed")
	}
	if def, _ := ParseCustomToolsJSON(json.RawMessage(`[{"name":"c1","description":"d","handler":{"type":"command","command":["x"]}}]`), "x"); def[0].Handler.Timeout != DefaultCustomTimeout {
		t.Errorf("default timeout = %v", def[0].Handler.Timeout)
	}
}

// Every rule of tools-and-approval.md §8 fails with a message naming the
// field.
func TestCustomToolsValidationErrors(t *testing.T) {
	ok := `"description": "d", "handler": {"type": "record"}`
	seventeen := make([]string, 17)
	for i := range seventeen {
		seventeen[i] = fmt.Sprintf(`{"name": "t%02d", %s}`, i, ok)
	}
	cases := []struct{ name, raw, want string }{
		{"not an array", `{"name": "x"}`, "config.customTools must be an array"},
		{"too many", "[" + strings.Join(seventeen, ",") + "]", "declares 17 tools; at most 16"},
		{"entry not an object", `["x"]`, "config.customTools[0] must be an object"},
		{"name missing", `[{` + ok + `}]`, "config.customTools[0].name must be a string"},
		{"name too short", `[{"name": "a", ` + ok + `}]`, "config.customTools[0].name a must match"},
		{"name upper case", `[{"name": "Deploy", ` + ok + `}]`, ".name Deploy must match"},
		{"name starts with digit", `[{"name": "1abc", ` + ok + `}]`, ".name 1abc must match"},
		{"name too long", `[{"name": "a` + strings.Repeat("b", 64) + `", ` + ok + `}]`, "must match ^[a-z][a-z0-9_]{1,63}$"},
		{"name with dash", `[{"name": "a-b", ` + ok + `}]`, `.name a-b must match`},
		{"mcp prefix", `[{"name": "mcp_fs_read", ` + ok + `}]`, "starts with mcp_, which is reserved"},
		{"duplicate", `[{"name": "ab", ` + ok + `}, {"name": "ab", ` + ok + `}]`, `config.customTools[1].name "ab" is already declared by config.customTools[0]`},
		{"description missing", `[{"name": "ab", "handler": {"type": "record"}}]`, ".description must be a string"},
		{"description empty", `[{"name": "ab", "description": "  ", "handler": {"type": "record"}}]`, ".description must be 1-1024 characters, got 0"},
		{"description too long", `[{"name": "ab", "description": "` + strings.Repeat("é", 1025) + `", "handler": {"type": "record"}}]`, "got 1025"},
		{"parameters not object", `[{"name": "ab", "parameters": [], ` + ok + `}]`, ".parameters must be a JSON Schema object"},
		{"parameters not type object", `[{"name": "ab", "parameters": {"type": "string"}, ` + ok + `}]`, `.parameters.type must be "object"`},
		{"bad property type", `[{"name": "ab", "parameters": {"type": "object", "properties": {"x": {"type": "date"}}}, ` + ok + `}]`, ".parameters.properties.x.type date is not one of"},
		{"property not schema", `[{"name": "ab", "parameters": {"type": "object", "properties": {"x": 3}}, ` + ok + `}]`, ".parameters.properties.x must be a schema object"},
		{"bad required", `[{"name": "ab", "parameters": {"type": "object", "required": [1]}, ` + ok + `}]`, ".parameters.required[0] must be a string"},
		{"empty enum", `[{"name": "ab", "parameters": {"type": "object", "properties": {"x": {"enum": []}}}, ` + ok + `}]`, ".parameters.properties.x.enum must be a non-empty array"},
		{"bad items", `[{"name": "ab", "parameters": {"type": "object", "properties": {"x": {"type": "array", "items": true}}}, ` + ok + `}]`, ".parameters.properties.x.items must be a schema object"},
		{"handler missing", `[{"name": "ab", "description": "d"}]`, ".handler is required"},
		{"handler not object", `[{"name": "ab", "description": "d", "handler": "record"}]`, ".handler must be an object"},
		{"handler type unknown", `[{"name": "ab", "description": "d", "handler": {"type": "http"}}]`, `.handler.type must be "record" or "command", got http`},
		{"handler type missing", `[{"name": "ab", "description": "d", "handler": {}}]`, `.handler.type must be "record" or "command"`},
		{"response too long", `[{"name": "ab", "description": "d", "handler": {"type": "record", "response": "` + strings.Repeat("x", 1025) + `"}}]`, ".handler.response must be at most 1024"},
		{"response not string", `[{"name": "ab", "description": "d", "handler": {"type": "record", "response": 1}}]`, ".handler.response must be a string"},
		{"command missing", `[{"name": "ab", "description": "d", "handler": {"type": "command"}}]`, ".handler.command must be a non-empty array"},
		{"command a string", `[{"name": "ab", "description": "d", "handler": {"type": "command", "command": "ls -l"}}]`, ".handler.command must be a non-empty array"},
		{"command empty", `[{"name": "ab", "description": "d", "handler": {"type": "command", "command": []}}]`, ".handler.command must be a non-empty array"},
		{"command empty word", `[{"name": "ab", "description": "d", "handler": {"type": "command", "command": ["ls", ""]}}]`, ".handler.command[1] must be a non-empty string"},
		{"command number", `[{"name": "ab", "description": "d", "handler": {"type": "command", "command": ["ls", 1]}}]`, ".handler.command[1] must be a non-empty string"},
		{"timeout zero", `[{"name": "ab", "description": "d", "handler": {"type": "command", "command": ["ls"], "timeoutMs": 0}}]`, ".handler.timeoutMs must be a whole number of milliseconds between 1 and 300000"},
		{"timeout too long", `[{"name": "ab", "description": "d", "handler": {"type": "command", "command": ["ls"], "timeoutMs": 300001}}]`, ".handler.timeoutMs must be"},
		{"timeout fraction", `[{"name": "ab", "description": "d", "handler": {"type": "command", "command": ["ls"], "timeoutMs": 1.5}}]`, ".handler.timeoutMs must be"},
		{"not json", `[{`, "config.customTools is not valid JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCustomToolsJSON(json.RawMessage(tc.raw), "config.customTools")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// The jazz config's own customTools are validated at load, naming the
// file; an untrusted project cannot declare any.
func TestConfigCustomToolsAtLoad(t *testing.T) {
	f := newFixture(t)
	global := f.global(t, `{"customTools": [{"name": "note", "description": "n", "handler": {"type": "record"}}]}`)
	cfg, _, err := f.load(t, "")
	if err != nil || len(cfg.CustomTools) != 1 || cfg.CustomTools[0].Name != "note" {
		t.Fatalf("cfg %+v, err %v", cfg, err)
	}
	f.global(t, `{"customTools": [{"name": "note", "description": "n", "handler": {"type": "shell"}}]}`)
	_, _, err = f.load(t, "")
	if err == nil || !strings.Contains(err.Error(), global) || !strings.Contains(err.Error(), "customTools[0].handler.type") {
		t.Fatalf("err = %v", err)
	}
	f.global(t, `{}`)
	f.project(t, `{"customTools": [{"name": "pwn", "description": "n", "handler": {"type": "command", "command": ["sh"]}}]}`)
	cfg, warns, err := f.load(t, "")
	if err != nil || len(cfg.CustomTools) != 0 || !strings.Contains(strings.Join(warns, "\n"), "customTools") {
		t.Fatalf("untrusted project: tools %v, warnings %v, err %v", cfg.CustomTools, warns, err)
	}
	f.trust(t)
	cfg, _, err = Load(context.Background(), LoadOptions{Home: f.home, Cwd: f.cwd, Getenv: env(f.env)})
	if err != nil || len(cfg.CustomTools) != 1 {
		t.Fatalf("trusted project: %v %v", cfg.CustomTools, err)
	}
}

// A command tool's objects take only the keys they name, at every depth
// (properties, array items, an additionalProperties schema), unless
// their author said otherwise; an untyped property stays open; a record
// tool's schema is left as JSON Schema reads it.
func TestCommandToolObjectsAreClosed(t *testing.T) {
	params := `{"type":"object","properties":{
		"list":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}}}},
		"map":{"type":"object","properties":{},"additionalProperties":{"type":"object","properties":{"v":{"type":"integer"}}}},
		"free":{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":true},
		"loose":{"description":"untyped"}}}`
	decls, err := ParseCustomToolsJSON(json.RawMessage(`[
	 {"name":"run","description":"Run.","parameters":`+params+`,"handler":{"type":"command","command":["true"]}},
	 {"name":"bare","description":"Run.","handler":{"type":"command","command":["true"]}},
	 {"name":"rec","description":"Record.","parameters":`+params+`,"handler":{"type":"record"}}]`), "customTools")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"properties":{` +
		`"free":{"additionalProperties":true,"properties":{"x":{"type":"string"}},"type":"object"},` +
		`"list":{"items":{"additionalProperties":false,"properties":{"k":{"type":"string"}},"type":"object"},"type":"array"},` +
		`"loose":{"additionalProperties":true,"description":"untyped","properties":{},"type":"object"},` +
		`"map":{"additionalProperties":{"additionalProperties":false,"properties":{"v":{"type":"integer"}},"type":"object"},"properties":{},"type":"object"}` +
		`},"type":"object"}`
	if got := string(decls[0].Parameters); got != want {
		t.Errorf("command tool:\n got %s\nwant %s", got, want)
	}
	if got := string(decls[1].Parameters); got != `{"additionalProperties":false,"properties":{},"type":"object"}` {
		t.Errorf("command tool without parameters: %s", got)
	}
	if got := string(decls[2].Parameters); strings.Contains(got, `"additionalProperties":false`) {
		t.Errorf("record tool closed: %s", got)
	}
}
