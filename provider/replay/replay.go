// Package replay is a provider that plays scripted model turns from a JSON
// file, for offline demos and deterministic tests. It never touches the
// network. The file format is documented in FORMAT.md.
//
// Which turn plays is read from the request itself (the number of assistant
// messages since the last user message), so each subagent, each
// conversation and even a fresh process replays the right step without
// shared state. The one piece of state is how many times an error turn has
// failed, so a scripted failure can recover on the retry.
package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/safefile"
)

// Script is a replay file.
type Script struct {
	// Conversations are tried in order; see Conversation.Match.
	Conversations []Conversation `json:"conversations,omitempty"`
	// Turns is the shorthand for one conversation without a match.
	Turns []Turn `json:"turns,omitempty"`
}

// Conversation is the scripted answers to one task.
type Conversation struct {
	// Match selects the conversation: a substring of the first user
	// message. Empty matches any conversation no other one matched.
	Match string `json:"match,omitempty"`
	Turns []Turn `json:"turns"`
}

// Turn is one scripted model answer.
type Turn struct {
	// Text is the answer; it may use {{lastToolResult}} and
	// {{toolResult:N}}.
	Text      string          `json:"text,omitempty"`
	Reasoning string          `json:"reasoning,omitempty"`
	ToolCalls []ToolCall      `json:"toolCalls,omitempty"`
	Usage     *messages.Usage `json:"usage,omitempty"`
	// DelayMs waits before answering, as a slow model would.
	DelayMs int `json:"delayMs,omitempty"`
	// Error makes the turn fail instead of answering.
	Error *TurnError `json:"error,omitempty"`
}

// ToolCall is a scripted tool call. Arguments is a JSON object, or a JSON
// string taken verbatim (which lets a test send arguments that are not
// JSON).
type ToolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// TurnError is a scripted failure.
type TurnError struct {
	// Status is an HTTP status (classified like a real one: 429 and 5xx
	// are retryable); 0 is a network failure.
	Status  int    `json:"status,omitempty"`
	Message string `json:"message"`
	// Times is how many calls at this turn fail before it answers with its
	// text and tool calls: 0 means once, -1 means always.
	Times int `json:"times,omitempty"`
}

// Provider plays one Script.
type Provider struct {
	name   string
	script Script

	mu     sync.Mutex
	failed map[[2]int]int // (conversation, turn) → failures served
}

var _ provider.Provider = (*Provider)(nil)

