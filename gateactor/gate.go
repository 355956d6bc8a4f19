// Package gateactor owns the approval gate of one run tree: the policy
// dial, the per-tool and per-command allowlists, the queue of calls waiting
// for a decision, and who answers when nothing automatic does. Every gated
// call of the run (subagents' included) passes through one gate actor, one
// at a time, re-checked against the current policy when dequeued.
package gateactor

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/deadline"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/telemetry"
)

// CommandChecks are the shell analyses the gate needs; shellguard
// provides them.
type CommandChecks struct {
	// AllowlistApproves is true when every simple command of cmd has an
	// allowlisted key and nothing in it escapes the check.
	AllowlistApproves func(cmd string, entries []string) bool
	// StaticClassify proves a command read-only, or leaves it undecided.
	StaticClassify func(cmd string) (level string, decided bool)
	// Keys lists the allowlist keys of cmd ("always approve this command").
	Keys func(cmd string) ([]string, error)
	// Judge records, for an approved command, which step approved it
	// (allowlist, static, classifier, human, policy, tool) and on what
	// grounds, as a JSON shellguard.Judgement the execute twin checks
	// every expanded argv against. Nil sends no judgement.
	Judge func(cmd, by string, entries []string, level string) json.RawMessage
	// Why says why no automatic step approved cmd, for the model's
	// refusal ("not auto-approved: …"); nil or "" adds nothing.
	Why func(cmd string, entries []string) string
	// AllowlistNote is what an approval by the command allowlist says on
	// its approval_resolved event: which keys an entry admitted with
	// every argument (programs no inspect-only grammar holds). Nil or ""
	// says nothing.
	AllowlistNote func(cmd string) string
}

// Classifier asks the harness model to rate a command. Any error, or a
// reply that is not exactly read-only or low-risk, counts as high-risk.
type Classifier func(ctx context.Context, command string) (string, error)

// Publisher puts gate requests on the bus for approvers to see.
type Publisher interface {
	Publish(subject string, msg any, trace messages.Trace) error
}

// Config is the gate's starting state and its services.
type Config struct {
	RunID  string
	Policy string
	// Reachable: a human can answer (terminal or bridge). Unset policy
	// then approves read-only and low-risk, and the rest is asked.
	Reachable bool
	// ModelContext: the harness classifier may be used (terminal runs
	// only; bridges and headless runs send no model call).
	ModelContext         bool
	AutoApproveTools     []string
	AutoApprovedCommands []string
	Checks               CommandChecks
	Classify             Classifier
	Bus                  Publisher
	Events               *events.Emitter
	Deadline             *deadline.Deadline
	// Ctx is the run's lifetime; classification calls stop with it.
	Ctx context.Context
	// Telemetry records each decision as `gate <tool>` under the span the
	// request's Trace carries (the tool call's); nil records nothing.
	Telemetry *telemetry.Telemetry
}

// Withdrawer is a Publisher that keeps asked requests somewhere else too
// (remote approvals' bucket). It is told each asked request the gate
// resolved, whoever answered it and however it ended (a decision, a
// timeout, a cancel), so that copy is withdrawn with it.
type Withdrawer interface {
	Withdraw(messages.ApprovalDecided)
}

// Unasker is a Publisher told of each gated call the gate settles without
// asking anyone (a policy, an allowlist, an unattended refusal, a cancel
// before it was asked), before that call's approval_required and
// approval_resolved events go out. Those lines carry the model's
// tool-call id too, so a local answerer that takes an answer naming only
// a call id (a bridge) must know of them before anyone can read them.
type Unasker interface {
	Unasked(messages.ApprovalDecided)
}

type pending struct {
	req    messages.ApprovalRequired
	sender *actor.PID
	// seq numbers requests in arrival order; a classifier's late verdict
	// names the request it was for by it, never by the model's call id.
	seq uint64
	// queued is when the request arrived: the gate span covers the wait.
	queued   time.Time
	remember string
	// judgedBy and level are the automatic step that settled the call
	// and the rating it rested on, for the command's judgement.
	judgedBy, level string
	// shown is the message of the call's approval_resolved event.
	shown string
}

