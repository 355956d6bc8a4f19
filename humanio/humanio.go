// Package humanio is how a run reaches a person: a terminal prompt on
// stderr answered by a line on stdin, or the bridge protocol
// (`--interactive-stdin`), where requests go out as JSON lines on stderr
// and answers come back as JSON lines on stdin. Both only listen to the
// bus and publish answers on it, so the gate and the ask tools take the
// same path whoever answers, and a remote process could answer instead.
package humanio

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/messages"
)

// Publisher publishes answers on the bus.
type Publisher interface {
	Publish(subject string, msg any, trace messages.Trace) error
}

// Bridge speaks the stdin/stderr JSON protocol for one run.
type Bridge struct {
	runID string
	pub   Publisher
	out   io.Writer

	mu        sync.Mutex
	approvals map[string]messages.ApprovalRequired
	questions map[string]messages.UserInputRequired
	closed    bool
	subs      []*nats.Subscription
	// eventsCarryApprovals: the --events stream already renders every
	// approval_required (the approval category is on), so the bridge does
	// not write a second line for the asked ones; it still tracks them.
	eventsCarryApprovals bool
	// early holds decisions that arrived before their request reached the
	// bridge: with eventsCarryApprovals the reader sees the gate's event,
	// which travels on another subject, and may answer first.
	early map[string]inbound
}

// maxEarly bounds the decisions kept for requests not seen yet.
const maxEarly = 64

// NewBridge writes requests to out (stderr) and publishes answers on pub.
func NewBridge(runID string, pub Publisher, out io.Writer) *Bridge {
	return &Bridge{runID: runID, pub: pub, out: out,
		approvals: map[string]messages.ApprovalRequired{}, questions: map[string]messages.UserInputRequired{}}
}

// EventsCarryApprovals tells the bridge that the event stream already
// shows approval requests, so it writes none of its own.
func (b *Bridge) EventsCarryApprovals() { b.eventsCarryApprovals = true }

// Attach subscribes to the run's approval and question requests.
func (b *Bridge) Attach(conn *nats.Conn) error {
	s1, err := conn.Subscribe(messages.ApprovalRequiredSubject(b.runID), func(m *nats.Msg) {
		req, err := messages.Decode[messages.ApprovalRequired](m.Data)
		if err == nil {
			b.approvalRequired(req)
		}
	})
	if err != nil {
		return err
	}
	s2, err := conn.Subscribe(messages.InputRequiredSubject(b.runID), func(m *nats.Msg) {
		req, err := messages.Decode[messages.UserInputRequired](m.Data)
		if err == nil {
			b.inputRequired(req)
		}
	})
	if err != nil {
		return err
	}
	b.subs = []*nats.Subscription{s1, s2}
	return nil
}

// Detach stops listening.
func (b *Bridge) Detach() {
	for _, s := range b.subs {
		_ = s.Unsubscribe()
	}
}

func (b *Bridge) approvalRequired(req messages.ApprovalRequired) {
	b.mu.Lock()
	if m, answered := b.early[req.ToolCallID]; answered {
		// Answered before it reached us (even if stdin closed since).
		delete(b.early, req.ToolCallID)
		b.mu.Unlock()
		b.publishDecision(req, m)
		return
	}
	closed := b.closed
	if !closed {
		b.approvals[req.ToolCallID] = req
	}
	b.mu.Unlock()
	if closed {
		b.decline(req, "Nobody can answer: stdin is closed.")
		return
	}
	if b.eventsCarryApprovals {
		return
	}
	b.writeLine(messages.Event{
		Type: messages.EventApprovalRequired, Place: req.Place, ToolName: req.ToolName, Message: req.Message,
		PreviewDiff: req.PreviewDiff, RiskLevel: req.RiskLevel, Arguments: req.ExecuteArgs,
	}, req.ToolCallID)
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
	b.writeLine(messages.Event{
		Type: messages.EventUserInputRequired, Place: req.Place, RequestID: req.RequestID, Question: req.Question,
		Suggestions: req.Suggestions, AllowCustom: messages.Ptr(req.AllowCustom),
	}, "")
}

func (b *Bridge) writeLine(ev messages.Event, toolCallID string) {
	if toolCallID != "" {
		ev.ToolCallID = toolCallID
	}
	if ev.Suggestions == nil && ev.Type == messages.EventUserInputRequired {
		ev.Suggestions = []messages.Suggestion{}
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return
	}
	b.mu.Lock()
	_, _ = b.out.Write(append(data, '\n'))
	b.mu.Unlock()
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
}

// Serve reads protocol lines from in until EOF; then every pending
// request is declined or left unanswered (fail closed).
func (b *Bridge) Serve(in io.Reader, warn func(string)) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var m inbound
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			warn(fmt.Sprintf("ignored a stdin line that is not JSON: %v", err))
			continue
		}
		switch m.Type {
		case "approval_decision":
			if m.Approved == nil {
				warn(fmt.Sprintf("ignored approval_decision without \"approved\" for toolCallId %q", m.ToolCallID))
				continue
			}
			b.mu.Lock()
			req, ok := b.approvals[m.ToolCallID]
			delete(b.approvals, m.ToolCallID)
			keep := !ok && b.eventsCarryApprovals && len(b.early) < maxEarly && m.ToolCallID != ""
			if keep {
				if b.early == nil {
					b.early = map[string]inbound{}
				}
				b.early[m.ToolCallID] = m
			}
			b.mu.Unlock()
			if keep {
				continue // its request is still on its way to us
			}
			if !ok {
				warn(fmt.Sprintf("ignored approval_decision for unknown or already decided toolCallId %q", m.ToolCallID))
				continue
			}
			b.publishDecision(req, m)
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

// publishDecision sends a bridge's answer to the gate.
func (b *Bridge) publishDecision(req messages.ApprovalRequired, m inbound) {
	note := m.Note
	if note == "" {
		note = m.Message
	}
	_ = b.pub.Publish(messages.ApprovalDecidedSubject(b.runID), messages.ApprovalDecided{
		Place: req.Place, ToolCallID: req.ToolCallID, ToolName: req.ToolName, Approved: *m.Approved,
		DecidedBy: messages.DecidedByBridge, Note: note, Remember: m.Remember,
	}, req.Trace)
}

func (b *Bridge) decline(req messages.ApprovalRequired, note string) {
	_ = b.pub.Publish(messages.ApprovalDecidedSubject(b.runID), messages.ApprovalDecided{
		Place: req.Place, ToolCallID: req.ToolCallID, ToolName: req.ToolName, Approved: false,
		DecidedBy: messages.DecidedByBridge, Note: note,
	}, req.Trace)
}
