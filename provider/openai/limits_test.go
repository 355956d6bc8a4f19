package openai

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/provider/httpx"
)

// TestBoundedCalls: each way a server can hold a call forever ends it
// with a provider.Error that says which, retryable unless retrying
// would only bring the same flood again.
func TestBoundedCalls(t *testing.T) {
	lim := httpx.Limits{Connect: time.Second, FirstByte: 200 * time.Millisecond, Idle: 200 * time.Millisecond, MaxBytes: 256 << 10}
	chunk := data(`{"id":"c","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 200) + `"}}]}`)
	tests := []struct {
		name      string
		stream    bool
		answer    func(w http.ResponseWriter, r *http.Request)
		want      string
		retryable bool
	}{
		{"no answer", true, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, "sent no response within", true},
		{"stalled stream", true, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte(chunk))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, "stopped sending", true},
		{"endless stream", true, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for r.Context().Err() == nil {
				if _, err := w.Write([]byte(chunk)); err != nil {
					return
				}
			}
		}, "larger than 262144 bytes", false},
		{"endless batch", false, func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"id":"x","choices":[{"message":{"role":"assistant","content":"`))
			for r.Context().Err() == nil {
				if _, err := w.Write([]byte(strings.Repeat("y", 4096))); err != nil {
					return
				}
			}
		}, "larger than", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.answer)
			l := lim
			if !tt.retryable {
				// The size bound is under test: a loaded machine's pause
				// must not break the time bounds first.
				l.FirstByte, l.Idle = 5*time.Second, 5*time.Second
			}
			c := New(Options{BaseURL: f.URL + "/v1", HTTPClient: httpx.New(httpx.Options{Limits: l})})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := c.Chat(ctx, provider.Request{Model: "m", Stream: tt.stream, Messages: []messages.ChatMessage{{Role: messages.RoleUser, Content: "hi"}}}, nil)
			var pe *provider.Error
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.want) || pe.Retryable != tt.retryable {
				t.Fatalf("err = %v (%#v), want %q retryable=%v", err, pe, tt.want, tt.retryable)
			}
			if ctx.Err() != nil {
				t.Fatal("the bound did not end the call; the test's own deadline did")
			}
		})
	}
}