// classified is the harness model's verdict, back on the gate's goroutine.
type classified struct {
	seq   uint64
	level string
}

// Gate is the approval gate actor.
type Gate struct {
	cfg    Config
	policy string
	// toolAllow and cmdAllow hold for the whole run tree: the session's
	// lists and every "always" answered on the top-level agent's prompt.
	toolAllow map[string]bool
	cmdAllow  []string
	// agentTools and agentCmds hold what "always" on a sub-agent's prompt
	// added, for that sub-agent only (keyed by its agent id): a person who
	// trusts one child's writes has not trusted its parent's or siblings'.
	agentTools map[string]map[string]bool
	agentCmds  map[string][]string
	queue      []pending
	seq        uint64
	current    *pending
	asking     bool
	resume     func()
	// cancelled: the run is stopping; every call, queued or new, is declined.
	cancelled bool
	// ended holds the sub-agents that have ended (AgentEnded): a request
	// of theirs that arrives late is declined, not asked.
	ended map[string]bool
}

// New is the Producer of a gate actor.
func New(cfg Config) actor.Producer {
	return func() actor.Receiver {
		g := &Gate{cfg: cfg, policy: cfg.Policy, toolAllow: map[string]bool{},
			agentTools: map[string]map[string]bool{}, agentCmds: map[string][]string{}}
		for _, t := range cfg.AutoApproveTools {
			g.toolAllow[t] = true
		}
		g.cmdAllow = append(g.cmdAllow, cfg.AutoApprovedCommands...)
		return g
	}
}

// Receive handles requests, decisions and policy changes.
func (g *Gate) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case messages.ApprovalRequired:
		g.seq++
		m.RequestID = "" // the gate names its own requests
		p := pending{req: m, sender: c.Sender(), seq: g.seq, queued: time.Now()}
		if g.endedAgent(m.Place) {
			// Sent late, by a sub-agent that has ended: not asked, nor
			// kept waiting behind a prompt.
			g.settle(c, &p, false, false, messages.DecidedByCancel, endedNote)
			return
		}
		g.queue = append(g.queue, p)
		g.next(c)
	case messages.ApprovalDecided:
		g.humanDecided(c, m)
	case messages.PolicyChanged:
		g.policy = m.Policy
	case classified:
		if g.current != nil && g.current.seq == m.seq {
			g.current.judgedBy, g.current.level = judgedByClassifier, m.level
			g.afterClassify(c, m.level)
		}
	case messages.AgentEnded:
		g.agentEnded(c, m.AgentID)
	case messages.CancelRun:
		g.declineAll(c)
	case actor.Stopped:
		g.declineAll(c)
	}
}

// next takes the head of the queue when the gate is free.
func (g *Gate) next(c *actor.Context) {
	for g.current == nil && len(g.queue) > 0 {
		p := g.queue[0]
		g.queue = g.queue[1:]
		g.current = &p
		if g.cancelled {
			g.resolve(c, false, false, messages.DecidedByCancel, cancelledNote)
			continue
		}
		if g.endedAgent(p.req.Place) {
			g.resolve(c, false, false, messages.DecidedByCancel, endedNote)
			continue
		}
		g.evaluate(c)
	}
}

