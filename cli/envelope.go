package cli

import (
	"io"
	"strings"

	"github.com/jazz-run/jazz/messages"
)

// `jazz run --json` prints one of these two objects (headless-run.md §3).
// Both say why the run ended (stopReason) and what it spent and did so
// far: a failed run's tokens and calls are as real as a finished one's.

// successEnvelope is the --json success shape.
type successEnvelope struct {
	OK         bool           `json:"ok"`
	Answer     string         `json:"answer"`
	StopReason string         `json:"stopReason"`
	CostUSD    float64        `json:"costUSD"`
	CostKnown  bool           `json:"costKnown"`
	TokenUsage usageView      `json:"tokenUsage"`
	ToolCalls  []toolCallView `json:"toolCalls"`
	Declined   []toolCallView `json:"declinedToolCalls"`
	// Messages is the transcript after the run (--ephemeral): the caller
	// keeps the conversation and passes it back as --history-json.
	Messages []messages.ChatMessage `json:"messages,omitempty"`
}

// runFailureEnvelope is the --json failure shape of `jazz run`: the
// failure envelope plus what the run did before it failed.
type runFailureEnvelope struct {
	OK         bool   `json:"ok"`
	Error      string `json:"error"`
	StopReason string `json:"stopReason"`
	// Answer is what an interrupted or failed run wrote before it ended
	// (its partial answer); omitted when it wrote nothing.
	Answer     string         `json:"answer,omitempty"`
	CostUSD    float64        `json:"costUSD"`
	TokenUsage usageView      `json:"tokenUsage"`
	ToolCalls  []toolCallView `json:"toolCalls"`
	Declined   []toolCallView `json:"declinedToolCalls"`
}

type usageView struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	TotalTokens      int `json:"totalTokens"`
	CacheReadTokens  int `json:"cacheReadTokens,omitempty"`
}

func usageOf(u messages.Usage) usageView {
	return usageView{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		TotalTokens: u.PromptTokens + u.CompletionTokens, CacheReadTokens: u.CacheReadTokens}
}

// toolCallView is one call of the run tree in the envelope, with the
// agent that made it (depth 0 is the top-level agent).
type toolCallView struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	AgentID   string `json:"agentId,omitempty"`
	AgentName string `json:"agentName,omitempty"`
	Depth     int    `json:"depth"`
	// DecidedBy is who approved or declined a gated call.
	DecidedBy string `json:"decidedBy,omitempty"`
}

func callViews(calls []messages.AgentCall) []toolCallView {
	out := make([]toolCallView, 0, len(calls))
	for _, c := range calls {
		out = append(out, toolCallView{ID: c.ID, Name: c.Name, Arguments: c.Arguments, AgentID: c.AgentID, AgentName: c.AgentName, Depth: c.Depth, DecidedBy: c.DecidedBy})
	}
	return out
}

// successOf is the envelope of a run that ended well.
func successOf(f messages.RunFinished, cost float64) successEnvelope {
	return successEnvelope{OK: true, Answer: f.Answer, StopReason: stopReasonOr(f.StopReason, messages.StopCompleted),
		CostUSD: cost, CostKnown: f.CostKnown, TokenUsage: usageOf(f.Usage),
		ToolCalls: callViews(f.ToolCalls), Declined: callViews(f.Declined)}
}

// writeRunFailure prints a failed run's envelope: msg, and what the run
// (if it started) spent and did; f is zero for a run that never started.
func writeRunFailure(w io.Writer, msg string, f messages.RunFinished, cost float64) {
	b, _ := runFailureEnvelope{OK: false, Error: msg, StopReason: stopReasonOr(f.StopReason, messages.StopError), Answer: f.Answer,
		CostUSD: cost, TokenUsage: usageOf(f.Usage), ToolCalls: callViews(f.ToolCalls), Declined: callViews(f.Declined)}.appendJSON(nil)
	_, _ = w.Write(append(b, '\n'))
}

func stopReasonOr(reason, def string) string {
	if reason == "" {
		return def
	}
	return reason
}

// partialAnswer is what a stopped run keeps as its answer in plain mode:
// the text the model had written when it was interrupted or timed out. A
// run that failed on its own prints none (stdout stays empty).
func partialAnswer(f messages.RunFinished) string {
	if f.StopReason != messages.StopInterrupted && f.StopReason != messages.StopTimeout {
		return ""
	}
	return strings.TrimSpace(f.Answer)
}
