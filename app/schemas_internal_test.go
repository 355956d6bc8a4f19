package app

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestEveryBuiltinSchemaIsWellFormed: the built-in tools' schemas are
// written as JSON text (no marshalling at run start), so nothing but this
// test checks them: each is one valid JSON object schema, closed to
// unknown properties, that the registry compiles, whose required names
// are properties, whose properties are typed (or alternatives); and a git or file twin's
// differs from its propose half's only by expectedState.
func TestEveryBuiltinSchemaIsWellFormed(t *testing.T) {
	reg, err := BuiltinRegistry(RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	schemaOf := func(name string) map[string]any {
		tl, _ := reg.Lookup(name)
		var doc map[string]any
		if err := json.Unmarshal(tl.Schema, &doc); err != nil {
			t.Errorf("%s: schema is not a JSON object: %v\n%s", name, err, tl.Schema)
			return nil
		}
		return doc
	}
	for _, name := range reg.Names() {
		tl, _ := reg.Lookup(name)
		doc := schemaOf(name)
		if doc == nil {
			continue
		}
		if err := reg.Validate(name, json.RawMessage(`{}`)); err != nil && strings.Contains(err.Error(), "bad schema") {
			t.Errorf("%s: %v", name, err)
		}
		if doc["type"] != "object" || doc["additionalProperties"] != false {
			t.Errorf("%s: want type object, additionalProperties false; got %v, %v", name, doc["type"], doc["additionalProperties"])
		}
		props, _ := doc["properties"].(map[string]any)
		req, _ := doc["required"].([]any)
		for _, r := range req {
			if _, ok := props[r.(string)]; !ok {
				t.Errorf("%s: requires %v, which is no property", name, r)
			}
		}
		for p, v := range props {
			s, _ := v.(map[string]any)
			if s["type"] == nil && s["anyOf"] == nil {
				t.Errorf("%s.%s: want a type (or anyOf), got %v", name, p, v)
			}
		}
		if tl.Twin == "" {
			continue
		}
		twin := schemaOf(tl.Twin)
		if twin == nil {
			continue
		}
		// A git or file twin takes its half's arguments and the
		// preview's expectedState, nothing else (the shell's twin has its
		// own shape, checked in shelltool).
		tp, _ := twin["properties"].(map[string]any)
		if _, ok := tp["expectedState"]; !ok {
			continue
		}
		if _, ok := props["expectedState"]; ok {
			t.Errorf("%s: offers expectedState to the model", name)
		}
		delete(tp, "expectedState")
		if !reflect.DeepEqual(doc, twin) {
			t.Errorf("%s and %s differ beyond expectedState", name, tl.Twin)
		}
	}
}