// Resolve finds the script file of a `replay/<script>` model id: an
// absolute path, else relative to the working directory, else relative to
// dir. A name without an extension also tries ".json".
func Resolve(script, dir string) (string, error) {
	var tried []string
	candidates := []string{script}
	if filepath.Ext(script) == "" {
		candidates = append(candidates, script+".json")
	}
	for _, c := range candidates {
		paths := []string{c}
		if !filepath.IsAbs(c) && dir != "" {
			paths = append(paths, filepath.Join(dir, c))
		}
		for _, p := range paths {
			tried = append(tried, p)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("replay script %q not found (looked for %s)", script, strings.Join(tried, ", "))
}

// MaxScriptBytes bounds a script file; a bigger one is refused, naming it.
const MaxScriptBytes = 32 << 20

// Load reads and checks a script file: a regular file (a FIFO is refused,
// not waited on) of at most MaxScriptBytes, read before ctx ends.
func Load(ctx context.Context, path string) (*Provider, error) {
	data, _, err := safefile.Read(ctx, path, safefile.Options{MaxBytes: MaxScriptBytes, What: "replay script"})
	if err != nil {
		return nil, fmt.Errorf("read replay script: %w", err)
	}
	p, err := Parse(filepath.Base(path), data)
	if err != nil {
		return nil, fmt.Errorf("replay script %s: %w", path, err)
	}
	return p, nil
}

// Parse checks a script; name is used in answers and errors.
func Parse(name string, data []byte) (*Provider, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields() // a misspelt field would silently do nothing
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	switch {
	case len(s.Turns) > 0 && len(s.Conversations) > 0:
		return nil, errors.New(`use "conversations" or the "turns" shorthand, not both`)
	case len(s.Turns) > 0:
		s.Conversations = []Conversation{{Turns: s.Turns}}
		s.Turns = nil
	case len(s.Conversations) == 0:
		return nil, errors.New(`no turns: expected {"turns":[…]} or {"conversations":[…]}`)
	}
	for ci, c := range s.Conversations {
		for ti, t := range c.Turns {
			for k, tc := range t.ToolCalls {
				if tc.Name == "" {
					return nil, fmt.Errorf("conversation %d turn %d tool call %d has no name", ci+1, ti+1, k+1)
				}
			}
			if t.Error != nil && t.Error.Times < -1 {
				return nil, fmt.Errorf("conversation %d turn %d: error.times must be -1 or more", ci+1, ti+1)
			}
		}
	}
	return &Provider{name: name, script: s, failed: map[[2]int]int{}}, nil
}

// runtimeNotice reports a user message the runtime itself wrote (budget
// pressure, meltdown recovery): it is not the person's turn, so it does
// not restart the script.
func runtimeNotice(content string) bool {
	for _, p := range []string{"[BUDGET ", "[CONTEXT ", "[MELTDOWN DETECTED:"} {
		if strings.HasPrefix(content, p) {
			return true
		}
	}
	return false
}

// Chat plays the turn the request is at.
func (p *Provider) Chat(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	firstUser, lastUser := -1, -1
	for i, m := range req.Messages {
		if m.Role == messages.RoleUser && !runtimeNotice(m.Content) {
			if firstUser < 0 {
				firstUser = i
			}
			lastUser = i
		}
	}
	if firstUser < 0 {
		return provider.Response{}, fmt.Errorf("replay %s: the request has no user message", p.name)
	}
	ci, err := p.pick(req.Messages[firstUser].Content)
	if err != nil {
		return provider.Response{}, err
	}
	conv := p.script.Conversations[ci]
	ti := 0
	var toolResults []string
	for _, m := range req.Messages[lastUser+1:] {
		switch m.Role {
		case messages.RoleAssistant:
			ti++
		case messages.RoleTool:
			toolResults = append(toolResults, m.Content)
		}
	}
	if ti >= len(conv.Turns) {
		return provider.Response{}, fmt.Errorf("replay %s: the script ran out: the model was asked for turn %d of this user message but %s has only %d", p.name, ti+1, p.convName(ci), len(conv.Turns))
	}
	turn := conv.Turns[ti]

	if turn.DelayMs > 0 {
		t := time.NewTimer(time.Duration(turn.DelayMs) * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return provider.Response{}, fmt.Errorf("replay %s: %w", p.name, context.Cause(ctx))
		}
	}
	if err := ctx.Err(); err != nil {
		return provider.Response{}, fmt.Errorf("replay %s: %w", p.name, err)
	}
	if turn.Error != nil && p.shouldFail(ci, ti, turn.Error.Times) {
		return provider.Response{}, turnError(turn.Error)
	}

	lastTool := ""
	for _, m := range req.Messages {
		if m.Role == messages.RoleTool {
			lastTool = m.Content
		}
	}
	text, err := expand(turn.Text, lastTool, toolResults)
	if err != nil {
		return provider.Response{}, fmt.Errorf("replay %s, %s turn %d: %w", p.name, p.convName(ci), ti+1, err)
	}
	reasoning, err := expand(turn.Reasoning, lastTool, toolResults)
	if err != nil {
		return provider.Response{}, fmt.Errorf("replay %s, %s turn %d: %w", p.name, p.convName(ci), ti+1, err)
	}

	// Ids continue the count of the calls already in the conversation, so
	// they are unique within it, not just within this answer.
	n := 0
	for _, m := range req.Messages {
		n += len(m.ToolCalls)
	}
	resp := provider.Response{
		ID:      fmt.Sprintf("replay-%d-%d", ci+1, ti+1),
		Model:   "replay/" + p.name,
		Message: messages.ChatMessage{Role: messages.RoleAssistant, Content: text, Reasoning: reasoning},
	}
	for i, tc := range turn.ToolCalls {
		resp.Message.ToolCalls = append(resp.Message.ToolCalls, messages.ToolCall{
			ID: "call_" + strconv.Itoa(n+i), Name: tc.Name, Arguments: argumentsText(tc.Arguments),
		})
	}
	if turn.Usage != nil {
		resp.Usage, resp.UsageReported = *turn.Usage, true
		if resp.Usage.TotalTokens == 0 {
			resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
		}
	}
	if req.Stream && onDelta != nil {
		for _, piece := range pieces(reasoning) {
			onDelta(provider.Delta{Reasoning: piece})
		}
		for _, piece := range pieces(text) {
			onDelta(provider.Delta{Text: piece})
		}
	}
	return resp, nil
}

// pick chooses the conversation for a first user message.
func (p *Provider) pick(firstUser string) (int, error) {
	fallback := -1
	for i, c := range p.script.Conversations {
		if c.Match == "" {
			if fallback < 0 {
				fallback = i
			}
			continue
		}
		if strings.Contains(firstUser, c.Match) {
			return i, nil
		}
	}
	if fallback < 0 {
		return 0, fmt.Errorf("replay %s: no conversation matches the first user message %q and none is without a match", p.name, cutString(firstUser, 80))
	}
	return fallback, nil
}

func (p *Provider) convName(ci int) string {
	if m := p.script.Conversations[ci].Match; m != "" {
		return fmt.Sprintf("conversation %d (match %q)", ci+1, m)
	}
	return fmt.Sprintf("conversation %d", ci+1)
}

// shouldFail counts a failure at (conversation, turn) and says whether this
// call is one of the failing ones.
func (p *Provider) shouldFail(ci, ti, times int) bool {
	if times < 0 {
		return true
	}
	times = max(times, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	k := [2]int{ci, ti}
	if p.failed[k] >= times {
		return false
	}
	p.failed[k]++
	return true
}

func turnError(e *TurnError) error {
	if e.Status == 0 {
		return provider.NetworkError(errors.New(e.Message), "")
	}
	return provider.ClassifyStatus(e.Status, e.Message)
}

// expand fills the {{lastToolResult}} and {{toolResult:N}} placeholders.
func expand(s, lastTool string, results []string) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	s = strings.ReplaceAll(s, "{{lastToolResult}}", lastTool)
	var b strings.Builder
	for {
		i := strings.Index(s, "{{toolResult:")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		arg := s[i+len("{{toolResult:") : i+j]
		n, err := strconv.Atoi(strings.TrimSpace(arg))
		if err != nil || n < 1 || n > len(results) {
			return "", fmt.Errorf("{{toolResult:%s}}: this user turn has %d tool results (numbered from 1)", arg, len(results))
		}
		b.WriteString(s[:i])
		b.WriteString(results[n-1])
		s = s[i+j+2:]
	}
}

// argumentsText keeps a JSON string verbatim and compacts anything else.
func argumentsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "{}"
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// pieces cuts s into up to four deltas at word boundaries, so a stream
// looks like a stream.
func pieces(s string) []string {
	if s == "" {
		return nil
	}
	words := strings.SplitAfter(s, " ")
	per := max((len(words)+3)/4, 1)
	var out []string
	for i := 0; i < len(words); i += per {
		out = append(out, strings.Join(words[i:min(i+per, len(words))], ""))
	}
	return out
}

func cutString(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
