package writetools

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
)

func TestToolsArePairs(t *testing.T) {
	ts := Tools()
	want := []string{"write_file", "edit_file", "mkdir", "rm", "mv", "cp"}
	if len(ts) != 2*len(want) {
		t.Fatalf("%d tools, want %d", len(ts), 2*len(want))
	}
	reg, err := tools.NewRegistry(ts...)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range want {
		p, tw := ts[2*i], ts[2*i+1]
		t.Run(name, func(t *testing.T) {
			if p.Name != name || p.Hidden || p.Twin != "execute_"+name || p.Level != messages.LevelHighRisk {
				t.Fatalf("propose half: %+v", p)
			}
			if tw.Name != "execute_"+name || !tw.Hidden || tw.Level != messages.LevelHighRisk {
				t.Fatalf("twin: %+v", tw)
			}
			// Both schemas compile; the twin differs only by expectedState.
			for _, n := range []string{p.Name, tw.Name} {
				if err := reg.Validate(n, json.RawMessage(`{}`)); err == nil {
					t.Fatalf("%s accepts {} (required fields missing)", n)
				}
			}
			var ps, twS map[string]any
			must(t, json.Unmarshal(p.Schema, &ps))
			must(t, json.Unmarshal(tw.Schema, &twS))
			twProps := twS["properties"].(map[string]any)
			if _, ok := twProps["expectedState"]; !ok {
				t.Fatal("twin schema lacks expectedState")
			}
			if _, ok := ps["properties"].(map[string]any)["expectedState"]; ok {
				t.Fatal("propose schema offers expectedState to the model")
			}
			delete(twProps, "expectedState")
			if !reflect.DeepEqual(ps, twS) {
				t.Fatalf("schemas differ beyond expectedState:\n%s\n%s", p.Schema, tw.Schema)
			}
			if ps["additionalProperties"] != false {
				t.Fatal("schema is not strict")
			}
		})
	}
}

func TestSchemaValidation(t *testing.T) {
	reg, err := tools.NewRegistry(Tools()...)
	must(t, err)
	tests := []struct {
		tool, args string
		ok         bool
	}{
		{"write_file", `{"path":"a","content":""}`, true},
		{"write_file", `{"path":"","content":""}`, false},
		{"write_file", `{"path":"a","content":"","extra":1}`, false},
		{"write_file", `{"path":"a","content":"","expectedState":"x"}`, false},
		{"execute_write_file", `{"path":"a","content":"","expectedState":"x"}`, true},
		{"edit_file", `{"path":"a","edits":[]}`, false},
		{"edit_file", `{"path":"a","edits":[{"type":"insert","line":0,"content":"x"}]}`, true},
		{"edit_file", `{"path":"a","edits":[{"type":"insert","line":-1,"content":"x"}]}`, false},
		{"edit_file", `{"path":"a","edits":[{"type":"replace_lines","startLine":0,"endLine":1,"content":"x"}]}`, false},
		{"edit_file", `{"path":"a","edits":[{"type":"replace_pattern","pattern":"","replacement":"x"}]}`, false},
		{"edit_file", `{"path":"a","edits":[{"type":"bogus"}]}`, false},
		{"edit_file", `{"path":"a","edits":[{"type":"delete_lines","startLine":1,"endLine":1,"note":"ops are not strict"}]}`, true},
		{"mkdir", `{"path":"d","recursive":false}`, true},
		{"rm", `{"path":"d","recursive":"yes"}`, false},
		{"mv", `{"source":"a"}`, false},
		{"cp", `{"source":"a","destination":"b","force":true}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			err := reg.Validate(tt.tool, json.RawMessage(tt.args))
			if (err == nil) != tt.ok {
				t.Fatalf("Validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
