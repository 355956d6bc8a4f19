package catalog

import (
	"strings"
	"testing"
)

func TestSnapshotParses(t *testing.T) {
	c, err := Parse(snapshotJSON)
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() < 40 {
		t.Fatalf("snapshot has %d models, want a real table", c.Len())
	}
	for key, m := range c.models {
		if !m.Price.Known() {
			t.Errorf("%s: no input or output price", key)
		}
		if !strings.HasSuffix(key, "/*") && (m.Context <= 0 || m.Output <= 0 || m.Output > m.Context) {
			t.Errorf("%s: window %d, output %d", key, m.Context, m.Output)
		}
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		provider, model string
		ok              bool
		window          int
	}{
		{"openai", "gpt-4o", true, 128000},
		{"OpenAI", " GPT-4O-MINI ", true, 128000},
		{"openai", "gpt-4o-2024-08-06", true, 128000},
		{"google", "gemini-2.5-pro", true, 1048576}, // the old name
		{"gemini", "gemini-2.5-flash", true, 1048576},
		{"ollama", "llama3.2:3b", true, 0}, // priced free, window from the server
		{"openai", "no-such-model", false, 0},
	}
	for _, tt := range tests {
		m, ok := Snapshot().Lookup(tt.provider, tt.model)
		if ok != tt.ok || m.Context != tt.window {
			t.Errorf("Lookup(%s, %s) = %+v, %v; want ok %v, window %d", tt.provider, tt.model, m, ok, tt.ok, tt.window)
		}
	}
}

func TestWindowAcrossProviders(t *testing.T) {
	tests := []struct {
		provider, model string
		want            int
	}{
		{"openrouter", "anthropic/claude-sonnet-4", 200000},  // its own entry
		{"openrouter", "anthropic/claude-haiku-4-5", 200000}, // anthropic's entry
		{"openrouter", "x-ai/grok-3", 131072},                // vendor prefix renamed
		{"togetherai", "gpt-4.1", 1047576},                   // same id elsewhere
		{"openai", "unheard-of", 0},
	}
	for _, tt := range tests {
		if got := Snapshot().Window(tt.provider, tt.model); got != tt.want {
			t.Errorf("Window(%s, %s) = %d, want %d", tt.provider, tt.model, got, tt.want)
		}
	}
}

func TestParseModelsDevShape(t *testing.T) {
	doc := `{
	 "google": {"id": "google", "models": {"gemini-9": {"id": "gemini-9", "limit": {"context": 2000000, "output": 8192}, "cost": {"input": 1, "output": -1}}}},
	 "vercel": {"models": {"m": {"tool_call": false, "temperature": false, "modalities": {"input": ["text", "image"]}, "limit": {"context": 1e15}}}},
	 "broken": {"models": {"x": "not an object", "y": {"limit": {"context": 5000}}}},
	 "alsobroken": 7
	}`
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	g, ok := c.Lookup("gemini", "gemini-9")
	if !ok || g.Context != 2000000 || g.Output != 8192 || !g.Tools || !g.Temperature {
		t.Fatalf("gemini-9 = %+v, %v", g, ok)
	}
	if g.Price.Input == nil || *g.Price.Input != 1 || g.Price.Output != nil {
		t.Errorf("a negative price must read as unknown: %+v", g.Price)
	}
	if len(g.Input) != 1 || g.Input[0] != "text" {
		t.Errorf("unknown modalities = %v, want text only", g.Input)
	}
	v, ok := c.Lookup("ai_gateway", "m")
	if !ok || v.Tools || v.Temperature || v.Context != 0 || len(v.Input) != 2 {
		t.Errorf("vercel/m = %+v, %v (an absurd window must read as unknown)", v, ok)
	}
	if y, ok := c.Lookup("broken", "y"); !ok || y.Context != 5000 {
		t.Errorf("one bad entry must not cost its neighbours: %+v, %v", y, ok)
	}
	for _, bad := range []string{``, `[]`, `{}`, `{"p": {"models": {}}}`, `not json`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestOverLayers(t *testing.T) {
	top, err := Parse([]byte(`{"openai": {"models": {"gpt-4o": {"limit": {"context": 256000, "output": 1}}, "gpt-new": {"limit": {"context": 999, "output": 1}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := Snapshot().Over(top)
	if w := c.Window("openai", "gpt-4o"); w != 256000 {
		t.Errorf("fresh layer must win: %d", w)
	}
	if w := c.Window("openai", "gpt-new"); w != 999 {
		t.Errorf("new model: %d", w)
	}
	if w := c.Window("anthropic", "claude-opus-4-1"); w != 200000 {
		t.Errorf("snapshot beneath: %d", w)
	}
	if Snapshot().Over(nil) != Snapshot() {
		t.Error("Over(nil) must be the catalog itself")
	}
}
