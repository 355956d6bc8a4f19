package events_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
)

// capture is a Publisher keeping what it was handed.
type capture struct{ got []messages.Event }

func (c *capture) Publish(_ string, msg any, _ messages.Trace) error {
	if ev, ok := msg.(messages.Event); ok {
		c.got = append(c.got, ev)
	}
	return nil
}

// leaks reports a piece of secret (any 6 characters of it in a row) in
// out: a key cut in half by the 200-character limit still shows its
// first half.
func leaks(out, secret string) string {
	for i := 0; i+6 <= len(secret); i++ {
		if strings.Contains(out, secret[i:i+6]) {
			return secret[i : i+6]
		}
	}
	return ""
}

// secretEvents puts secret at offset into each kind of field an event
// carries text in.
func secretEvents(secret string, offset int) []messages.Event {
	text := strings.Repeat("·", offset) + secret + " …"
	return []messages.Event{
		{Type: messages.EventWarning, Message: text},
		{Type: messages.EventErrorType, Err: &messages.EventError{Name: "RunError", Message: text}},
		{Type: messages.EventRunEnd, ErrorText: text},
		{Type: messages.EventTextChunk, Delta: text, Accumulated: text},
		{Type: messages.EventApprovalRequired, Message: text, PreviewDiff: text},
		{Type: messages.EventToolExecutionComplete, Result: &text, Summary: text},
	}
}

// TestSinkRedactsBeforeCutting: with a redactor, no piece of a known
// secret reaches the sink's writer or stream, wherever it sits in the
// text: before the 200-character cut, across it, after it; nor through
// WriteLine (an uncut line rendered elsewhere, as a bridge's request),
// nor what an Emitter publishes.
func TestSinkRedactsBeforeCutting(t *testing.T) {
	const secret = "q1x2z3q4x5z6q7x8z9q0x1z2q3x4z5"
	red := secrets.NewRedactor(secret)
	for offset := 0; offset <= 2*events.MaxString; offset += 7 {
		for _, ev := range secretEvents(secret, offset) {
			var w bytes.Buffer
			s := events.NewSink(&w, events.NewFilter([]string{messages.CategoryAll}), ev.Type)
			s.SetRedactor(red)
			stream := s.Stream()
			s.Write(ev)
			s.WriteLine(events.RenderWhole(ev)) // a bridge's line: uncut, redacted on its way out
			s.WriteLine(s.Render(ev))
			s.Close()
			if p := leaks(w.String(), secret); p != "" {
				t.Fatalf("%s at offset %d: the line shows %q of the secret: %s", ev.Type, offset, p, w.String())
			}
			for e := range stream {
				if p := leaks(string(events.RenderWhole(e)), secret); p != "" {
					t.Fatalf("%s at offset %d: the stream shows %q of the secret", ev.Type, offset, p)
				}
			}
			c := &capture{}
			events.NewEmitter(c, "run-1").WithRedactor(red).Emit(ev)
			for _, e := range c.got {
				if p := leaks(string(events.RenderWhole(e)), secret); p != "" {
					t.Fatalf("%s at offset %d: the emitter published %q of the secret", ev.Type, offset, p)
				}
			}
		}
	}
}

// FuzzSinkNeverShowsSecret: whatever the secret (any characters, six or
// more, JSON-escaped or not) and wherever it sits, the sink's line holds
// no piece of it.
func FuzzSinkNeverShowsSecret(f *testing.F) {
	f.Add("sk-proj-AAAABBBBCCCCDDDD", 190)
	f.Add(`p"a<s>s&w\o/r\u0064`, 195)
	f.Add("sécret-ünïcode-kéy", 0)
	f.Fuzz(func(t *testing.T, secret string, offset int) {
		if len(secret) < secrets.MinSecretLen || len(secret) > 80 || offset < 0 || offset > 400 ||
			strings.TrimSpace(secret) != secret || !strings.ContainsAny(secret, "abcdefghijklmnopqrstuvwxyz0123456789") {
			return
		}
		for _, r := range secret {
			if r < 0x20 || r == 0x7f || r == '·' || r == '…' || r == 0xfffd || strings.ContainsRune("[REDACTED]", r) {
				return // the filler, the placeholder and escaped controls are not secret characters here
			}
		}
		red := secrets.NewRedactor(secret)
		for _, ev := range secretEvents(secret, offset) {
			var w bytes.Buffer
			s := events.NewSink(&w, events.NewFilter([]string{messages.CategoryAll}), ev.Type)
			s.SetRedactor(red)
			s.Write(ev)
			s.Close()
			if strings.Contains(w.String(), secret) || strings.Contains(w.String(), secret[:len(secret)/2+1]) {
				t.Fatalf("%s: the line shows the secret: %s", ev.Type, w.String())
			}
		}
	})
}
