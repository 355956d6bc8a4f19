package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
)

// seen is what the server got.
type seen struct {
	url  string // the URL the client aimed at, before redirection
	auth string
	body map[string]any
}

// redirector sends every request, whatever its host, to a local test
// server, remembering where it was aimed: vendors' real base URLs are
// checked without leaving 127.0.0.1.
type redirector struct {
	target *url.URL
	mu     sync.Mutex
	aimed  []string
}

func (r *redirector) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.aimed = append(r.aimed, req.URL.String())
	r.mu.Unlock()
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host = r.target.Scheme, r.target.Host
	return http.DefaultTransport.RoundTrip(out)
}

func server(t *testing.T) (*http.Client, func() seen) {
	t.Helper()
	var mu sync.Mutex
	var last seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		last.auth = r.Header.Get("Authorization")
		last.body = nil
		json.Unmarshal(raw, &last.body)
		mu.Unlock()
		fmt.Fprint(w, `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	rd := &redirector{target: u}
	return &http.Client{Transport: rd}, func() seen {
		mu.Lock()
		defer mu.Unlock()
		s := last
		rd.mu.Lock()
		if n := len(rd.aimed); n > 0 {
			s.url = rd.aimed[n-1]
		}
		rd.mu.Unlock()
		return s
	}
}

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestOpen(t *testing.T) {
	tests := []struct {
		name, provider string
		s              Settings
		effort         string
		wantURL        string
		wantAuth       string
		wantBody       map[string]any // fields that must be in the body
		absent         []string       // fields that must not be
	}{
		{
			name: "openai key from env", provider: "openai",
			s:       Settings{Getenv: env("OPENAI_API_KEY", "sk-env")},
			wantURL: "https://api.openai.com/v1/chat/completions", wantAuth: "Bearer sk-env",
		},
		{
			name: "settings key beats env", provider: "openai",
			s:       Settings{APIKey: "sk-agent", Getenv: env("OPENAI_API_KEY", "sk-env")},
			wantURL: "https://api.openai.com/v1/chat/completions", wantAuth: "Bearer sk-agent",
		},
		{
			name: "OPENAI_BASE_URL", provider: "openai",
			s:       Settings{Getenv: env("OPENAI_API_KEY", "k", "OPENAI_BASE_URL", "https://proxy.example/v1/")},
			wantURL: "https://proxy.example/v1/chat/completions", wantAuth: "Bearer k",
		},
		{
			name: "config base_url beats env", provider: "openai",
			s:       Settings{BaseURL: "https://config.example/v1", Getenv: env("OPENAI_API_KEY", "k", "OPENAI_BASE_URL", "https://proxy.example/v1")},
			wantURL: "https://config.example/v1/chat/completions", wantAuth: "Bearer k",
		},
		{
			name: "openrouter reasoning object", provider: "openrouter", effort: "high",
			s:       Settings{Getenv: env("OPENROUTER_API_KEY", "or")},
			wantURL: "https://openrouter.ai/api/v1/chat/completions", wantAuth: "Bearer or",
			wantBody: map[string]any{"reasoning": map[string]any{"effort": "high"}},
			absent:   []string{"reasoning_effort"},
		},
		{
			name: "openrouter disable", provider: "openrouter", effort: "disable",
			s:       Settings{Getenv: env("OPENROUTER_API_KEY", "or")},
			wantURL: "https://openrouter.ai/api/v1/chat/completions", wantAuth: "Bearer or",
			wantBody: map[string]any{"reasoning": map[string]any{"enabled": false}},
		},
		{
			name: "groq", provider: "groq", s: Settings{Getenv: env("GROQ_API_KEY", "g")},
			wantURL: "https://api.groq.com/openai/v1/chat/completions", wantAuth: "Bearer g",
		},
		{
			name: "togetherai env name", provider: "togetherai", s: Settings{Getenv: env("TOGETHER_AI_API_KEY", "t")},
			wantURL: "https://api.together.xyz/v1/chat/completions", wantAuth: "Bearer t",
		},
		{
			name: "ollama default, no key, keep_alive and num_ctx", provider: "ollama",
			s:        Settings{Getenv: env(), KeepAlive: "30m", NumCtx: 16384},
			wantURL:  "http://localhost:11434/v1/chat/completions",
			wantBody: map[string]any{"keep_alive": "30m", "options": map[string]any{"num_ctx": float64(16384)}},
		},
		{
			name: "ollama base from env, numeric keep_alive, disable", provider: "ollama", effort: "disable",
			s:        Settings{Getenv: env("OLLAMA_BASE_URL", "http://gpu.lan:11434"), KeepAlive: "-1"},
			wantURL:  "http://gpu.lan:11434/v1/chat/completions",
			wantBody: map[string]any{"keep_alive": float64(-1), "reasoning_effort": "none"},
			absent:   []string{"options"},
		},
		{
			name: "ollama with a config key", provider: "ollama",
			s:       Settings{Getenv: env("OLLAMA_BASE_URL", "http://gpu.lan:11434/api/"), APIKey: "olk"},
			wantURL: "http://gpu.lan:11434/v1/chat/completions", wantAuth: "Bearer olk",
			absent: []string{"keep_alive", "options"},
		},
		{
			name: "llamacpp disable reasoning", provider: "llamacpp", effort: "disable",
			s:        Settings{Getenv: env()},
			wantURL:  "http://localhost:8080/v1/chat/completions",
			wantBody: map[string]any{"reasoning_budget": float64(0)},
		},
		{
			name: "llamacpp optional key and base", provider: "llamacpp", effort: "low",
			s:       Settings{Getenv: env("LLAMACPP_API_KEY", "lk", "LLAMACPP_BASE_URL", "http://box:9000/v1")},
			wantURL: "http://box:9000/v1/chat/completions", wantAuth: "Bearer lk",
			wantBody: map[string]any{"reasoning_effort": "low"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, last := server(t)
			tt.s.HTTPClient = client
			p, err := Open(context.Background(), tt.provider, "some-model", tt.s)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			resp, err := p.Chat(context.Background(), provider.Request{
				Model: "some-model", ReasoningEffort: tt.effort,
				Messages: []messages.ChatMessage{{Role: "user", Content: "hi"}},
			}, nil)
			if err != nil || resp.Message.Content != "ok" {
				t.Fatalf("Chat: %q %v", resp.Message.Content, err)
			}
			got := last()
			if got.url != tt.wantURL {
				t.Errorf("url = %q, want %q", got.url, tt.wantURL)
			}
			if got.auth != tt.wantAuth {
				t.Errorf("Authorization = %q, want %q", got.auth, tt.wantAuth)
			}
			if got.body["model"] != "some-model" {
				t.Errorf("model = %v", got.body["model"])
			}
			for k, v := range tt.wantBody {
				if !reflect.DeepEqual(got.body[k], v) {
					t.Errorf("body[%q] = %#v, want %#v", k, got.body[k], v)
				}
			}
			for _, k := range tt.absent {
				if _, ok := got.body[k]; ok {
					t.Errorf("body has %q: %v", k, got.body[k])
				}
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name, provider, model string
		want                  []string
		missingKey            bool
	}{
		{"openai without key", "openai", "gpt-4o", []string{"OPENAI_API_KEY", "llm.openai.api_key"}, true},
		{"gemini without key", "gemini", "gemini-2.5-pro", []string{"GOOGLE_GENERATIVE_AI_API_KEY"}, true},
		{"unknown provider", "acme", "m", []string{`unknown provider "acme"`}, false},
		{"empty model", "ollama", " ", []string{"no model"}, false},
		{"missing replay script", "replay", "nope.json", []string{"not found"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(context.Background(), tt.provider, tt.model, Settings{Getenv: env(), ReplayDir: t.TempDir()})
			if err == nil {
				t.Fatal("Open succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if errors.Is(err, ErrMissingKey) != tt.missingKey {
				t.Errorf("errors.Is(ErrMissingKey) = %v", !tt.missingKey)
			}
		})
	}
}

func TestOpenReplay(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "demo.json"), []byte(`{"turns":[{"text":"scripted"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Open(context.Background(), "replay", "demo", Settings{ReplayDir: dir})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	resp, err := p.Chat(context.Background(), provider.Request{Messages: []messages.ChatMessage{{Role: "user", Content: "x"}}}, nil)
	if err != nil || resp.Message.Content != "scripted" {
		t.Errorf("replay: %q %v", resp.Message.Content, err)
	}
}

func TestNamesCoverKnown(t *testing.T) {
	names := Names()
	for _, k := range provider.Known() {
		if !slices.Contains(names, k) {
			t.Errorf("provider %q has a model-id name but no registry entry", k)
		}
	}
	if KeyEnv("openai") != "OPENAI_API_KEY" || KeyEnv("ollama") != "" {
		t.Errorf("KeyEnv: %q %q", KeyEnv("openai"), KeyEnv("ollama"))
	}
}

func TestOllamaOpenAIBase(t *testing.T) {
	for in, want := range map[string]string{
		"http://localhost:11434/api":  "http://localhost:11434/v1",
		"http://localhost:11434/api/": "http://localhost:11434/v1",
		"http://localhost:11434":      "http://localhost:11434/v1",
		"http://h:1/v1":               "http://h:1/v1",
	} {
		if got := OllamaOpenAIBase(in); got != want {
			t.Errorf("OllamaOpenAIBase(%q) = %q, want %q", in, got, want)
		}
	}
}
