// Package ledger keeps the account of one run tree that its envelope
// reports: the model usage of every agent and every tool call with the
// agent that made it, declined ones marked.
//
// Each agent of the tree writes to its own node the moment something
// happens (a model response arrives, a batch of calls is dispatched, the
// gate declines one), and a node's totals cover its whole subtree. So the
// account never depends on results travelling back up the tree: whatever
// ended the run (an answer, a failure, --timeout, a cancel while children
// still ran) the root holds everything spent and everything called.
//
// What a server reports is not trusted: usage with a negative or absurd
// count is refused (it would cancel earlier cost, or overflow the sums),
// and a response without usage leaves the cost unknown instead of free.
// Sums saturate instead of wrapping.
package ledger

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/jazz-run/jazz/messages"
)

// MaxCallTokens is the most tokens one model response may report in any
// one count. No context window comes near it; a figure above it is a
// broken or hostile server, not a bill.
const MaxCallTokens = 1_000_000_000

// Pricer turns usage into dollars; known is false without pricing.
type Pricer func(u messages.Usage) (cost float64, known bool)

// ErrNoUsage is a response that reported no usage at all.
var ErrNoUsage = errors.New("the model server reported no token usage")

// Ledger is one agent's node in the run tree's account. The nodes of a
// tree share one lock; every method is safe for concurrent use, and the
// methods of a nil *Ledger do nothing (Totals is zero).
type Ledger struct {
	book     *book
	agent    messages.Place
	usage    messages.Usage
	unknown  bool // a response of this agent had no usable usage
	calls    []entry
	declined []entry
	children []*Ledger
}

// book is what the nodes of one tree share.
type book struct {
	mu    sync.Mutex
	seq   uint64 // orders calls across the tree as they happened
	price Pricer
}

type entry struct {
	seq  uint64
	call messages.AgentCall
}

// New is the root of a run's account: agent is the top-level agent,
// price prices the tree's usage (every agent runs the same model).
func New(agent messages.Place, price Pricer) *Ledger {
	return &Ledger{book: &book{price: price}, agent: agent}
}

// Child adds the node of an agent spawned under l.
func (l *Ledger) Child(agent messages.Place) *Ledger {
	if l == nil {
		return nil
	}
	l.book.mu.Lock()
	defer l.book.mu.Unlock()
	c := &Ledger{book: l.book, agent: agent}
	l.children = append(l.children, c)
	return c
}

// Validate refuses usage no real response reports: a negative count, or
// one above MaxCallTokens.
func Validate(u messages.Usage) error {
	for _, f := range []struct {
		name  string
		n     int
		limit int
	}{
		{"prompt", u.PromptTokens, MaxCallTokens}, {"completion", u.CompletionTokens, MaxCallTokens},
		{"total", u.TotalTokens, 2 * MaxCallTokens}, // prompt + completion
		{"reasoning", u.ReasoningTokens, MaxCallTokens}, {"cache read", u.CacheReadTokens, MaxCallTokens},
		{"cache write", u.CacheWriteTokens, MaxCallTokens},
	} {
		if f.n < 0 {
			return fmt.Errorf("the model server reported %d %s tokens, a negative count", f.n, f.name)
		}
		if f.n > f.limit {
			return fmt.Errorf("the model server reported %d %s tokens, more than any response can use (%d)", f.n, f.name, f.limit)
		}
	}
	return nil
}

// RecordUsage adds one model response's usage to l. reported is false
// when the response carried none. Usage that is missing or fails Validate
// is not added and makes the tree's cost unknown; the returned error says
// why, for a notice.
func (l *Ledger) RecordUsage(u messages.Usage, reported bool) error {
	err := ErrNoUsage
	if reported {
		err = Validate(u)
	}
	if l == nil {
		return err
	}
	l.book.mu.Lock()
	defer l.book.mu.Unlock()
	if err != nil {
		l.unknown = true
		return err
	}
	l.usage = Add(l.usage, u)
	return nil
}

// RecordCalls notes a batch of calls l's agent made, as dispatched.
func (l *Ledger) RecordCalls(calls []messages.ToolCall) {
	if l == nil {
		return
	}
	l.book.mu.Lock()
	defer l.book.mu.Unlock()
	for _, c := range calls {
		l.book.seq++
		l.calls = append(l.calls, entry{seq: l.book.seq, call: l.tag(c)})
	}
}

// RecordDeclined notes a call of l's agent that the gate declined.
func (l *Ledger) RecordDeclined(call messages.ToolCall) {
	if l == nil {
		return
	}
	l.book.mu.Lock()
	defer l.book.mu.Unlock()
	l.book.seq++
	l.declined = append(l.declined, entry{seq: l.book.seq, call: l.tag(call)})
}

