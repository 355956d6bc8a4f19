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
// with a provider.Error that says which bound it broke, retryable unless
// retrying would only bring the same flood again. Each case arms only the
// bound under test (the others are far away) and its server holds on
// until the client gives up, so a loaded machine's pauses can only make
// the call slower, never end it by another bound; the test asserts the
// bound's kind, not how long it took.
func TestBoundedCalls(t *testing.T) {
	const far = time.Minute
	chunk := data(`{"id":"c","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 200) + `"}}]}`)
	tests := []struct {
		name      string
		stream    bool
		lim       httpx.Limits
		answer    func(w http.ResponseWriter, r *http.Request)
		kind      httpx.Kind
		want      string
		retryable bool
	}{
		{"no answer", true, httpx.Limits{Connect: far, FirstByte: 200 * time.Millisecond, Idle: far, MaxBytes: 256 << 10},
			func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, httpx.KindFirstByte, "sent no response within", true},
		{"stalled stream", true, httpx.Limits{Connect: far, FirstByte: far, Idle: 200 * time.Millisecond, MaxBytes: 256 << 10},
			func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(chunk))
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}, httpx.KindIdle, "stopped sending", true},
		{"endless stream", true, httpx.Limits{Connect: far, FirstByte: far, Idle: far, MaxBytes: 256 << 10},
			func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for r.Context().Err() == nil {
					if _, err := w.Write([]byte(chunk)); err != nil {
						return
					}
				}
			}, httpx.KindSize, "larger than 262144 bytes", false},
		{"endless batch", false, httpx.Limits{Connect: far, FirstByte: far, Idle: far, MaxBytes: 256 << 10},
			func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(`{"id":"x","choices":[{"message":{"role":"assistant","content":"`))
				for r.Context().Err() == nil {
					if _, err := w.Write([]byte(strings.Repeat("y", 4096))); err != nil {
						return
					}
				}
			}, httpx.KindSize, "larger than", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.answer)
			c := New(Options{BaseURL: f.URL + "/v1", HTTPClient: httpx.New(httpx.Options{Limits: tt.lim})})
			// Only a bound that never fired lets this end the call.
			ctx, cancel := context.WithTimeout(context.Background(), 2*far)
			defer cancel()
			_, err := c.Chat(ctx, provider.Request{Model: "m", Stream: tt.stream, Messages: []messages.ChatMessage{{Role: messages.RoleUser, Content: "hi"}}}, nil)
			var pe *provider.Error
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.want) || pe.Retryable != tt.retryable {
				t.Fatalf("err = %v (%#v), want %q retryable=%v", err, pe, tt.want, tt.retryable)
			}
			if le, ok := httpx.AsLimit(err); !ok || le.Kind != tt.kind {
				t.Fatalf("err = %v, want the %s bound's LimitError", err, tt.kind)
			}
			if ctx.Err() != nil {
				t.Fatal("the bound did not end the call; the test's own deadline did")
			}
		})
	}
}
