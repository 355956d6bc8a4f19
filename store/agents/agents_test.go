package agents

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func newStore(t *testing.T) *Store {
	return &Store{Home: t.TempDir(), Now: func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 6e6, time.UTC) }}
}

func TestCreateValidation(t *testing.T) {
	tests := []struct {
		name    string
		agent   Agent
		wantErr string
		check   func(Agent) bool
	}{
		{"minimal", Agent{Name: "dev", Model: "openai/gpt-4o-mini"}, "", func(a Agent) bool {
			return ValidID(a.ID) && a.Config.LLMProvider == "openai" && a.Config.LLMModel == "gpt-4o-mini" &&
				a.Config.Persona == "default" && a.CreatedAt == "2025-01-02T03:04:05.006Z" && a.UpdatedAt == a.CreatedAt
		}},
		{"model from provider+model fields", Agent{Name: "x", Config: Config{LLMProvider: "ollama", LLMModel: "llama3.2"}}, "", func(a Agent) bool {
			return a.Model == "ollama/llama3.2"
		}},
		{"openrouter keeps slashes", Agent{Name: "x", Model: " openrouter / anthropic/claude-3.5 "}, "", func(a Agent) bool {
			return a.Model == "openrouter/anthropic/claude-3.5" && a.Config.LLMModel == "anthropic/claude-3.5"
		}},
		{"google renamed", Agent{Name: "x", Model: "google/gemini-2.5-pro"}, "", func(a Agent) bool { return a.Config.LLMProvider == "gemini" }},
		{"tools trimmed and deduplicated", Agent{Name: "x", Model: "openai/gpt-4o", Config: Config{Tools: []string{" read_file", "read_file ", "grep"}}}, "", func(a Agent) bool {
			return strings.Join(a.Config.Tools, ",") == "read_file,grep"
		}},
		{"given id kept", Agent{ID: "my_agent-1", Name: "x", Model: "openai/gpt-4o"}, "", func(a Agent) bool { return a.ID == "my_agent-1" }},
		{"empty tool", Agent{Name: "x", Model: "openai/gpt-4o", Config: Config{Tools: []string{"grep", "  "}}}, "config.tools[1] is empty", nil},
		{"empty name", Agent{Name: "  ", Model: "openai/gpt-4o"}, "name must not be empty", nil},
		{"no model", Agent{Name: "x"}, "invalid model id", nil},
		{"colon model rejected", Agent{Name: "x", Model: "openai:gpt-4o"}, "invalid model id", nil},
		{"unknown provider", Agent{Name: "x", Model: "acme/model"}, "unknown provider", nil},
		{"disagreeing fields", Agent{Name: "x", Model: "openai/gpt-4o", Config: Config{LLMProvider: "groq"}}, "disagrees", nil},
		{"bad effort", Agent{Name: "x", Model: "openai/gpt-4o", Config: Config{ReasoningEffort: "max"}}, "reasoningEffort", nil},
		{"bad id", Agent{ID: "../etc", Name: "x", Model: "openai/gpt-4o"}, "must match", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			got, err := s.Create(context.Background(), tt.agent)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if entries, _ := os.ReadDir(filepath.Join(s.Home, "agents")); len(entries) != 0 {
					t.Fatalf("a rejected agent left files: %v", entries)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(got) {
				t.Fatalf("got %+v", got)
			}
			back, err := s.Lookup(context.Background(), got.ID)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(back)
			if string(a) != string(b) {
				t.Fatalf("round trip:\n%s\n%s", a, b)
			}
		})
	}
}

