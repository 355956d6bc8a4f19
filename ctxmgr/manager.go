package ctxmgr

import (
	"fmt"
	"math"

	"github.com/jazz-run/jazz/messages"
)

// Default ratios (config `context`).
const (
	DefaultWarn    = 0.7
	DefaultCompact = 0.8
)

// Settings are one agent's context limits.
type Settings struct {
	// Budget is how many prompt tokens a request may use.
	Budget int
	// Warn and Compact are the warn and compact ratios of Budget; bad
	// values (see Valid) fall back to the defaults.
	Warn, Compact float64
}

// Valid applies agent-loop.md §4's rule to a pair of ratios: each finite
// with 0<x<1, compact below TrimRatio and warn below compact. A bad one
// is replaced: compact by DefaultCompact, warn by min(DefaultWarn,
// compact).
func Valid(warn, compact float64) (float64, float64) {
	ok := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) && x > 0 && x < 1 }
	if !ok(compact) || compact >= TrimRatio {
		compact = DefaultCompact
	}
	if !ok(warn) || warn >= compact {
		warn = math.Min(DefaultWarn, compact)
		if warn >= compact {
			warn = compact / 2
		}
	}
	return warn, compact
}

// Manager is the context state of one agent: its token counter, and what
// may happen only once (the warning) or once per crossing (clearing). It
// is owned by the agent actor and not safe for concurrent use.
type Manager struct {
	s       Settings
	counter *Counter
	// ToolBytes is the size of the tool schemas sent with every request.
	ToolBytes int
	warned    bool
	// clearSpent: usage has stayed above ClearRatio since the last clear
	// that cleared something; it must drop below first to clear again.
	clearSpent bool
}

// NewManager starts managing a window of s.Budget tokens.
func NewManager(s Settings) *Manager {
	s.Warn, s.Compact = Valid(s.Warn, s.Compact)
	if s.Budget < 1 {
		s.Budget = 1
	}
	return &Manager{s: s, counter: NewCounter()}
}

// Settings are the limits in force (ratios validated).
func (m *Manager) Settings() Settings { return m.s }

// Counter is the manager's token counter.
func (m *Manager) Counter() *Counter { return m.counter }

// Usage estimates the prompt tokens a request of h would use.
func (m *Manager) Usage(h []messages.ChatMessage) int { return m.counter.Request(h, m.ToolBytes) }

// Ratio is used tokens over the budget.
func (m *Manager) Ratio(used int) float64 { return float64(used) / float64(m.s.Budget) }

// Step is one rung that changed the history, for events and spans.
type Step struct {
	Rung                          string
	TokensBefore, TokensAfter     int
	MessagesBefore, MessagesAfter int
	Cleared                       []Cleared
}

// Rungs of a Step.
const (
	RungClear   = "clear"
	RungWarn    = "warn"
	RungCompact = "compact"
	RungTrim    = "trim"
)

// Saved is how many tokens the step saved.
func (s Step) Saved() int { return s.TokensBefore - s.TokensAfter }

// The rung checks below take used, h's Usage, so that one estimate per
// iteration serves them all.

// Clear is rung 1: above ClearRatio, once per crossing, clear old large
// tool results. A pass that clears nothing does not count. ok is false
// when h is unchanged.
func (m *Manager) Clear(h []messages.ChatMessage, used int) ([]messages.ChatMessage, Step, bool) {
	before := used
	if float64(before) <= ClearRatio*float64(m.s.Budget) {
		m.clearSpent = false
		return h, Step{}, false
	}
	if m.clearSpent {
		return h, Step{}, false
	}
	out, cleared := Clear(h, m.counter)
	if len(cleared) == 0 {
		return h, Step{}, false
	}
	m.clearSpent = true
	return out, Step{Rung: RungClear, TokensBefore: before, TokensAfter: m.Usage(out),
		MessagesBefore: len(h), MessagesAfter: len(out), Cleared: cleared}, true
}

