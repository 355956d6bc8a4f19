package cli

import (
	"fmt"
	"io"

	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/visible"
)

// stderrLines is how `jazz run` writes its own diagnostics. When stderr
// is a channel a program parses (--events, or a bridge speaking the stdin
// protocol) every line is one JSON object, so nothing a model wrote (a
// subagent's name in a warning, a path, a tool name) can end a line and
// start a forged request. Otherwise lines are text for a person, with
// every model-chosen byte made visible (package visible). w is the
// process's stderr owner (ownStderr): each line is one Write, queued and
// never waited for.
type stderrLines struct {
	w    io.Writer
	json bool
	// place names the run and its agent in JSON lines, once known.
	place messages.Place
}

// notice is a warning: `⚠ <msg>` or {"type":"warning"}.
func (s stderrLines) notice(msg string) {
	if s.json {
		_, _ = s.w.Write(events.Render(messages.Event{Type: messages.EventWarning, Place: s.place, Message: msg}))
		return
	}
	fmt.Fprintln(s.w, "⚠ "+visible.Line(msg))
}

// status is the run's header or footer: text, or {"type":"status"}.
func (s stderrLines) status(level, agent, text, glyph string) {
	if s.json {
		place := s.place
		if place.AgentName == "" {
			place.AgentName = agent
		}
		_, _ = s.w.Write(events.Render(messages.Event{Type: messages.EventStatus, Level: level, Place: place, Message: text}))
		return
	}
	if agent != "" {
		text = visible.Line(agent)
	}
	fmt.Fprintln(s.w, glyph+" "+text)
}

// failure is a failed run's message in plain mode: the text, or an error
// event. reported says the run already sent its error event.
func (s stderrLines) failure(msg string, reported bool) {
	if s.json {
		if !reported {
			_, _ = s.w.Write(events.Render(messages.Event{Type: messages.EventErrorType, Place: s.place,
				Err: &messages.EventError{Name: "RunError", Message: msg}, Recoverable: messages.Ptr(false)}))
		}
		return
	}
	fmt.Fprintln(s.w, visible.Block(msg))
}