// evaluate runs the gate order of tools-and-approval.md §5 on the current
// call, with the policy and allowlists as they are now.
func (g *Gate) evaluate(c *actor.Context) {
	p := g.current
	agent := p.req.Place.AgentID
	if why := p.req.HumanOnly; why != "" {
		// The call changes what decides later calls or runs: no
		// allowlist, remembered "always" or policy approves it.
		if g.cfg.Reachable {
			g.ask(c)
			return
		}
		g.resolve(c, false, true, messages.DecidedByNobody, UnattendedRefusal+" (only a person may approve it: "+why+")")
		return
	}
	if g.toolAllow[p.req.ToolName] || g.agentTools[agent][p.req.ToolName] {
		p.judgedBy = judgedByTool
		g.resolve(c, true, true, messages.DecidedByAllowlist, "")
		return
	}
	if p.req.NotAutomatic != "" {
		// The propose half found, where the call will run, what no
		// automatic step may approve: a person or the policy decides.
		g.afterClassify(c, messages.LevelHighRisk)
		return
	}
	cmdAllow := g.cmdAllow
	if own := g.agentCmds[agent]; len(own) > 0 {
		cmdAllow = append(append([]string(nil), g.cmdAllow...), own...)
	}
	if p.req.Command != "" && len(cmdAllow) > 0 && g.cfg.Checks.AllowlistApproves != nil &&
		g.cfg.Checks.AllowlistApproves(p.req.Command, cmdAllow) {
		p.judgedBy = judgedByAllowlist
		if g.cfg.Checks.AllowlistNote != nil {
			p.shown = g.cfg.Checks.AllowlistNote(p.req.Command)
		}
		g.resolve(c, true, true, messages.DecidedByAllowlist, "")
		return
	}
	level := p.req.RiskLevel
	if level == messages.LevelUnknown && p.req.Command != "" && g.needsClassifier() {
		if lvl, ok := g.staticLevel(p.req.Command); ok {
			p.judgedBy, p.level = judgedByStatic, lvl
			g.afterClassify(c, lvl)
			return
		}
		if g.cfg.ModelContext && g.cfg.Classify != nil {
			g.classifyAsync(c, p.seq, p.req.Command)
			return
		}
		g.afterClassify(c, messages.LevelHighRisk) // fail closed
		return
	}
	g.afterClassify(c, level)
}

func (g *Gate) needsClassifier() bool {
	eff := g.effectivePolicy()
	return eff == messages.PolicyReadOnly || eff == messages.PolicyLowRisk
}

func (g *Gate) staticLevel(cmd string) (string, bool) {
	if g.cfg.Checks.StaticClassify == nil {
		return "", false
	}
	return g.cfg.Checks.StaticClassify(cmd)
}

func (g *Gate) classifyAsync(c *actor.Context, seq uint64, command string) {
	engine, self := c.Engine(), c.PID()
	base := g.cfg.Ctx
	if base == nil {
		base = context.Background()
	}
	classify, dl := g.cfg.Classify, g.cfg.Deadline
	supervisor.Go(func() {
		defer dl.Busy()() // a model call: it counts against --timeout
		ctx, cancel := context.WithTimeout(base, 15*time.Second)
		defer cancel()
		lvl, err := classify(ctx, command)
		if err != nil || (lvl != messages.LevelReadOnly && lvl != messages.LevelLowRisk) {
			lvl = messages.LevelHighRisk
		}
		engine.Send(self, classified{seq: seq, level: lvl})
	}, func(string) {
		engine.Send(self, classified{seq: seq, level: messages.LevelHighRisk})
	})
}

// afterClassify finishes the gate order once the level is known.
func (g *Gate) afterClassify(c *actor.Context, level string) {
	if Covers(g.effectivePolicy(), level) {
		g.resolve(c, true, true, messages.DecidedByPolicy, "")
		return
	}
	if !g.cfg.Reachable {
		note := UnattendedRefusal
		if why := g.current.req.NotAutomatic; why != "" {
			note += " (not auto-approved: " + why + ")"
		} else if cmd := g.current.req.Command; cmd != "" && g.cfg.Checks.Why != nil {
			if why := g.cfg.Checks.Why(cmd, g.cmdAllow); why != "" {
				note += " (" + why + ")"
			}
		}
		g.resolve(c, false, true, messages.DecidedByNobody, note)
		return
	}
	g.ask(c)
}

