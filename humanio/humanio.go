// Package humanio is how a run reaches a person: a terminal prompt on
// stderr answered by a line on stdin, or the bridge protocol
// (`--interactive-stdin`), where requests go out as JSON lines on stderr
// and answers come back as JSON lines on stdin. Both only listen to the
// bus and publish answers on it, so the gate and the ask tools take the
// same path whoever answers, and a remote process could answer instead.
package humanio

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/messages"
)

// Publisher publishes answers on the bus.
type Publisher interface {
	Publish(subject string, msg any, trace messages.Trace) error
}

// LineWriter writes one whole protocol line; the event sink is one, so a
// bridge's requests never interleave with the event stream.
type LineWriter interface {
	WriteLine(line []byte)
}

// Bridge speaks the stdin/stderr JSON protocol for one run.
//
// It writes every request line itself, after registering the request, so
// a line a person (or program) can read is always one the bridge will
// accept an answer for: there is no "answer before the request" to keep.
// An approval is named by the request id the gate minted for it; a
// decision must echo that id, and the model's tool-call id, which the
// model chooses and may repeat, decides nothing.
type Bridge struct {
	runID string
	pub   Publisher
	out   LineWriter

	mu        sync.Mutex
	approvals map[string]messages.ApprovalRequired // by request id
	questions map[string]messages.UserInputRequired
	// uses counts, by tool-call id as a reader of a line decodes it
	// (shownID), the gated calls of this run that an approval line may
	// have shown under it: every request the gate asked (announced here,
	// declined here, or settled before it got here) and every call the
	// gate settled itself (a policy, an allowlist, a refusal), whose
	// approval_required and approval_resolved events the stream carries.
	// A decision naming only a call id (the original's protocol) counts
	// only for an id used once: one written for any earlier line under
	// that id must not land on a later call the model gave the same id.
	uses map[string]int
	// counted is the requests already counted in uses, by request id and
	// read call id: a request is one use however many lines and notices
	// name it, and a second request under its id (anyone on the bus can
	// publish one) is another use of its own call id.
	counted map[[2]string]bool
	// announced is the digest of every approval line written, by request
	// id, for the whole run: an id is announced once, and a second request
	// under it never replaces what the person read.
	announced map[string][sha256.Size]byte
	// hashes is the action hash each pending approval's line carries.
	hashes map[string]string
	// settledBy is who the gate says settled each request it took off
	// this bridge (answered remotely, timed out, cancelled), by request
	// id, or settled before the bridge was handed it: an answer to one
	// is refused, saying so, and one handed over late is not shown.
	settledBy map[string]string
	closed    bool
	subs      []*bus.Subscription
}

// NewBridge writes requests to out (the run's stderr lines) and publishes
// answers on pub.
func NewBridge(runID string, pub Publisher, out LineWriter) *Bridge {
	return &Bridge{runID: runID, pub: pub, out: out,
		approvals: map[string]messages.ApprovalRequired{}, questions: map[string]messages.UserInputRequired{},
		uses: map[string]int{}, counted: map[[2]string]bool{},
		announced: map[string][sha256.Size]byte{}, hashes: map[string]string{}, settledBy: map[string]string{}}
}

// Attach subscribes to the run's approval and question requests on bs.
func (b *Bridge) Attach(ctx context.Context, bs *bus.Bus, opts ...bus.SubOption) error {
	s1, err := bus.Subscribe(ctx, bs, messages.ApprovalRequiredSubject(b.runID), func(m bus.Msg[messages.ApprovalRequired]) {
		b.approvalRequired(m.Value)
	}, append(opts, bus.Unbounded())...)
	if err != nil {
		return err
	}
	s2, err := bus.Subscribe(ctx, bs, messages.InputRequiredSubject(b.runID), func(m bus.Msg[messages.UserInputRequired]) {
		b.inputRequired(m.Value)
	}, append(opts, bus.Unbounded())...)
	if err != nil {
		s1.Stop()
		return err
	}
	b.subs = []*bus.Subscription{s1, s2}
	return nil
}

// Detach stops listening.
func (b *Bridge) Detach() {
	for _, s := range b.subs {
		s.Stop()
	}
}

