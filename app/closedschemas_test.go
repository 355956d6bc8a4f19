package app_test

import (
	"encoding/json"
	"testing"

	"github.com/jazz-run/jazz/app"
)

// TestGatedToolsTakeOnlyDeclaredKeys: every built-in tool that acts (a
// gated tool or a hidden twin) names, at every object of its schema, all
// the keys it takes (additionalProperties false), so what the gate and a
// person judged by the schema is all a handler can be given. A tool added
// with an open object fails here rather than passing the key on unseen.
func TestGatedToolsTakeOnlyDeclaredKeys(t *testing.T) {
	reg, err := app.ReferenceRegistry()
	if err != nil {
		t.Fatal(err)
	}
	var walk func(name, at string, n map[string]any)
	walk = func(name, at string, n map[string]any) {
		if p, ok := n["properties"].(map[string]any); ok {
			if open, said := n["additionalProperties"]; !said || open != false {
				t.Errorf("%s: the object at %q takes keys it does not name (additionalProperties %v)", name, "$"+at, open)
			}
			for k, v := range p {
				if m, ok := v.(map[string]any); ok {
					walk(name, at+"."+k, m)
				}
			}
		}
		if m, ok := n["items"].(map[string]any); ok {
			walk(name, at+"[]", m)
		}
	}
	checked := 0
	for _, name := range reg.Names() {
		tl, _ := reg.Lookup(name)
		if !tl.Gated() && !tl.Hidden || tl.Passthrough {
			continue
		}
		var n map[string]any
		if err := json.Unmarshal(tl.Schema, &n); err != nil {
			t.Fatalf("%s: schema: %v", name, err)
		}
		walk(name, "", n)
		checked++
	}
	if checked < 20 {
		t.Fatalf("only %d acting tools checked", checked)
	}
}