// MarkDecided records who settled call id of l's agent, on its entry in
// the calls and, when declined, in the declined calls.
func (l *Ledger) MarkDecided(id, by string) {
	if l == nil {
		return
	}
	l.book.mu.Lock()
	defer l.book.mu.Unlock()
	for _, list := range [][]entry{l.calls, l.declined} {
		for i := len(list) - 1; i >= 0; i-- {
			if list[i].call.ID == id {
				list[i].call.DecidedBy = by
				break
			}
		}
	}
}

// RecordRemote adds what l's agent and its subtree spent and called
// while they ran elsewhere (a worker of a pool): usage as one response's
// is checked (unreported or refused makes the tree's cost unknown), and
// each call keeps the agent that made it, unless it names none or one
// not below l's agent, which l's agent then answers for.
func (l *Ledger) RecordRemote(u messages.Usage, reported bool, calls, declined []messages.AgentCall) error {
	err := ErrNoUsage
	if reported {
		err = Validate(u)
	}
	if l == nil {
		return err
	}
	l.book.mu.Lock()
	defer l.book.mu.Unlock()
	if err != nil {
		l.unknown = true
	} else {
		l.usage = Add(l.usage, u)
	}
	for _, c := range calls {
		l.book.seq++
		l.calls = append(l.calls, entry{seq: l.book.seq, call: l.pin(c)})
	}
	for _, c := range declined {
		l.book.seq++
		l.declined = append(l.declined, entry{seq: l.book.seq, call: l.pin(c)})
	}
	return err
}

// pin keeps a remote call's agent when it is l's or one below it.
func (l *Ledger) pin(c messages.AgentCall) messages.AgentCall {
	if c.AgentID == l.agent.AgentID || (c.AgentID != "" && c.Depth > l.agent.Depth) {
		return c
	}
	t := l.tag(c.ToolCall)
	t.DecidedBy = c.DecidedBy
	return t
}

func (l *Ledger) tag(c messages.ToolCall) messages.AgentCall {
	return messages.AgentCall{ToolCall: c, AgentID: l.agent.AgentID, AgentName: l.agent.AgentName, Depth: l.agent.Depth}
}

// Totals is the account of a subtree.
type Totals struct {
	// Usage sums every accepted response of the subtree.
	Usage messages.Usage
	// CostUSD prices Usage (8 decimals). When CostKnown is false it is
	// what is known to have been spent, a lower bound, never "free".
	CostUSD float64
	// CostKnown: the model is priced and every response reported usable
	// usage.
	CostKnown bool
	// ToolCalls and Declined list the subtree's calls in the order they
	// happened, each with the agent that made it.
	ToolCalls []messages.AgentCall
	Declined  []messages.AgentCall
}

// Totals adds up l and everything below it.
func (l *Ledger) Totals() Totals {
	if l == nil {
		return Totals{ToolCalls: []messages.AgentCall{}}
	}
	l.book.mu.Lock()
	var usage messages.Usage
	unknown := false
	var calls, declined []entry
	var walk func(n *Ledger)
	walk = func(n *Ledger) {
		usage = Add(usage, n.usage)
		unknown = unknown || n.unknown
		calls = append(calls, n.calls...)
		declined = append(declined, n.declined...)
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(l)
	price := l.book.price
	l.book.mu.Unlock()

	t := Totals{Usage: usage, ToolCalls: ordered(calls), Declined: ordered(declined)}
	if price != nil {
		cost, known := price(usage)
		if math.IsNaN(cost) || math.IsInf(cost, 0) || cost < 0 {
			cost, known = 0, false
		}
		t.CostUSD, t.CostKnown = cost, known && !unknown
	}
	return t
}

func ordered(es []entry) []messages.AgentCall {
	sort.Slice(es, func(i, j int) bool { return es[i].seq < es[j].seq })
	out := make([]messages.AgentCall, len(es))
	for i, e := range es {
		out[i] = e.call
	}
	return out
}

// Add sums two usages, saturating at math.MaxInt64 instead of wrapping.
func Add(a, b messages.Usage) messages.Usage {
	return messages.Usage{
		PromptTokens:     sat(a.PromptTokens, b.PromptTokens),
		CompletionTokens: sat(a.CompletionTokens, b.CompletionTokens),
		TotalTokens:      sat(a.TotalTokens, b.TotalTokens),
		ReasoningTokens:  sat(a.ReasoningTokens, b.ReasoningTokens),
		CacheReadTokens:  sat(a.CacheReadTokens, b.CacheReadTokens),
		CacheWriteTokens: sat(a.CacheWriteTokens, b.CacheWriteTokens),
	}
}

// sat adds two counts that are never negative (Validate), saturating.
func sat(a, b int) int {
	if a < 0 {
		a = 0
	}
	if b < 0 {
		b = 0
	}
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
