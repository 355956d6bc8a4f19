package actors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jazz-run/jazz/messages"
)

const (
	meltdownWindow    = 10
	meltdownThreshold = 0.4
	// MaxResultChars caps a tool result as the model sees it.
	MaxResultChars = 24000
)

// MeltdownMessage is stored in the history when the agent loops.
const MeltdownMessage = "[MELTDOWN DETECTED: you are repeating the same tool calls without progress. Stop repeating them. " +
	"Summarize what you found and what is still missing, then either write your output or try a fundamentally different strategy. " +
	"Do not repeat the last action.]"

// Meltdown reports whether a full window of call keys is mostly repeats.
func Meltdown(window []string) bool {
	if len(window) < meltdownWindow {
		return false
	}
	distinct := map[string]bool{}
	for _, k := range window {
		distinct[k] = true
	}
	return float64(len(distinct))/float64(len(window)) < meltdownThreshold
}

// Pressure is the ephemeral budget notice for iteration i of max, or "".
func Pressure(i, max int) string {
	if max <= 0 {
		return ""
	}
	// Integer arithmetic: 7/10 is exactly 70%, never 69.99…%.
	pct := i * 100 / max
	switch {
	case i*10 >= max*9:
		return fmt.Sprintf("[BUDGET CRITICAL: Iteration %d/%d (%d%%). Write your final output NOW with what you have; no more research and no sub-agents.]", i, max, pct)
	case i*10 >= max*7:
		return fmt.Sprintf("[BUDGET WARNING: Iteration %d/%d (%d%%). Consolidate what you have and stop spawning research sub-agents.]", i, max, pct)
	}
	return ""
}

// FormatResult is a tool result as the model reads it: the result on
// success, {error, result} on failure, cut at whole lines past the cap.
func FormatResult(r messages.ToolResult) string {
	var s string
	if r.Success {
		s = string(r.Result)
		// Only a JSON string (or null, which reads as "") is unquoted.
		// Unmarshal is tried only for those: on an object it scanned the
		// whole result and built an error, ~4% of a 200-call run's CPU.
		if t := bytes.TrimLeft(r.Result, " \t\r\n"); len(t) > 0 && (t[0] == '"' || t[0] == 'n') {
			var str string
			if json.Unmarshal(r.Result, &str) == nil {
				s = str
			}
		}
	} else {
		body := map[string]json.RawMessage{}
		e, _ := json.Marshal(r.Error)
		body["error"] = e
		if len(r.Result) > 0 {
			body["result"] = r.Result
		} else {
			body["result"] = json.RawMessage("null")
		}
		b, _ := json.Marshal(body)
		s = string(b)
	}
	if len(s) <= MaxResultChars {
		return s
	}
	cut := s[:MaxResultChars]
	if i := strings.LastIndexByte(cut, '\n'); i > MaxResultChars/2 {
		cut = cut[:i]
	}
	return cut + fmt.Sprintf("\n[result truncated: %d of %d characters shown]", len(cut), len(s))
}
