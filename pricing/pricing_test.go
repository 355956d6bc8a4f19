package pricing

import (
	"testing"

	"github.com/jazz-run/jazz/messages"
)

func TestCost(t *testing.T) {
	tests := []struct {
		name      string
		price     Price
		usage     messages.Usage
		want      float64
		wantKnown bool
	}{
		{"plain", Price{Input: new(2.5), Output: new(10.0)}, messages.Usage{PromptTokens: 1000, CompletionTokens: 100}, 0.0035, true},
		{"cache read priced", Price{Input: new(2.0), Output: new(8.0), CacheRead: new(0.5)},
			messages.Usage{PromptTokens: 1000, CompletionTokens: 0, CacheReadTokens: 400}, (600*2.0 + 400*0.5) / 1e6, true},
		{"cache read falls back to input", Price{Input: new(2.0), Output: new(8.0)},
			messages.Usage{PromptTokens: 1000, CacheReadTokens: 400}, 1000 * 2.0 / 1e6, true},
		{"cache read capped at prompt", Price{Input: new(1.0), Output: new(1.0), CacheRead: new(0.1)},
			messages.Usage{PromptTokens: 100, CacheReadTokens: 500}, 100 * 0.1 / 1e6, true},
		{"only input known", Price{Input: new(3.0)}, messages.Usage{PromptTokens: 1000, CompletionTokens: 1000}, 0.003, true},
		{"only output known", Price{Output: new(15.0)}, messages.Usage{PromptTokens: 1000, CompletionTokens: 1000}, 0.015, true},
		{"neither known", Price{CacheRead: new(0.1)}, messages.Usage{PromptTokens: 1000}, 0, false},
		{"negative counts as unknown", Price{Input: new(-1.0), Output: new(-1.0)}, messages.Usage{PromptTokens: 1000}, 0, false},
		{"free is known", Price{Input: new(0.0), Output: new(0.0)}, messages.Usage{PromptTokens: 1000}, 0, true},
		{"rounded to 8 decimals", Price{Input: new(0.15), Output: new(0.6)}, messages.Usage{PromptTokens: 1, CompletionTokens: 1}, 0.00000075, true},
		{"rounding drops the ninth decimal", Price{Input: new(0.001)}, messages.Usage{PromptTokens: 1}, 0, true},
		// Anthropic: 1000 read = 100 uncached + 300 written to the cache + 600 read from it.
		{"cache write and read priced", Price{Input: new(3.0), Output: new(15.0), CacheRead: new(0.3), CacheWrite: new(3.75)},
			messages.Usage{PromptTokens: 1000, CompletionTokens: 50, CacheReadTokens: 600, CacheWriteTokens: 300},
			(100*3.0 + 600*0.3 + 300*3.75 + 50*15.0) / 1e6, true},
		{"cache write falls back to input", Price{Input: new(3.0), Output: new(15.0)},
			messages.Usage{PromptTokens: 1000, CacheWriteTokens: 300}, 1000 * 3.0 / 1e6, true},
		{"cache write capped at what the reads leave", Price{Input: new(1.0), CacheRead: new(0.1), CacheWrite: new(2.0)},
			messages.Usage{PromptTokens: 100, CacheReadTokens: 80, CacheWriteTokens: 500}, (80*0.1 + 20*2.0) / 1e6, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, known := Cost(tt.price, tt.usage)
			if known != tt.wantKnown || Round8(got) != Round8(tt.want) || got != Round8(got) {
				t.Fatalf("Cost = %v, %v; want %v, %v", got, known, tt.want, tt.wantKnown)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	overrides := map[string]Price{
		"openai/gpt-4o":       {Input: new(1.0)}, // one field wins, the rest stay
		"custom/thing":        {Input: new(1.0), Output: new(2.0)},
		"openai/brand-new":    {Output: new(4.0)},
		"openai/gpt-4.1-nano": {Input: new(-5.0)}, // invalid override is ignored
	}
	tests := []struct {
		provider, model string
		wantKnown       bool
		in, out, cr     float64
	}{
		{"openai", "gpt-4o", true, 1.0, 10, 1.25},
		{"openai", "gpt-4o-mini", true, 0.15, 0.6, 0.075},
		{"openai", "gpt-4o-2024-08-06", true, 1.0, 10, 1.25},
		{"OpenAI", " GPT-4O-MINI ", true, 0.15, 0.6, 0.075},
		{"openai", "gpt-4.1-nano", true, 0.1, 0.4, 0.025},
		{"openrouter", "openai/gpt-4o-mini", true, 0.15, 0.6, 0.075},
		{"openrouter", "meta-llama/llama-3.3-70b-instruct:free", true, 0, 0, 0},
		{"ollama", "llama3.2:3b", true, 0, 0, 0},
		{"llamacpp", "anything", true, 0, 0, 0},
		{"replay", "fixture", true, 0, 0, 0},
		{"custom", "thing", true, 1, 2, -1},
		{"openai", "brand-new", true, -1, 4, -1},
		{"openai", "no-such-model", false, -1, -1, -1},
		{"groq", "llama-3.3-70b-versatile", true, 0.59, 0.79, -1},
		{"deepseek", "deepseek-chat", true, 0.28, 0.42, 0.028},
	}
	for _, tt := range tests {
		t.Run(tt.provider+"/"+tt.model, func(t *testing.T) {
			p, known := Lookup(tt.provider, tt.model, overrides)
			if known != tt.wantKnown {
				t.Fatalf("known = %v, want %v (price %+v)", known, tt.wantKnown, p)
			}
			check := func(field string, got *float64, want float64) {
				t.Helper()
				switch {
				case want < 0 && got != nil:
					t.Errorf("%s = %v, want unknown", field, *got)
				case want >= 0 && (got == nil || *got != want):
					t.Errorf("%s = %v, want %v", field, got, want)
				}
			}
			if known {
				check("input", p.Input, tt.in)
				check("output", p.Output, tt.out)
				check("cache_read", p.CacheRead, tt.cr)
			}
		})
	}
}

func BenchmarkLookup(b *testing.B) {
	for b.Loop() {
		Lookup("openai", "gpt-4o-mini", nil)
	}
}