// Warning is rung 2: the once-per-run notice when usage is above the
// warn ratio but not above compact, "" otherwise.
func (m *Manager) Warning(used int) string {
	r := m.Ratio(used)
	if m.warned || r <= m.s.Warn || r > m.s.Compact {
		return ""
	}
	m.warned = true
	return fmt.Sprintf("context %d%% full of %d tokens — will auto-compact soon", percent(r), m.s.Budget)
}

// CompactDue says whether rung 3 should run: usage above the compact
// ratio.
func (m *Manager) CompactDue(used int) bool { return m.Ratio(used) > m.s.Compact }

// Plan plans a compaction of h and says whether it is worth an LLM call:
// something to summarize, at least a tenth of the budget of it (less
// would cost a call to save next to nothing; trimming handles the rest).
// force skips the worth check (summarize_context).
func (m *Manager) Plan(h []messages.ChatMessage, force bool) (Plan, bool) {
	p, ok := PlanCompaction(h, m.counter, m.s.Budget)
	if !ok || (!force && p.MiddleTokens < m.s.Budget/10) {
		return p, false
	}
	return p, true
}

// Compacted is the Step of a compaction from before to after.
func (m *Manager) Compacted(before, after []messages.ChatMessage) Step {
	return Step{Rung: RungCompact, TokensBefore: m.Usage(before), TokensAfter: m.Usage(after),
		MessagesBefore: len(before), MessagesAfter: len(after)}
}

// Trim is rung 4: above TrimRatio, drop old messages until the request
// is back at the compact ratio. ok is false when h is unchanged.
func (m *Manager) Trim(h []messages.ChatMessage, used int) ([]messages.ChatMessage, Step, bool) {
	before := used
	if float64(before) <= TrimRatio*float64(m.s.Budget) {
		return h, Step{}, false
	}
	overhead := before - m.counter.Messages(h)
	out, dropped := Trim(h, m.counter, int(m.s.Compact*float64(m.s.Budget))-overhead)
	if dropped == 0 {
		return h, Step{}, false
	}
	return out, Step{Rung: RungTrim, TokensBefore: before, TokensAfter: m.Usage(out),
		MessagesBefore: len(h), MessagesAfter: len(out)}, true
}

// TrimWarning is the notice of a trim that dropped n messages.
func TrimWarning(n int) string {
	return fmt.Sprintf("context still over budget after compacting — dropped %d older message(s) without summarizing them", n)
}

// CompactingNotice and CompactedNotice frame a compaction.
func (m *Manager) CompactingNotice(used int) string {
	return fmt.Sprintf("Context window ~%d%% full — auto-compacting…", percent(m.Ratio(used)))
}

// CompactedNotice reports a compaction's outcome.
func CompactedNotice(s Step) string {
	return fmt.Sprintf("Compacted %d → %d messages (saved ~%d tokens)", s.MessagesBefore, s.MessagesAfter, max(s.Saved(), 0))
}

// Pressure is the ephemeral context line for a request of h, "" below
// the warn ratio (agent-loop.md §2.4).
func (m *Manager) Pressure(used int) string {
	r := m.Ratio(used)
	switch {
	case r >= CriticalRatio:
		return fmt.Sprintf("[CONTEXT CRITICAL: context is %d%% full of the %d-token budget. Write your final output NOW with what you have; "+
			"do not create new files, start new searches or spawn sub-agents.]", percent(r), m.s.Budget)
	case r >= m.s.Warn:
		return fmt.Sprintf("[CONTEXT WARNING: context is %d%% full of the %d-token budget; it is compacted automatically at %d%%. "+
			"Record your findings (update_task_state) and consolidate; avoid reading more than you need.]", percent(r), m.s.Budget, percent(m.s.Compact))
	}
	return ""
}

func percent(r float64) int { return int(math.Round(r * 100)) }