func TestCreateUniqueness(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if _, err := s.Create(ctx, Agent{ID: "a1", Name: "dev", Model: "openai/gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, Agent{Name: "dev", Model: "openai/gpt-4o"}); err == nil || !strings.Contains(err.Error(), `an agent named "dev" already exists`) {
		t.Fatalf("duplicate name: err = %v", err)
	}
	if _, err := s.Create(ctx, Agent{ID: "a1", Name: "other", Model: "openai/gpt-4o"}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("duplicate id: err = %v", err)
	}
}

func TestFileFormat(t *testing.T) {
	s := newStore(t)
	a, err := s.Create(context.Background(), Agent{Name: "dev", Description: "helps", Model: "openai/gpt-4o",
		Config: Config{Temperature: new(0.2), NumCtx: new(8192), LLMAPIKeys: map[string]string{"openai": "sk"}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.Home, "agents", a.ID+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "name", "description", "model", "config", "createdAt", "updatedAt"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("file lacks %q: %s", k, data)
		}
	}
	cfg := raw["config"].(map[string]any)
	if cfg["temperature"] != 0.2 || cfg["numCtx"] != 8192.0 || cfg["llmProvider"] != "openai" || cfg["persona"] != "default" {
		t.Errorf("config = %v", cfg)
	}
	if _, ok := cfg["tools"]; ok {
		t.Errorf("absent tools written: %s", data)
	}
	if runtime.GOOS != "windows" {
		st, _ := os.Stat(path)
		if st.Mode().Perm() != 0o600 {
			t.Errorf("mode %04o", st.Mode().Perm())
		}
	}
	if leftovers, _ := filepath.Glob(filepath.Join(s.Home, "agents", ".*")); len(leftovers) != 0 {
		t.Errorf("temp files left: %v", leftovers)
	}
}

func TestLookupListDelete(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if _, _, err := s.List(ctx); err != nil {
		t.Fatalf("missing dir must list empty: %v", err)
	}
	b, _ := s.Create(ctx, Agent{ID: "b", Name: "beta", Model: "openai/gpt-4o"})
	a, _ := s.Create(ctx, Agent{ID: "beta", Name: "alpha", Model: "openai/gpt-4o"})
	dir := filepath.Join(s.Home, "agents")
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"id": "broken", `), 0o600)
	os.WriteFile(filepath.Join(dir, "badtools.json"), []byte(`{"id":"badtools","name":"t","model":"openai/gpt-4o","config":{"tools":"grep"}}`), 0o600)

	t.Run("list skips corrupt files with warnings", func(t *testing.T) {
		list, warns, err := s.List(ctx)
		if err != nil || len(list) != 2 || list[0].Name != "alpha" || list[1].Name != "beta" {
			t.Fatalf("list %+v err %v", list, err)
		}
		if len(warns) != 2 || !strings.Contains(strings.Join(warns, "\n"), "broken.json") {
			t.Fatalf("warnings %q", warns)
		}
	})
	t.Run("id wins over name", func(t *testing.T) {
		got, err := s.Lookup(ctx, "beta")
		if err != nil || got.ID != a.ID {
			t.Fatalf("got %+v err %v", got, err)
		}
	})
	t.Run("by exact name", func(t *testing.T) {
		got, err := s.Lookup(ctx, "alpha")
		if err != nil || got.ID != "beta" {
			t.Fatalf("got %+v err %v", got, err)
		}
		if _, err := s.Lookup(ctx, "ALPHA"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("name match must be exact: %v", err)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		_, err := s.Lookup(ctx, "ghost")
		if err == nil || !strings.HasPrefix(err.Error(), "No agent found with ID: ghost") || !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v", err)
		}
		if _, err := newStore(t).Lookup(ctx, "ghost"); err == nil || err.Error() != "No agent found with ID: ghost" {
			t.Fatalf("empty store: err = %v", err)
		}
	})
	t.Run("a name an unreadable file may hold is not hidden", func(t *testing.T) {
		// badtools.json names its agent "t" but breaks a rule: looking "t"
		// up must say so, not only that no agent exists.
		_, err := s.Lookup(ctx, "t")
		if err == nil || !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v", err)
		}
		for _, f := range []string{"badtools.json", "broken.json", "could not be read"} {
			if !strings.Contains(err.Error(), f) {
				t.Fatalf("error does not mention %s: %v", f, err)
			}
		}
	})
	t.Run("corrupt file is a clear error", func(t *testing.T) {
		_, err := s.Lookup(ctx, "broken")
		if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), filepath.Join(dir, "broken.json")) {
			t.Fatalf("err = %v", err)
		}
		if _, err := s.Lookup(ctx, "badtools"); err == nil || !strings.Contains(err.Error(), "tools") {
			t.Fatalf("non-array tools: err = %v", err)
		}
	})
	t.Run("update keeps createdAt", func(t *testing.T) {
		s.Now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
		b.Description = "second"
		got, err := s.Update(ctx, b)
		if err != nil || got.CreatedAt != b.CreatedAt || got.UpdatedAt != "2026-01-01T00:00:00.000Z" {
			t.Fatalf("got %+v err %v", got, err)
		}
		b.Name = "alpha"
		if _, err := s.Update(ctx, b); err == nil {
			t.Fatal("rename onto a used name accepted")
		}
	})
	t.Run("delete", func(t *testing.T) {
		if err := s.Delete(ctx, "alpha"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Lookup(ctx, "alpha"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("still there: %v", err)
		}
		if err := s.Delete(ctx, "alpha"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
	})
}