func (b *Bridge) approvalRequired(req messages.ApprovalRequired) {
	if req.RequestID == "" {
		return // not asked by the gate: nothing a decision could name
	}
	ev := events.ApprovalRequired(req, "")
	ambiguous := ambiguousArgs(req.ExecuteArgs)
	if req.ExecuteToolName != "" && ambiguous == nil {
		// The digest of exactly what will run: a decision that echoes it
		// is taken only for that action.
		ev.ActionHash, ambiguous = approvals.ActionHash(req.ExecuteToolName, req.ExecuteArgs)
	}
	line := events.RenderWhole(ev)
	sum := sha256.Sum256(line)
	b.mu.Lock()
	// Counted before the line is written, and whatever happens to it:
	// a declined request's approval_resolved event names its call too.
	b.use(req.RequestID, req.ToolCallID)
	closed := b.closed
	prev, again := b.announced[req.RequestID]
	first, pending := b.approvals[req.RequestID]
	_, settledEarly := b.settledBy[req.RequestID]
	switch {
	case settledEarly && !again:
		// The gate settled it (a remote approver, a cancel) before the
		// bus brought it here: nobody is left to answer it.
		b.mu.Unlock()
		return
	case again:
		// A second request under an announced id (a redelivery, or
		// anyone else on the bus): the person read the first one, and no
		// answer to it may decide another. A different one withdraws the
		// id: it decides nothing more, and the gate's call is declined.
		if prev == sum {
			b.mu.Unlock()
			return
		}
		delete(b.approvals, req.RequestID)
		delete(b.hashes, req.RequestID)
	case !closed:
		b.announced[req.RequestID] = sum
		if ambiguous == nil {
			b.approvals[req.RequestID] = req
			b.hashes[req.RequestID] = ev.ActionHash
		}
	}
	b.mu.Unlock()
	switch {
	case again:
		if pending {
			// Both: the gate takes the one that names its call, and a
			// call nobody can answer any more must not wait forever.
			const note = "This approval was declined: another request was announced under its request id, so no answer can be told apart."
			b.decline(first, note)
			b.decline(req, note)
		}
	case closed:
		b.decline(req, "Nobody can answer: stdin is closed.")
	case ambiguous != nil:
		// A bridge parses the arguments with its own JSON reader: keys
		// that repeat (up to case) would show it one value while the tool
		// runs another.
		b.decline(req, "This call was declined: its arguments cannot be shown exactly ("+ambiguous.Error()+"). Send each argument once.")
	default:
		b.out.WriteLine(line)
	}
}

// Settled takes a call the gate has resolved, whoever resolved it. An
// asked request is taken off the bridge: an answer to it afterwards
// decides nothing and is refused with who settled it. A call the gate
// settled without asking (no request id) counts as a use of its call id,
// since its events show that id: the gate says so before they go out.
// The gate calls it on its own goroutine; it only takes the lock.
func (b *Bridge) Settled(d messages.ApprovalDecided) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.use(d.RequestID, d.ToolCallID)
	if d.RequestID == "" {
		return
	}
	by := d.DecidedBy
	if by == "" {
		by = "the gate"
	}
	if _, ok := b.approvals[d.RequestID]; ok {
		delete(b.approvals, d.RequestID)
		delete(b.hashes, d.RequestID)
		b.settledBy[d.RequestID] = by
		return
	}
	if _, shown := b.announced[d.RequestID]; !shown {
		b.settledBy[d.RequestID] = by // settled before it got here
	}
	// Else it was answered or withdrawn here: that stands.
}

// use counts one gated call under callID; a request already counted is
// not counted again. Call with mu held.
func (b *Bridge) use(requestID, callID string) {
	read := shownID(callID)
	if requestID != "" {
		key := [2]string{requestID, read}
		if b.counted[key] {
			return
		}
		b.counted[key] = true
	}
	b.uses[read]++
}

// ambiguousArgs says why args could read differently to two JSON
// readers (a key repeated, exactly or up to case; trailing data), or nil.
func ambiguousArgs(args json.RawMessage) error {
	if len(bytes.TrimSpace(args)) == 0 {
		return nil
	}
	_, err := approvals.Canonical(args)
	return err
}

// shownID is a tool-call id as a reader of the request line decodes it:
// JSON turns each byte that is not UTF-8 into U+FFFD, so two ids the
// model sent apart may read the same, and a bridge can only echo what it
// read.
func shownID(id string) string {
	data, err := json.Marshal(id)
	if err != nil {
		return id
	}
	var s string
	if json.Unmarshal(data, &s) != nil {
		return id
	}
	return s
}

func (b *Bridge) inputRequired(req messages.UserInputRequired) {
	b.mu.Lock()
	closed := b.closed
	if !closed {
		b.questions[req.RequestID] = req
	}
	b.mu.Unlock()
	if closed {
		_ = b.pub.Publish(messages.InputAnsweredSubject(b.runID), messages.UserInputAnswered{Place: req.Place, RequestID: req.RequestID}, nil)
		return
	}
	suggestions := req.Suggestions
	if suggestions == nil {
		suggestions = []messages.Suggestion{}
	}
	b.writeLine(messages.Event{
		Type: messages.EventUserInputRequired, Place: req.Place, RequestID: req.RequestID, Question: req.Question,
		Suggestions: suggestions, AllowCustom: messages.Ptr(req.AllowCustom), Task: req.Task,
	})
}

