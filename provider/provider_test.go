package provider

import (
	"errors"
	"strings"
	"testing"
)

func TestParseModelID(t *testing.T) {
	cases := []struct {
		id, provider, model, err string
	}{
		{"openai/gpt-4o-mini", "openai", "gpt-4o-mini", ""},
		{" openrouter / anthropic/claude-3.5 ", "openrouter", "anthropic/claude-3.5", ""},
		{"openrouter/meta/llama:free", "openrouter", "meta/llama:free", ""},
		{"replay//tmp/demo.json", "replay", "/tmp/demo.json", ""},
		{"anthropic:claude-3-5-sonnet", "", "", "expected provider/model"},
		{"openai/", "", "", "expected provider/model"},
		{"/gpt-4o", "", "", "expected provider/model"},
		{"acme/model", "", "", `unknown provider "acme"`},
	}
	for _, tc := range cases {
		p, m, err := ParseModelID(tc.id)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseModelID(%q) err = %v, want %q", tc.id, err, tc.err)
			}
			continue
		}
		if err != nil || p != tc.provider || m != tc.model {
			t.Errorf("ParseModelID(%q) = %q, %q, %v", tc.id, p, m, err)
		}
	}
}

func TestClassifyStatus(t *testing.T) {
	cases := []struct {
		status    int
		retryable bool
		reason    string
	}{
		{400, false, ""}, {401, false, ""}, {403, false, ""}, {404, false, ""},
		{429, true, "rate limit"}, {500, true, "server error (500)"}, {503, true, "server error (503)"},
	}
	for _, tc := range cases {
		e := ClassifyStatus(tc.status, "boom")
		if e.Retryable != tc.retryable || e.Reason != tc.reason || IsRetryable(e) != tc.retryable {
			t.Errorf("%d: %+v", tc.status, e)
		}
	}
	if e := ClassifyStatus(401, "bad key"); !strings.Contains(e.Error(), "API key") {
		t.Errorf("auth errors say what to fix: %v", e)
	}
	net := NetworkError(errors.New("connection refused"), "Is the server running?")
	if !IsRetryable(net) || !strings.Contains(net.Error(), "Is the server running?") {
		t.Errorf("network: %v", net)
	}
}