// The approval steps a command's judgement names (shellguard.Approver).
const (
	judgedByTool       = "tool"
	judgedByAllowlist  = "allowlist"
	judgedByStatic     = "static"
	judgedByClassifier = "classifier"
	judgedByPolicy     = "policy"
	judgedByHuman      = "human"
)

// judgement is the approved command's judgement for the execute twin.
func (g *Gate) judgement(p *pending, auto bool) json.RawMessage {
	if p.req.Command == "" || g.cfg.Checks.Judge == nil {
		return nil
	}
	by := p.judgedBy
	switch {
	case !auto:
		by = judgedByHuman
	case by == "" || by == judgedByStatic && p.level != messages.LevelReadOnly:
		// The policy covered the call's level (high-risk covers all).
		by = judgedByPolicy
	}
	return g.cfg.Checks.Judge(p.req.Command, by, g.cmdAllow, p.level)
}

// effectivePolicy is the dial's setting, or the default when unset:
// read-only + low-risk where a human is reachable, nothing otherwise.
func (g *Gate) effectivePolicy() string {
	if g.policy != messages.PolicyNone {
		return g.policy
	}
	if g.cfg.Reachable {
		return messages.PolicyLowRisk
	}
	return messages.PolicyNone
}

// Covers says whether a policy auto-approves a call of the given level.
// A level that is not one of the known ones counts as high-risk.
func Covers(policy, level string) bool {
	rank := map[string]int{messages.LevelReadOnly: 1, messages.LevelLowRisk: 2, messages.LevelHighRisk: 3, messages.LevelUnknown: 3}
	p, ok := rank[policy]
	if !ok {
		return false
	}
	l, ok := rank[level]
	if !ok {
		l = 3
	}
	return l <= p
}

// UnattendedRefusal tells the model nobody can approve, and what to do.
const UnattendedRefusal = "This call needs approval, but nobody can respond in this run (it is unattended and no approval policy covers it). " +
	"Do not ask for approval and do not retry it. Use tools that need no approval, or explain in your answer what you could not do and why."

// ask puts the current call to a person: it gets its own request id,
// announced with it on the event stream and on the bus; only a decision
// that echoes that id settles it.
func (g *Gate) ask(c *actor.Context) {
	id, err := NewRequestID()
	if err != nil {
		g.resolve(c, false, false, messages.DecidedByNobody, "The approval request could not be made: "+err.Error())
		return
	}
	g.asking = true
	g.resume = g.cfg.Deadline.Pause()
	g.current.req.RequestID = id
	g.current.req.RememberScope = RememberScope(g.current.req.Place)
	if cmd := g.current.req.Command; cmd != "" && g.cfg.Checks.Keys != nil {
		// What "always this command" would add (remember computes the
		// same keys from the same command), for the person to read.
		if keys, err := g.cfg.Checks.Keys(cmd); err == nil {
			g.current.req.CommandKeys = keys
		}
	}
	req := g.current.req
	g.announce(req, "")
	if g.cfg.Bus != nil {
		if err := g.cfg.Bus.Publish(messages.ApprovalRequiredSubject(g.cfg.RunID), req, req.Trace); err != nil {
			note := "The approval request could not be delivered: " + err.Error()
			if tooLarge := (*bus.TooLargeError)(nil); errors.As(err, &tooLarge) {
				// Nobody was shown it, and nobody is shown a cut copy:
				// the model is told how to go on.
				note = messages.TooLargeToApprove(tooLarge.Size, tooLarge.Limit)
			}
			g.resolve(c, false, false, messages.DecidedByNobody, note)
		}
	}
}

