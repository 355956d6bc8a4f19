package anthropic_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/provider/anthropic"
	"github.com/jazz-run/jazz/provider/httpx"
)

// TestOversizedAnswerIsNotRetried: an answer past httpx's byte bound is
// the size LimitError, not retryable (it would only come again), as for
// every provider; and a server that never answers breaks the first-byte
// bound, which is worth another attempt. Before the clients shared
// provider.Endpoint, this client reported both as a retryable network
// failure.
func TestOversizedAnswerIsNotRetried(t *testing.T) {
	const far = time.Minute
	for _, tc := range []struct {
		name      string
		lim       httpx.Limits
		answer    http.HandlerFunc
		kind      httpx.Kind
		retryable bool
	}{
		{"endless batch", httpx.Limits{Connect: far, FirstByte: far, Idle: far, MaxBytes: 256 << 10},
			func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"id":"x","type":"message","content":[{"type":"text","text":"`))
				for r.Context().Err() == nil {
					if _, err := w.Write([]byte(strings.Repeat("y", 4096))); err != nil {
						return
					}
				}
			}, httpx.KindSize, false},
		{"no answer", httpx.Limits{Connect: far, FirstByte: 200 * time.Millisecond, Idle: far, MaxBytes: 256 << 10},
			func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, httpx.KindFirstByte, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// Read whole, the server notices the client leave.
				_, _ = io.Copy(io.Discard, r.Body)
				tc.answer(w, r)
			}))
			defer srv.Close()
			c := anthropic.New(anthropic.Options{BaseURL: srv.URL, APIKey: "k", HTTPClient: httpx.New(httpx.Options{Limits: tc.lim})})
			ctx, cancel := context.WithTimeout(context.Background(), 2*far)
			defer cancel()
			_, err := c.Chat(ctx, provider.Request{Model: "claude-x", Messages: []messages.ChatMessage{{Role: messages.RoleUser, Content: "hi"}}}, nil)
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Retryable != tc.retryable {
				t.Fatalf("err = %v (%#v), want retryable=%v", err, pe, tc.retryable)
			}
			if le, ok := httpx.AsLimit(err); !ok || le.Kind != tc.kind {
				t.Fatalf("err = %v, want the %s bound's LimitError", err, tc.kind)
			}
		})
	}
}
