package app

import (
	"context"
	"fmt"
	"io"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/humanio"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/asktools"
	"github.com/jazz-run/jazz/visible"
)

// withAskTools adds the ask tools to reg; only called when a human is
// reachable, so an unattended run never offers them.
func withAskTools(reg *tools.Registry, terminal bool) (*tools.Registry, error) {
	var all []tools.Tool
	for _, n := range reg.Names() {
		if t, ok := reg.Lookup(n); ok {
			all = append(all, *t)
		}
	}
	all = append(all, asktools.Tools(terminal)...)
	out, err := tools.NewRegistry(all...)
	if err != nil {
		return nil, fmt.Errorf("add ask tools: %w", err)
	}
	return out, nil
}

// attachHuman starts whoever answers approvals and questions for a person:
// the stdin protocol for a bridge, the terminal prompt for someone at a
// terminal, nobody otherwise. Their answers go out through pub. The
// returned func detaches; settled, when not nil, is told each call the
// gate resolved (a bridge then refuses answers to it, and a terminal
// stops asking).
func attachHuman(ctx context.Context, o RunOptions, b *bus.Bus, pub humanio.Publisher, runID string, sink *events.Sink, notice func(agent, msg string)) (detach func(), settled func(messages.ApprovalDecided), err error) {
	if !o.Reachable {
		return func() {}, nil, nil
	}
	warn := func(msg string) { notice("", msg) }
	switch {
	case o.Bridge:
		// The bridge writes its requests through the sink (Start makes one
		// for every bridge), so protocol lines and events never interleave.
		br := humanio.NewBridge(runID, pub, sink)
		sink.LeaveRequestsToBridge()
		if err := br.Attach(ctx, b); err != nil {
			return nil, nil, fmt.Errorf("attach stdin bridge: %w", err)
		}
		go br.Serve(o.Stdin, warn)
		return br.Detach, br.Settled, nil
	case o.TerminalHuman:
		t := humanio.NewTerminal(runID, pub, stderrOf(o))
		if err := t.Attach(ctx, b); err != nil {
			return nil, nil, fmt.Errorf("attach terminal prompt: %w", err)
		}
		go t.Serve(ctx, o.Stdin)
		return t.Detach, t.Settled, nil
	}
	return func() {}, nil, nil
}

// stderrOf is where the run's diagnostics go.
func stderrOf(o RunOptions) io.Writer {
	if o.Stderr == nil {
		return io.Discard
	}
	return o.Stderr
}

// warner prints run notices on stderr: `⚠ <agent>: <msg>` text, or, when
// stderr is JSON (sink set: --events or a bridge), a {"type":"warning"}
// line among the events, so a reader of the stream never has to parse two
// formats and no model-chosen name in a notice can start a line of its
// own. Text is made visible first (package visible) for the same reason,
// and broken at a terminal's width (noticeLine).
//
// Without a writer behind the sink (a Go program reading Run.Events) a
// notice is a warning event on the bus, in the stream's order.
//
// The event names the run and the agent: the one that warned, else the
// run's top-level agent (a run-wide notice is about its run).
func warner(stderr io.Writer, sink *events.Sink, em *events.Emitter, top messages.Place, red *secrets.Redactor) func(agent, msg string) {
	return func(agent, msg string) {
		agent, msg = red.String(agent), red.String(msg)
		place := messages.Place{RunID: top.RunID, AgentID: top.AgentID, AgentName: top.AgentName}
		if agent != "" && agent != top.AgentName {
			place.AgentID, place.AgentName = "", agent
		}
		ev := messages.Event{Type: messages.EventWarning, Place: place, Message: msg}
		switch {
		case sink != nil && sink.Writes():
			sink.WriteLine(sink.Render(ev))
			return
		case sink != nil:
			em.Emit(ev)
			return
		}
		width, _ := humanio.TerminalWidth(stderr)
		fmt.Fprintln(stderr, noticeLine(agent, msg, width))
	}
}

// noticeLine is a text notice, made visible, and broken at width columns
// when it is a terminal's (width > 0): a notice can print while a prompt
// is open, and a row the terminal wrapped itself would start with the
// model's text below the prompt, next to the cursor (visible.Wrap). A
// log or a pipe wraps nothing and gets the notice on one line.
func noticeLine(agent, msg string, width int) string {
	line := "⚠ " + visible.Line(msg)
	if agent != "" {
		line = "⚠ " + visible.Line(agent) + ": " + visible.Line(msg)
	}
	if width <= 0 {
		return line
	}
	return visible.Wrap(line, width, "  ")
}

// runStart is the run_start event: the run, its agent, model and policy.
func runStart(o RunOptions, place messages.Place, convID string) messages.Event {
	policy := o.Policy
	if policy == messages.PolicyNone {
		policy = "none"
	}
	ev := messages.Event{Type: messages.EventRunStart, Place: place, Provider: o.Agent.Config.LLMProvider,
		Model: o.Agent.Config.LLMProvider + "/" + o.Agent.Config.LLMModel, Policy: policy, Timestamp: events.Now()}
	if o.Conversation != "" {
		ev.ConversationID = convID
	}
	return ev
}

// turnMessages splits a run's transcript into the whole of it (for a new
// record) and this turn's part (appended to an existing one). This turn
// starts at its prompt: the last plain user message, since nothing the
// loop stores after it is one (meltdown notices, summaries and the
// preamble are marked by Kind). The work-state preamble is never stored:
// each resume builds a fresh one. A summary made during the turn is not
// appended either (the record keeps what it summarized; the journal keeps
// the summary). When the prompt itself was compacted away, the turn is
// {user: prompt} and what follows the last summary. With no transcript the
// turn is {user: prompt} and {assistant: answer}.
func turnMessages(transcript []messages.ChatMessage, prompt, answer string) (full, added []messages.ChatMessage) {
	if len(transcript) == 0 {
		added = []messages.ChatMessage{{Role: messages.RoleUser, Content: prompt}, {Role: messages.RoleAssistant, Content: answer}}
		return added, added
	}
	for _, m := range transcript {
		if m.Kind != messages.KindPreamble {
			full = append(full, m)
		}
	}
	start, lastSummary := -1, -1
	for i := len(full) - 1; i >= 0 && start < 0; i-- {
		switch {
		case full[i].Role == messages.RoleUser && full[i].Kind == "":
			start = i
		case full[i].Kind == messages.KindSummary && lastSummary < 0:
			lastSummary = i
		}
	}
	if start < 0 {
		added = append([]messages.ChatMessage{{Role: messages.RoleUser, Content: prompt}}, full[lastSummary+1:]...)
		return full, added
	}
	for _, m := range full[start:] {
		if m.Kind != messages.KindSummary {
			added = append(added, m)
		}
	}
	return full, added
}