// humanDecided takes a person's decision. It counts only for the request
// being asked right now, named by the id the gate minted for it; the
// model's tool-call id may be repeated, and a decision that names another
// call than the asked one is ignored too (fail closed).
func (g *Gate) humanDecided(c *actor.Context, d messages.ApprovalDecided) {
	if g.current == nil || !g.asking || !SameRequest(d.RequestID, g.current.req.RequestID) ||
		(d.ToolCallID != "" && d.ToolCallID != g.current.req.ToolCallID) {
		return // unknown, stale, forged or duplicate: ignored
	}
	if d.Approved {
		g.remember(d.Remember, g.current.req)
	}
	by := d.DecidedBy
	if by == "" {
		by = messages.DecidedByHuman
	}
	g.current.remember = d.Remember
	g.resolve(c, d.Approved, false, by, d.Note)
}

// RememberScope is how far "always" reaches when answered on a prompt
// raised at place: the whole run for the top-level agent, that sub-agent
// alone for a child.
func RememberScope(place messages.Place) string {
	if place.Depth > 0 {
		return messages.ScopeAgent
	}
	return messages.ScopeRun
}

// remember adds an approved call's tool or command keys to the allowlist
// of its scope (RememberScope).
func (g *Gate) remember(what string, req messages.ApprovalRequired) {
	agent := ""
	if RememberScope(req.Place) == messages.ScopeAgent {
		agent = req.Place.AgentID
	}
	switch what {
	case messages.RememberTool:
		if agent == "" {
			g.toolAllow[req.ToolName] = true
			return
		}
		if g.agentTools[agent] == nil {
			g.agentTools[agent] = map[string]bool{}
		}
		g.agentTools[agent][req.ToolName] = true
	case messages.RememberCommand:
		if g.cfg.Checks.Keys == nil || req.Command == "" {
			return
		}
		keys, err := g.cfg.Checks.Keys(req.Command)
		if err != nil {
			return
		}
		if agent == "" {
			g.cmdAllow = append(g.cmdAllow, keys...)
			return
		}
		g.agentCmds[agent] = append(g.agentCmds[agent], keys...)
	}
}

// resolve answers the current call and moves on to the next.
func (g *Gate) resolve(c *actor.Context, approved, auto bool, by, note string) {
	p := g.current
	g.current = nil
	if g.asking {
		g.asking = false
		if g.resume != nil {
			g.resume()
			g.resume = nil
		}
	}
	g.settle(c, p, approved, auto, by, note)
	g.next(c)
}

// settle decides p, which is not (or no longer) the current call: it is
// announced and recorded, every copy of an asked request is withdrawn,
// and its sender is answered.
func (g *Gate) settle(c *actor.Context, p *pending, approved, auto bool, by, note string) {
	asked := p.req.RequestID != ""
	d := messages.ApprovalDecided{
		Place:      p.req.Place,
		Trace:      p.req.Trace,
		RequestID:  p.req.RequestID,
		ToolCallID: p.req.ToolCallID,
		ToolName:   p.req.ToolName,
		Approved:   approved,
		Auto:       auto,
		DecidedBy:  by,
		Note:       note,
	}
	if approved {
		d.Judgement = g.judgement(p, auto)
	}
	if !asked {
		if u, ok := g.cfg.Bus.(Unasker); ok {
			u.Unasked(d)
		}
		g.announce(p.req, by) // settled without a person: announced now
	}
	if w, ok := g.cfg.Bus.(Withdrawer); ok && asked {
		// Whoever answered, and however the call ended, every other copy
		// of the request goes now: none may be left for someone to answer.
		w.Withdraw(d)
	}
	g.emitFor(p.req, messages.Event{
		Type:      messages.EventApprovalResolved,
		RequestID: p.req.RequestID,
		ToolName:  p.req.ToolName,
		Approved:  messages.Ptr(approved),
		Auto:      messages.Ptr(auto),
		Asked:     messages.Ptr(asked),
		DecidedBy: by,
		Message:   p.shown,
	})
	g.record(p, approved, by)
	if p.sender != nil {
		c.Send(p.sender, d)
	}
}

