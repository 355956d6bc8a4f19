package app

import (
	"context"
	"fmt"
	"io"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/deadline"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/humanio"
	"github.com/jazz-run/jazz/messages"
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
// terminal, nobody otherwise. It also puts the run's Asker in extras for
// the ask tools. The returned func detaches.
func attachHuman(ctx context.Context, o RunOptions, b *bus.Bus, pub humanio.Publisher, runID string, dl *deadline.Deadline, extras map[string]any, sink *events.Sink, notice func(agent, msg string)) (func(), error) {
	if !o.Reachable {
		return func() {}, nil
	}
	conn, err := b.Connect(ctx)
	if err != nil {
		return nil, err
	}
	extras[asktools.ExtrasKey] = asktools.NewAsker(conn, runID, dl)
	warn := func(msg string) { notice("", msg) }
	switch {
	case o.Bridge:
		// The bridge writes its requests through the sink (Run makes one
		// for every bridge), so protocol lines and events never interleave.
		br := humanio.NewBridge(runID, pub, sink)
		sink.LeaveRequestsToBridge()
		if err := br.Attach(conn); err != nil {
			return nil, fmt.Errorf("attach stdin bridge: %w", err)
		}
		go br.Serve(o.Stdin, warn)
		return br.Detach, nil
	case o.TerminalHuman:
		t := humanio.NewTerminal(runID, pub, o.Stderr)
		if err := t.Attach(conn); err != nil {
			return nil, fmt.Errorf("attach terminal prompt: %w", err)
		}
		go t.Serve(ctx, o.Stdin)
		return t.Detach, nil
	}
	return func() {}, nil
}

// warner prints run notices on stderr: `⚠ <agent>: <msg>` text, or, when
// stderr is JSON (sink set: --events or a bridge), a {"type":"warning"}
// line among the events, so a reader of the stream never has to parse two
// formats and no model-chosen name in a notice can start a line of its
// own. Text is made visible first (package visible) for the same reason.
func warner(stderr io.Writer, sink *events.Sink, runID string) func(agent, msg string) {
	return func(agent, msg string) {
		if sink != nil {
			sink.WriteLine(events.Render(messages.Event{Type: messages.EventWarning,
				Place: messages.Place{RunID: runID, AgentName: agent}, Message: msg}))
			return
		}
		if agent != "" {
			fmt.Fprintf(stderr, "⚠ %s: %s\n", visible.Line(agent), visible.Line(msg))
			return
		}
		fmt.Fprintln(stderr, "⚠ "+visible.Line(msg))
	}
}
