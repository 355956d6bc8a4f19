// Package gateactor owns the approval gate of one run tree: the policy
// dial, the per-tool and per-command allowlists, the queue of calls waiting
// for a decision, and who answers when nothing automatic does. Every gated
// call of the run (subagents' included) passes through one gate actor, one
// at a time, re-checked against the current policy when dequeued.
package gateactor

import (
	"context"
	"encoding/json"
	"time"

	"github.com/anthdm/hollywood/actor"

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

type pending struct {
	req    messages.ApprovalRequired
	sender *actor.PID
	// queued is when the request arrived: the gate span covers the wait.
	queued   time.Time
	remember string
}

// classified is the harness model's verdict, back on the gate's goroutine.
type classified struct {
	toolCallID string
	level      string
}

// Gate is the approval gate actor.
type Gate struct {
	cfg       Config
	policy    string
	toolAllow map[string]bool
	cmdAllow  []string
	queue     []pending
	current   *pending
	asking    bool
	resume    func()
	// cancelled: the run is stopping; every call, queued or new, is declined.
	cancelled bool
}

// New is the Producer of a gate actor.
func New(cfg Config) actor.Producer {
	return func() actor.Receiver {
		g := &Gate{cfg: cfg, policy: cfg.Policy, toolAllow: map[string]bool{}}
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
		g.queue = append(g.queue, pending{req: m, sender: c.Sender(), queued: time.Now()})
		g.next(c)
	case messages.ApprovalDecided:
		g.humanDecided(c, m)
	case messages.PolicyChanged:
		g.policy = m.Policy
	case classified:
		if g.current != nil && g.current.req.ToolCallID == m.toolCallID {
			g.afterClassify(c, m.level)
		}
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
		g.evaluate(c)
	}
}

// evaluate runs the gate order of tools-and-approval.md §5 on the current
// call, with the policy and allowlists as they are now.
func (g *Gate) evaluate(c *actor.Context) {
	p := g.current
	g.emit(messages.Event{
		Type:              messages.EventApprovalRequired,
		ToolName:          p.req.ToolName,
		Message:           p.req.Message,
		PreviewDiff:       p.req.PreviewDiff,
		RiskLevel:         p.req.RiskLevel,
		AutoApprovePolicy: g.policy,
		Arguments:         p.req.ExecuteArgs,
	})
	if g.toolAllow[p.req.ToolName] {
		g.resolve(c, true, true, messages.DecidedByAllowlist, "")
		return
	}
	if p.req.Command != "" && len(g.cmdAllow) > 0 && g.cfg.Checks.AllowlistApproves != nil &&
		g.cfg.Checks.AllowlistApproves(p.req.Command, g.cmdAllow) {
		g.resolve(c, true, true, messages.DecidedByAllowlist, "")
		return
	}
	level := p.req.RiskLevel
	if level == messages.LevelUnknown && p.req.Command != "" && g.needsClassifier() {
		if lvl, ok := g.staticLevel(p.req.Command); ok {
			g.afterClassify(c, lvl)
			return
		}
		if g.cfg.ModelContext && g.cfg.Classify != nil {
			g.classifyAsync(c, p.req)
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

func (g *Gate) classifyAsync(c *actor.Context, req messages.ApprovalRequired) {
	engine, self := c.Engine(), c.PID()
	base := g.cfg.Ctx
	if base == nil {
		base = context.Background()
	}
	classify := g.cfg.Classify
	supervisor.Go(func() {
		ctx, cancel := context.WithTimeout(base, 15*time.Second)
		defer cancel()
		lvl, err := classify(ctx, req.Command)
		if err != nil || (lvl != messages.LevelReadOnly && lvl != messages.LevelLowRisk) {
			lvl = messages.LevelHighRisk
		}
		engine.Send(self, classified{toolCallID: req.ToolCallID, level: lvl})
	}, func(string) {
		engine.Send(self, classified{toolCallID: req.ToolCallID, level: messages.LevelHighRisk})
	})
}

// afterClassify finishes the gate order once the level is known.
func (g *Gate) afterClassify(c *actor.Context, level string) {
	if Covers(g.effectivePolicy(), level) {
		g.resolve(c, true, true, messages.DecidedByPolicy, "")
		return
	}
	if !g.cfg.Reachable {
		g.resolve(c, false, true, messages.DecidedByNobody, UnattendedRefusal)
		return
	}
	g.ask(c)
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

func (g *Gate) ask(c *actor.Context) {
	g.asking = true
	g.resume = g.cfg.Deadline.Pause()
	req := g.current.req
	if g.cfg.Bus != nil {
		if err := g.cfg.Bus.Publish(messages.ApprovalRequiredSubject(g.cfg.RunID), req, req.Trace); err != nil {
			g.resolve(c, false, false, messages.DecidedByNobody, "The approval request could not be delivered: "+err.Error())
		}
	}
}

func (g *Gate) humanDecided(c *actor.Context, d messages.ApprovalDecided) {
	if g.current == nil || !g.asking || d.ToolCallID != g.current.req.ToolCallID {
		return // unknown, stale or duplicate: ignored
	}
	switch d.Remember {
	case messages.RememberTool:
		if d.Approved {
			g.toolAllow[g.current.req.ToolName] = true
		}
	case messages.RememberCommand:
		if d.Approved && g.cfg.Checks.Keys != nil && g.current.req.Command != "" {
			if keys, err := g.cfg.Checks.Keys(g.current.req.Command); err == nil {
				g.cmdAllow = append(g.cmdAllow, keys...)
			}
		}
	}
	by := d.DecidedBy
	if by == "" {
		by = messages.DecidedByHuman
	}
	g.current.remember = d.Remember
	g.resolve(c, d.Approved, false, by, d.Note)
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
	d := messages.ApprovalDecided{
		Place:      p.req.Place,
		Trace:      p.req.Trace,
		ToolCallID: p.req.ToolCallID,
		ToolName:   p.req.ToolName,
		Approved:   approved,
		Auto:       auto,
		DecidedBy:  by,
		Note:       note,
	}
	g.emitFor(p.req, messages.Event{
		Type:      messages.EventApprovalResolved,
		ToolName:  p.req.ToolName,
		Approved:  messages.Ptr(approved),
		Auto:      messages.Ptr(auto),
		DecidedBy: by,
	})
	g.record(p, approved, by)
	if p.sender != nil {
		c.Send(p.sender, d)
	}
	g.next(c)
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

func (g *Gate) emit(ev messages.Event) { g.emitFor(g.current.req, ev) }

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
