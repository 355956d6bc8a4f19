package retry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/provider/openai"
	"github.com/jazz-run/jazz/provider/retry"
)

// A real Chat Completions server whose stream breaks, then rate-limits the
// batch fallback once, then answers: the policy must ride through all of it.
func TestChatOverHTTP(t *testing.T) {
	var mu sync.Mutex
	var streams []bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct{ Stream bool }
		json.Unmarshal(raw, &body)
		mu.Lock()
		streams = append(streams, body.Stream)
		n := len(streams)
		mu.Unlock()
		switch n {
		case 1: // a stream cut short
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n")
		case 2:
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"slow down"}}`)
		default:
			fmt.Fprint(w, `{"id":"b","choices":[{"index":0,"message":{"role":"assistant","content":"whole answer"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`)
		}
	}))
	defer srv.Close()

	c := openai.New(openai.Options{BaseURL: srv.URL, HTTPClient: srv.Client()})
	var notices []retry.Notice
	opts := retry.Options{
		Attempts: 11,
		Notify:   func(n retry.Notice) { notices = append(notices, n) },
		Sleep:    func(ctx context.Context, d time.Duration) error { return nil },
	}
	var deltas []string
	resp, err := retry.Chat(context.Background(), c, provider.Request{
		Model: "m", Stream: true, Messages: []messages.ChatMessage{{Role: "user", Content: "hi"}},
	}, func(d provider.Delta) { deltas = append(deltas, d.Text) }, opts)
	if err != nil || resp.Message.Content != "whole answer" {
		t.Fatalf("Chat: %q %v", resp.Message.Content, err)
	}
	if fmt.Sprint(streams) != "[true false false]" {
		t.Errorf("requests streamed = %v, want [true false false]", streams)
	}
	want := []string{
		"coder hit a network issue (the connection closed mid-answer). Trying again (attempt 1 of up to 11)…",
		"coder hit a rate limit (slow down). Trying again (attempt 2 of up to 11)…",
	}
	if len(notices) != len(want) || !notices[0].Fallback {
		t.Fatalf("notices = %+v", notices)
	}
	for i, n := range notices {
		if got := n.Message("coder"); got != want[i] {
			t.Errorf("notice %d = %q, want %q", i, got, want[i])
		}
	}
}
