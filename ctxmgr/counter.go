// Package ctxmgr keeps an agent's history inside its model's context window
// (agent-loop.md §4): it counts tokens, calibrated against what the
// provider reports, and applies the four rungs in order: clear old tool
// results, warn, compact the middle of the history into a summary, and as
// a last resort trim old messages. It also writes the ephemeral
// `[CONTEXT WARNING/CRITICAL]` lines.
//
// Everything here is a pure function of a history or a small state value
// owned by one agent actor; the one LLM call (the summarizer) is made by
// the caller with the request this package builds.
package ctxmgr

import (
	"math"

	"github.com/jazz-run/jazz/messages"
)

// Counting constants (agent-loop.md §4).
const (
	// PerMessage tokens frame every message; PerToolResult more frame a
	// tool result.
	PerMessage    = 4
	PerToolResult = 10
	// DefaultRatio is the bytes per token assumed before any calibration.
	DefaultRatio = 4.0
	// Smoothing is the weight the previous estimate keeps at each
	// calibration.
	Smoothing = 0.7
	// MinRatio and MaxRatio clamp the calibrated bytes per token.
	MinRatio, MaxRatio = 2.0, 6.0
)

// Counter estimates the tokens of a history for one model. The size of a
// message is its length in bytes (O(1) per string, which is what keeps a
// check over a long history cheap) divided by a bytes-per-token ratio
// learned from the provider's promptTokens: text that tokenizes worse
// than English (code, JSON, other scripts) pulls it down. What a request
// carries beyond its messages (the provider's framing of tools and
// roles) is the overhead. Both are learned together, as the slope and
// intercept of a least-squares line through the requests seen so far,
// each older request weighing Smoothing times less. The zero value is not
// ready: use NewCounter.
type Counter struct {
	ratio    float64
	overhead float64
	samples  int
	// decayed sums of the samples (x = bytes, y = tokens beyond the
	// framing) for the regression
	w, sx, sy, sxx, sxy float64
}

// NewCounter is a counter that knows nothing about the model yet.
func NewCounter() *Counter { return &Counter{ratio: DefaultRatio} }

// Ratio is the current bytes-per-token estimate.
func (c *Counter) Ratio() float64 { return c.ratio }

// Overhead is the current per-request overhead estimate, in tokens.
func (c *Counter) Overhead() int { return int(math.Round(c.overhead)) }

// Samples is how many calibrations the counter has had.
func (c *Counter) Samples() int { return c.samples }

// Bytes is the size of m as a provider is sent it: its content, and its
// tool calls' names, ids and arguments (reasoning is not sent back).
func Bytes(m messages.ChatMessage) int {
	n := len(m.Content) + len(m.ToolCallID) + len(m.Name)
	for _, tc := range m.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + len(tc.Arguments) + 12 // the call's JSON framing
	}
	return n
}

// fixed is the framing tokens of m.
func fixed(m messages.ChatMessage) int {
	if m.Role == messages.RoleTool {
		return PerMessage + PerToolResult
	}
	return PerMessage
}

// Message estimates the tokens of one message.
func (c *Counter) Message(m messages.ChatMessage) int {
	return fixed(m) + int(float64(Bytes(m))/c.ratio+0.999)
}

// Messages estimates the tokens of msgs, without the request overhead.
func (c *Counter) Messages(msgs []messages.ChatMessage) int {
	n := 0
	for i := range msgs {
		n += c.Message(msgs[i])
	}
	return n
}

// Measure is the size of one request as sent, kept until its usage comes
// back so the counter can be calibrated against it.
type Measure struct {
	// Bytes of the messages and of the tool schemas; Fixed framing tokens.
	Bytes, Fixed int
}

// Measure sizes a request: its messages and toolBytes of tool schemas.
func (c *Counter) Measure(msgs []messages.ChatMessage, toolBytes int) Measure {
	m := Measure{Bytes: toolBytes}
	for i := range msgs {
		m.Bytes += Bytes(msgs[i])
		m.Fixed += fixed(msgs[i])
	}
	return m
}

// Request estimates the prompt tokens of a request: its messages, its
// toolBytes of tool schemas and the learned overhead.
func (c *Counter) Request(msgs []messages.ChatMessage, toolBytes int) int {
	return c.Messages(msgs) + int(math.Ceil(float64(toolBytes)/c.ratio)) + c.Overhead()
}

// Calibrate learns from a request of size m that the provider counted
// promptTokens for. With requests of different sizes seen, the ratio and
// the overhead are the regression's; until then (or when the sizes barely
// differ) the ratio alone moves, the overhead kept. The ratio is clamped
// to [MinRatio, MaxRatio]. A count that cannot be real (zero, or no more
// than the framing alone) teaches nothing.
func (c *Counter) Calibrate(m Measure, promptTokens int) {
	if promptTokens <= m.Fixed || m.Bytes <= 0 {
		return
	}
	x, y := float64(m.Bytes), float64(promptTokens-m.Fixed)
	c.w = Smoothing*c.w + 1
	c.sx = Smoothing*c.sx + x
	c.sy = Smoothing*c.sy + y
	c.sxx = Smoothing*c.sxx + x*x
	c.sxy = Smoothing*c.sxy + x*y
	c.samples++
	meanX := c.sx / c.w
	varX := c.sxx/c.w - meanX*meanX
	if c.samples > 1 && varX > 0.0025*meanX*meanX { // sizes spread by 5% or more
		slope := (c.sxy/c.w - meanX*(c.sy/c.w)) / varX
		if slope > 0 {
			c.ratio = clamp(1/slope, MinRatio, MaxRatio)
			c.overhead = (c.sy - c.sx/c.ratio) / c.w
			return
		}
	}
	content := math.Max(y-c.overhead, 1)
	observed := clamp(x/content, MinRatio, MaxRatio)
	if c.samples == 1 {
		c.ratio = observed
	} else {
		c.ratio = clamp(Smoothing*c.ratio+(1-Smoothing)*observed, MinRatio, MaxRatio)
	}
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }
