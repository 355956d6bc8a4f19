package httpx

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// silentListener accepts connections, reads what is sent and never
// answers: a server that took the request and hung.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, c *http.Client, ctx context.Context, url string) ([]byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func TestBounds(t *testing.T) {
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {}\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer stall.Close()
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("data: {\"x\":1}\n\n", 64))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer endless.Close()
	fine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("hello"))
	}))
	defer fine.Close()

	// Each case holds tight only the bound it tests: a loaded machine may
	// pause a server or the reader for longer than a short bound, and the
	// other bounds must not fire first.
	lim := Limits{Connect: 5 * time.Second, FirstByte: 300 * time.Millisecond, Idle: 300 * time.Millisecond, MaxBytes: 1 << 20}
	c := New(Options{Limits: lim})
	tests := []struct {
		name string
		url  string
		kind Kind
	}{
		{"accepts and never answers", silentListener(t), KindFirstByte},
		{"headers then stalls", stall.URL, KindIdle},
		{"streams forever", endless.URL, KindSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := c
			if tt.kind == KindSize {
				c = New(Options{Limits: Limits{Connect: 5 * time.Second, FirstByte: 5 * time.Second, Idle: 5 * time.Second, MaxBytes: lim.MaxBytes}})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			data, err := get(t, c, ctx, tt.url)
			le, ok := AsLimit(err)
			if !ok || le.Kind != tt.kind {
				t.Fatalf("err = %v, want a %s LimitError", err, tt.kind)
			}
			if tt.kind == KindSize && int64(len(data)) != lim.MaxBytes {
				t.Errorf("read %d bytes before the cap error, want exactly %d", len(data), lim.MaxBytes)
			}
			if le.Retryable() == (tt.kind == KindSize) {
				t.Errorf("%s: Retryable = %v", tt.kind, le.Retryable())
			}
			if !strings.Contains(le.Error(), "127.0.0.1") {
				t.Errorf("message should name the server: %q", le.Error())
			}
		})
	}
	t.Run("a good answer passes", func(t *testing.T) {
		data, err := get(t, c, context.Background(), fine.URL)
		if err != nil || string(data) != "hello" {
			t.Fatalf("got %q, %v", data, err)
		}
	})
	t.Run("the caller's cancel is not a limit", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := get(t, New(Options{Limits: Limits{FirstByte: time.Minute, Idle: time.Minute}}), ctx, stall.URL)
		if _, ok := AsLimit(err); ok || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("zero limits bound nothing", func(t *testing.T) {
		data, err := get(t, New(Options{}), context.Background(), fine.URL)
		if err != nil || string(data) != "hello" {
			t.Fatalf("got %q, %v", data, err)
		}
	})
}

func TestProxy(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	req := func(u string) *http.Request {
		r, _ := http.NewRequest(http.MethodGet, u, nil)
		return r
	}
	f := ProxyFunc(env(map[string]string{"https_proxy": "http://proxy.corp:3128", "NO_PROXY": "internal.corp"}))
	if u, _ := f(req("https://api.openai.com/v1")); u == nil || u.Host != "proxy.corp:3128" {
		t.Errorf("https via proxy: %v", u)
	}
	if u, _ := f(req("https://llm.internal.corp/v1")); u != nil {
		t.Errorf("NO_PROXY host proxied: %v", u)
	}
	if u, _ := f(req("http://127.0.0.1:11434/api")); u != nil {
		t.Errorf("loopback proxied: %v", u)
	}
	g := ProxyFunc(env(map[string]string{"ALL_PROXY": "http://all:8080"}))
	if u, _ := g(req("http://models.dev/api.json")); u == nil || u.Host != "all:8080" {
		t.Errorf("ALL_PROXY fallback: %v", u)
	}
	socks := env(map[string]string{"ALL_PROXY": "socks5://127.0.0.1:1080"})
	if ProxyFunc(socks) != nil {
		t.Error("a SOCKS proxy must not be used")
	}
	if w := ProxyWarnings(socks); len(w) != 1 || !strings.Contains(w[0], "ALL_PROXY") {
		t.Errorf("warnings = %v", w)
	}
	if ProxyFunc(nil) != nil || len(ProxyWarnings(env(nil))) != 0 {
		t.Error("no environment, no proxy")
	}
}

// Calls at once to one model API (a worker's tasks, a run's parallel
// sub-agents) keep their connections for the next ones: Go's default
// keeps two idle per host, so each burst of four dialled (and, over TLS,
// shook hands) twice again.
func TestParallelCallsKeepTheirConnections(t *testing.T) {
	const n = 4
	var mu sync.Mutex
	dialled := 0
	arrived := make(chan struct{}, n)
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			dialled++
			mu.Unlock()
		}
	}
	srv.Start()
	defer srv.Close()
	c := New(Options{Limits: Limits{Connect: 5 * time.Second, FirstByte: 20 * time.Second, Idle: 20 * time.Second, MaxBytes: 1 << 20}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for burst := 1; burst <= 3; burst++ {
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := get(t, c, ctx, srv.URL); err != nil {
					t.Error(err)
				}
			}()
		}
		// All n in flight at once, so they need n connections.
		for i := 0; i < n; i++ {
			select {
			case <-arrived:
			case <-ctx.Done():
				t.Fatal("the calls did not all arrive")
			}
		}
		for i := 0; i < n; i++ {
			release <- struct{}{}
		}
		wg.Wait()
	}
	mu.Lock()
	defer mu.Unlock()
	if dialled != n {
		t.Fatalf("three bursts of %d calls at once dialled %d connections; want %d", n, dialled, n)
	}
}
