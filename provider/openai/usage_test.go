package openai

import (
	"strings"
	"testing"
)

// TestWildUsageDoesNotFailTheResponse: a server's usage figures cannot
// break the answer. A count that is not a whole number an int holds reads
// as -1 and a negative one stays negative, for the run's account to
// refuse; the rest of the response is kept.
func TestWildUsageDoesNotFailTheResponse(t *testing.T) {
	body := `{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":1e30,"completion_tokens":-5,"total_tokens":99999999999999999999,"prompt_tokens_details":{"cached_tokens":2.5}}}`
	resp, err := readBatch(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	u := resp.Usage
	if resp.Message.Content != "hi" || !resp.UsageReported || u.PromptTokens != -1 || u.CompletionTokens != -5 || u.TotalTokens != -1 || u.CacheReadTokens != -1 {
		t.Fatalf("response %+v usage %+v", resp.Message, u)
	}
	resp, err = readBatch(strings.NewReader(`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`))
	if err != nil || resp.UsageReported {
		t.Fatalf("no usage: reported=%v err=%v", resp.UsageReported, err)
	}
}