// writeLine writes one request whole: requests are never cut.
func (b *Bridge) writeLine(ev messages.Event) {
	b.out.WriteLine(events.RenderWhole(ev))
}

// inbound is one protocol line read from stdin.
type inbound struct {
	Type       string `json:"type"`
	ToolCallID string `json:"toolCallId"`
	Approved   *bool  `json:"approved"`
	Note       string `json:"note"`
	Message    string `json:"message"`
	Remember   string `json:"remember"`
	RequestID  string `json:"requestId"`
	Response   string `json:"response"`
	// ActionHash, when a decision carries it, must be the actionHash of
	// the request line it answers.
	ActionHash string `json:"actionHash"`
}

// errNotJSON marks a stdin line that is no JSON value at all.
var errNotJSON = errors.New("not JSON")

// parseInbound reads one protocol line strictly: one JSON object, valid
// UTF-8, no key twice (exactly or up to case, at any depth), and every
// protocol key spelled exactly. Go's decoder would take the last of two
// keys, and fill a field from a key that differs only in case; a bridge,
// or a relay that checks its lines, may read the first or only the exact
// spelling, so such a line would mean one decision to it and another to
// jazz. Unknown keys are ignored (newer bridges may send more).
func parseInbound(line []byte) (inbound, error) {
	var m inbound
	if !json.Valid(line) {
		return m, errNotJSON
	}
	if !utf8.Valid(line) {
		return m, errors.New("it is not valid UTF-8")
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(line, &fields) != nil {
		return m, errors.New("it is not a JSON object")
	}
	if _, err := approvals.Canonical(line); err != nil {
		return m, fmt.Errorf("it is ambiguous: %w", err)
	}
	for k := range fields {
		for _, want := range inboundKeys() {
			if k != want && strings.EqualFold(k, want) {
				return m, fmt.Errorf("its key %q is not spelled %q", k, want)
			}
		}
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return m, fmt.Errorf("a field has the wrong type: %w", err)
	}
	return m, nil
}

// inboundKeys are the JSON keys of inbound.
func inboundKeys() []string {
	t := reflect.TypeFor[inbound]()
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	return keys
}

// Serve reads protocol lines from in until EOF; then every pending
// request is declined or left unanswered (fail closed).
//
// A line longer than MaxLine is dropped whole, and said; the lines after
// it are read as usual (an over-long line is not the end of stdin).
func (b *Bridge) Serve(in io.Reader, warn func(string)) {
	lines := make(chan Line, 16)
	go ReadLines(context.Background(), in, MaxLine, lines)
	notJSON := 0
	for l := range lines {
		if l.Cut {
			warn(fmt.Sprintf("ignored a stdin line longer than %d bytes: it decides nothing", MaxLine))
			continue
		}
		line := strings.TrimSpace(l.Text)
		if line == "" {
			continue
		}
		m, err := parseInbound([]byte(line))
		if err != nil && !errors.Is(err, errNotJSON) {
			warn("ignored a stdin line: " + err.Error())
			continue
		}
		if err != nil {
			// Said once, with why: text piped into a bridge (a diff) is
			// not the prompt, and one warning a line would drown the rest.
			if notJSON == 0 {
				warn("ignored a stdin line that is not JSON: in bridge mode stdin carries only protocol lines (approval_decision, user_input_response); the prompt and any text for it go in the argument")
			}
			notJSON++
			continue
		}
		switch m.Type {
		case "approval_decision":
			b.decided(m, warn)
		case "user_input_response":
			b.mu.Lock()
			req, ok := b.questions[m.RequestID]
			delete(b.questions, m.RequestID)
			b.mu.Unlock()
			if !ok {
				warn(fmt.Sprintf("ignored user_input_response for unknown requestId %q", m.RequestID))
				continue
			}
			_ = b.pub.Publish(messages.InputAnsweredSubject(b.runID), messages.UserInputAnswered{Place: req.Place, RequestID: req.RequestID, Response: m.Response}, nil)
		default:
			warn(fmt.Sprintf("ignored a stdin line of unknown type %q", m.Type))
		}
	}
	if notJSON > 1 {
		warn(fmt.Sprintf("ignored %d more stdin lines that are not JSON", notJSON-1))
	}
	b.mu.Lock()
	b.closed = true
	pendingA := b.approvals
	pendingQ := b.questions
	b.approvals = map[string]messages.ApprovalRequired{}
	b.questions = map[string]messages.UserInputRequired{}
	b.mu.Unlock()
	for _, req := range pendingA {
		b.decline(req, "Nobody can answer: stdin was closed while this approval was pending.")
	}
	for _, q := range pendingQ {
		_ = b.pub.Publish(messages.InputAnsweredSubject(b.runID), messages.UserInputAnswered{Place: q.Place, RequestID: q.RequestID}, nil)
	}
}

// decided takes one approval_decision line: it must name, by request id,
// an approval this bridge announced and that is still pending, and the
// tool-call id, when given, must be that request's.
//
// The original's bridges name the call only ({"toolCallId":"call_1"}),
// so a decision without a request id is taken for the pending request
// with that tool-call id when it is the only gated call of this run
// whose approval lines could show that id (see uses). The model chooses
// call ids and may reuse one, so an id that named two calls (a later
// batch, a sub-agent, one the policy approved) decides nothing: a stale
// or repeated decision can never land on a call the person did not see.
func (b *Bridge) decided(m inbound, warn func(string)) {
	if m.RequestID == "" {
		id, why := b.byCallID(m.ToolCallID)
		if id == "" {
			warn(fmt.Sprintf("ignored approval_decision without \"requestId\" (toolCallId %q): %s; echo the requestId of the approval_required line it answers", m.ToolCallID, why))
			return
		}
		m.RequestID = id
	}
	if m.Approved == nil {
		warn(fmt.Sprintf("ignored approval_decision without \"approved\" for requestId %q", m.RequestID))
		return
	}
	b.mu.Lock()
	req, ok := b.approvals[m.RequestID]
	hash := b.hashes[m.RequestID]
	settledBy, settled := b.settledBy[m.RequestID]
	mismatch := ok && m.ToolCallID != "" && m.ToolCallID != shownID(req.ToolCallID)
	otherAction := ok && m.ActionHash != "" && m.ActionHash != hash
	if ok && !mismatch && !otherAction {
		delete(b.approvals, m.RequestID)
		delete(b.hashes, m.RequestID)
	}
	b.mu.Unlock()
	switch {
	case !ok && settled:
		warn(fmt.Sprintf("ignored approval_decision for requestId %q: it was already settled (%s), so this answer decides nothing", m.RequestID, settledBy))
	case !ok:
		warn(fmt.Sprintf("ignored approval_decision for unknown or already decided requestId %q", m.RequestID))
	case mismatch:
		warn(fmt.Sprintf("ignored approval_decision for requestId %q: it names toolCallId %q, but that request is for %q", m.RequestID, m.ToolCallID, shownID(req.ToolCallID)))
	case otherAction:
		warn(fmt.Sprintf("ignored approval_decision for requestId %q: it names actionHash %q, but that request's is %q", m.RequestID, m.ActionHash, hash))
	default:
		b.publishDecision(req, m)
	}
}

// byCallID is the request id of the pending approval a decision naming
// only callID answers, or "" and why none.
func (b *Bridge) byCallID(callID string) (string, string) {
	if callID == "" {
		return "", "it names no request"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch n := b.uses[callID]; {
	case n == 0:
		return "", "no request was announced for that call"
	case n > 1:
		return "", fmt.Sprintf("%d gated calls of this run had that toolCallId, so it does not say which one this answers", n)
	}
	for id, req := range b.approvals {
		if shownID(req.ToolCallID) == callID {
			return id, ""
		}
	}
	return "", "that call was already decided"
}

// publishDecision sends a bridge's answer to the gate.
func (b *Bridge) publishDecision(req messages.ApprovalRequired, m inbound) {
	note := m.Note
	if note == "" {
		note = m.Message
	}
	_ = b.pub.Publish(messages.ApprovalDecidedSubject(b.runID), messages.ApprovalDecided{
		Place: req.Place, RequestID: req.RequestID, ToolCallID: req.ToolCallID, ToolName: req.ToolName, Approved: *m.Approved,
		DecidedBy: messages.DecidedByBridge, Note: note, Remember: m.Remember,
	}, req.Trace)
}

func (b *Bridge) decline(req messages.ApprovalRequired, note string) {
	_ = b.pub.Publish(messages.ApprovalDecidedSubject(b.runID), messages.ApprovalDecided{
		Place: req.Place, RequestID: req.RequestID, ToolCallID: req.ToolCallID, ToolName: req.ToolName, Approved: false,
		DecidedBy: messages.DecidedByBridge, Note: note,
	}, req.Trace)
}