// record traces one decision under the call's span.
func (g *Gate) record(p *pending, approved bool, by string) {
	if !g.cfg.Telemetry.Enabled() {
		return
	}
	pl := p.req.Place
	ctx := telemetry.WithIDs(telemetry.Extract(context.Background(), p.req.Trace),
		telemetry.IDs{RunID: pl.RunID, AgentID: pl.AgentID, AgentName: pl.AgentName})
	g.cfg.Telemetry.RecordGateDecision(ctx, telemetry.GateDecision{
		ToolName: p.req.ToolName, CallID: p.req.ToolCallID, RiskTier: p.req.RiskLevel,
		Approved: approved, DecidedBy: by, Remember: p.remember, Asked: p.queued,
	})
}

const cancelledNote = "The run was cancelled before this call was approved."

// endedNote answers a call of a sub-agent that ended while it waited.
const endedNote = "The sub-agent that asked for this call ended before it was approved; it was not run."

// agentEnded marks a sub-agent ended and declines its calls: the queued
// ones without a prompt, and the one being asked with its prompt
// withdrawn (resolve), so the person is not left deciding on a call
// nothing will run while calls that can run wait behind it. A call it
// sends late is declined as it comes (Receive).
func (g *Gate) agentEnded(c *actor.Context, id string) {
	if id == "" {
		return
	}
	if g.ended == nil {
		g.ended = map[string]bool{}
	}
	g.ended[id] = true
	kept := g.queue[:0]
	for i := range g.queue {
		if p := g.queue[i]; g.endedAgent(p.req.Place) {
			g.settle(c, &p, false, false, messages.DecidedByCancel, endedNote)
		} else {
			kept = append(kept, p)
		}
	}
	clear(g.queue[len(kept):])
	g.queue = kept
	if g.current != nil && g.endedAgent(g.current.req.Place) {
		g.resolve(c, false, false, messages.DecidedByCancel, endedNote)
	}
}

// endedAgent says whether a call comes from an ended sub-agent or from
// one it started (whose own end may not have reached the gate yet).
func (g *Gate) endedAgent(p messages.Place) bool {
	return g.ended[p.AgentID] || p.ParentAgentID != "" && g.ended[p.ParentAgentID]
}

// declineAll answers the pending call and the queue with a refusal; resolve
// moves on through next, which declines while cancelled.
func (g *Gate) declineAll(c *actor.Context) {
	g.cancelled = true
	if g.current != nil {
		g.resolve(c, false, false, messages.DecidedByCancel, cancelledNote)
		return
	}
	g.next(c)
}

// announce emits approval_required for a gated call (headless-run.md §10:
// every one, auto-approved ones included). A call put to a person is
// marked asked and carries its request id; one the gate settled itself is
// announced just before its approval_resolved, marked not asked, with
// who settled it (by): a bridge shows it as a notice, never a button.
func (g *Gate) announce(req messages.ApprovalRequired, by string) {
	ev := events.ApprovalRequired(req, g.policy)
	ev.DecidedBy = by
	g.emitFor(req, ev)
}

// NewRequestID mints an approval request id: 128 random bits, so nobody
// who has not seen the request can name it.
func NewRequestID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("mint an approval request id: %w", err)
	}
	return "apr-" + hex.EncodeToString(b[:]), nil
}

// SameRequest compares a decision's request id with the asked one, in
// constant time; an empty id never matches.
func SameRequest(got, want string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (g *Gate) emitFor(req messages.ApprovalRequired, ev messages.Event) {
	ev.Place = req.Place
	ev.ToolCallID = req.ToolCallID
	ev.Trace = req.Trace
	g.cfg.Events.Emit(ev)
}

// DecodeDecision reads a decision line from a bridge, for tests and tools.
func DecodeDecision(data []byte) (messages.ApprovalDecided, error) {
	var d messages.ApprovalDecided
	err := json.Unmarshal(data, &d)
	return d, err
}
