package openai

import (
	"strings"
	"testing"

	"github.com/jazz-run/jazz/provider"
)

func TestThinkSplitter(t *testing.T) {
	tests := []struct {
		name            string
		chunks          []string
		text, reasoning string
	}{
		{"plain text", []string{"Hello", " world"}, "Hello world", ""},
		{"leading space kept when no tag", []string{"  ", "Hi"}, "  Hi", ""},
		{"block in one chunk", []string{"<think>a</think>b"}, "b", "a"},
		{"open tag split", []string{"<", "think>", "x", "</", "think>", "y"}, "y", "x"},
		{"tags split byte by byte", strings.Split("<think>ab</think>cd", ""), "cd", "ab"},
		{"blank lines around the block dropped", []string{"\n<think>\n", "plan\n</think>\n\n", "\nanswer\n"}, "answer\n", "plan\n"},
		{"looks like a tag but is not", []string{"<thin", "g>"}, "<thing>", ""},
		{"a mention mid-text passes through", []string{"I use <think> tags"}, "I use <think> tags", ""},
		{"stray close tag passes through", []string{"a</think>b"}, "a</think>b", ""},
		{"harmony is never tag-parsed", []string{"<|channel|>analysis<|message|>", "<think>x</think>"}, "<|channel|>analysis<|message|><think>x</think>", ""},
		{"unclosed block is all reasoning", []string{"<think>still going"}, "", "still going"},
		{"held-back partial close tag released", []string{"<think>a</thin", "x</think>b"}, "b", "a</thinx"},
		{"only one leading block", []string{"<think>a</think>b <think>c</think>"}, "b <think>c</think>", "a"},
		{"lone < at the end is text", []string{"<"}, "<", ""},
		{"empty answer", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sp thinkSplitter
			var text, reasoning strings.Builder
			emit := func(d provider.Delta) {
				if d.Text == "" && d.Reasoning == "" {
					t.Error("emitted an empty delta")
				}
				text.WriteString(d.Text)
				reasoning.WriteString(d.Reasoning)
			}
			for _, c := range tt.chunks {
				sp.feed(c, emit)
			}
			sp.flush(emit)
			if text.String() != tt.text || reasoning.String() != tt.reasoning {
				t.Errorf("text %q reasoning %q, want %q %q", text.String(), reasoning.String(), tt.text, tt.reasoning)
			}
		})
	}
}

func TestToolDeltasWithoutIndex(t *testing.T) {
	// Some compatible servers send each call whole, without an index.
	stream := data(`{"id":"a","choices":[{"index":0,"delta":{"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}}]}`) +
		data(`{"id":"a","choices":[{"index":0,"delta":{"tool_calls":[{"id":"c2","type":"function","function":{"name":"pwd","arguments":"{"}}]}}]}`) +
		data(`{"id":"a","choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"}"}}]},"finish_reason":"tool_calls"}]}`) +
		data("[DONE]")
	resp, err := readStream(strings.NewReader(stream), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := resp.Message.ToolCalls
	if len(got) != 2 || got[0].ID != "c1" || got[0].Name != "ls" || got[1].ID != "c2" || got[1].Arguments != "{}" {
		t.Errorf("tool calls = %+v", got)
	}
}
