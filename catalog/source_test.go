package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jazz-run/jazz/provider/httpx"
)

const mirrorDoc = `{"openai": {"models": {"gpt-9": {"limit": {"context": 777000, "output": 1000}, "cost": {"input": 1, "output": 2}}}}}`

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func client() *http.Client {
	return httpx.New(httpx.Options{Limits: httpx.Limits{Connect: time.Second, FirstByte: 2 * time.Second, Idle: 2 * time.Second, MaxBytes: MaxBytes + 1}})
}

func TestRefreshMirrorsToCache(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(mirrorDoc))
	}))
	defer srv.Close()
	home := t.TempDir()
	s := Source{Home: home, Getenv: env(map[string]string{"JAZZ_MODELS_DEV_URL": srv.URL}), Client: client()}

	cat, stale, warn := s.Load(context.Background())
	if !stale || warn != "" || cat.Window("openai", "gpt-9") != 0 {
		t.Fatalf("before any fetch: stale %v, warn %q", stale, warn)
	}
	fresh, warn, err := s.Refresh(context.Background())
	if err != nil || warn != "" {
		t.Fatalf("Refresh: %v %q", err, warn)
	}
	if fresh.Window("openai", "gpt-9") != 777000 || fresh.Window("openai", "gpt-4o") != 128000 {
		t.Error("a refreshed catalog lies over the snapshot")
	}
	fi, err := os.Stat(s.CachePath())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache file: %v %v", fi, err)
	}
	cat, stale, warn = s.Load(context.Background())
	if stale || warn != "" || cat.Window("openai", "gpt-9") != 777000 {
		t.Errorf("after a fetch: stale %v, warn %q", stale, warn)
	}
	// An hour later the cache is stale but still used.
	s.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if cat, stale, _ = s.Load(context.Background()); !stale || cat.Window("openai", "gpt-9") != 777000 {
		t.Errorf("old cache: stale %v", stale)
	}
	if hits.Load() != 1 {
		t.Errorf("Load fetched: %d requests", hits.Load())
	}
}

func TestOfflineFetchesNothing(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	for _, v := range []string{"1", "true", "TRUE"} {
		s := Source{Home: t.TempDir(), Getenv: env(map[string]string{"JAZZ_OFFLINE": v, "JAZZ_MODELS_DEV_URL": srv.URL}), Client: client()}
		if _, _, err := s.Refresh(context.Background()); !errors.Is(err, ErrOffline) {
			t.Errorf("JAZZ_OFFLINE=%s: %v", v, err)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("offline made %d requests", hits.Load())
	}
}

func TestRefreshFailuresKeepTheCache(t *testing.T) {
	bodies := map[string]string{"/bad": `{"not": "a catalog"}`, "/junk": `<html>`}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/500" {
			w.WriteHeader(500)
			return
		}
		if r.URL.Path == "/stall" {
			<-r.Context().Done()
			return
		}
		_, _ = w.Write([]byte(bodies[r.URL.Path]))
	}))
	defer srv.Close()
	home := t.TempDir()
	if err := writeAtomic(filepath.Join(home, "cache", "models-dev.json"), []byte(mirrorDoc)); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/bad", "/junk", "/500", "/stall"} {
		s := Source{Home: home, Getenv: env(map[string]string{"JAZZ_MODELS_DEV_URL": srv.URL + path}), Client: client()}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, _, err := s.Refresh(ctx)
		cancel()
		if err == nil {
			t.Errorf("%s: no error", path)
		}
		if cat, _, _ := s.Load(context.Background()); cat.Window("openai", "gpt-9") != 777000 {
			t.Errorf("%s: the good cache was lost", path)
		}
	}
}

func TestBadCacheFallsBack(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "cache", "models-dev.json")
	if err := writeAtomic(path, []byte("{broken")); err != nil {
		t.Fatal(err)
	}
	s := Source{Home: home}
	cat, stale, warn := s.Load(context.Background())
	if !stale || !strings.Contains(warn, "built-in snapshot") || cat.Window("openai", "gpt-4o") != 128000 {
		t.Errorf("stale %v, warn %q", stale, warn)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, _, warn = s.Load(context.Background()); !strings.Contains(warn, "snapshot") {
		t.Errorf("a cache others may write must not be read: %q", warn)
	}
}

func TestLocalWindows(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/show":
			var req struct{ Model string }
			_ = decode(r, &req)
			switch req.Model {
			case "pinned":
				_, _ = w.Write([]byte(`{"parameters": "stop \"<|eot|>\"\nnum_ctx                        16384", "model_info": {"general.architecture": "llama", "llama.context_length": 131072}}`))
			default:
				_, _ = w.Write([]byte(`{"parameters": "", "model_info": {"qwen2.context_length": 32768}}`))
			}
		case "/api/ps":
			_, _ = w.Write([]byte(`{"models": [{"name": "loaded", "model": "loaded", "context_length": 4096}]}`))
		case "/props":
			_, _ = w.Write([]byte(`{"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	tests := []struct {
		base, model string
		want        LocalWindow
	}{
		{srv.URL + "/api", "pinned", LocalWindow{Server: 16384, Max: 131072}},
		{srv.URL, "loaded", LocalWindow{Server: 4096, Max: 32768}},
		{srv.URL + "/v1/", "cold", LocalWindow{Max: 32768}},
	}
	for _, tt := range tests {
		got, err := OllamaWindow(ctx, client(), tt.base, tt.model)
		if err != nil || got != tt.want {
			t.Errorf("OllamaWindow(%s, %s) = %+v, %v; want %+v", tt.base, tt.model, got, err, tt.want)
		}
	}
	if got, err := LlamacppWindow(ctx, client(), srv.URL+"/v1"); err != nil || got.Server != 8192 {
		t.Errorf("LlamacppWindow = %+v, %v", got, err)
	}
	if _, err := LlamacppWindow(ctx, client(), srv.URL+"/nothing/v1"); err == nil {
		t.Error("a server without /props must be an error")
	}
}

func decode(r *http.Request, v any) error { return json.NewDecoder(r.Body).Decode(v) }
