package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDeferredSpec(t *testing.T) {
	d := NewDeferral()
	desc := "Query the database.\nLong details the model only needs once it uses the tool."
	tool := Tool{Name: "mcp_db_query", Description: desc, Schema: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string"}},"required":["sql"]}`), Deferral: d}
	s := tool.Spec()
	if s.Description != "Query the database." || string(s.Parameters) != OpenObject {
		t.Fatalf("deferred spec = %+v", s)
	}
	d.Load("mcp_db_query")
	if s := tool.Spec(); s.Description != desc || string(s.Parameters) != string(tool.Schema) {
		t.Fatalf("loaded spec = %+v", s)
	}
	if got := Summary(strings.Repeat("é", 200)); len([]rune(got)) != MaxSummary || !strings.HasSuffix(got, "…") {
		t.Fatalf("summary = %q", got)
	}
}

// A passthrough tool's schema is for display: the server judges the
// arguments, so nothing is rejected here.
func TestPassthroughSkipsValidation(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`)
	r, err := NewRegistry(Tool{Name: "strict", Schema: schema}, Tool{Name: "pass", Schema: schema, Passthrough: true})
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"n":"not a number","extra":1}`)
	if r.Validate("strict", args) == nil {
		t.Fatal("strict tool accepted bad arguments")
	}
	if err := r.Validate("pass", args); err != nil {
		t.Fatalf("passthrough tool validated: %v", err)
	}
}
