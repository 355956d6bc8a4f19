package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/iostreams"
)

// A request is rendered for a person: the diff coloured on a terminal and
// plain when piped, and nothing the model wrote can send the terminal an
// escape of its own.
func TestRenderColoursOnlyATerminalAndEscapesModelText(t *testing.T) {
	r := approvals.Record{Status: approvals.StatusPending, Request: approvals.Request{
		RequestID: "ap-1", RunID: "run-1", Tool: "write_file\x1b[2J", ExecuteTool: "execute_write_file",
		Message: "Write a\x1b]0;pwned\x07", PreviewDiff: "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new \x1b[8mhidden\n",
		RiskTier: "high-risk", ExpiresAt: time.Now().Add(time.Minute)}}
	for _, tty := range []bool{false, true} {
		io, _, _, _ := iostreams.Test()
		io.SetStdoutTTY(tty)
		c := &approverConn{d: Deps{IO: io, Getenv: func(string) string { return "" }}}
		var out bytes.Buffer
		c.render(&out, r)
		s := out.String()
		// Our own colour codes are the only escapes: strip them and no
		// ESC byte may remain.
		plain := s
		for _, code := range []string{"\x1b[1m", "\x1b[32m", "\x1b[31m", "\x1b[36m", "\x1b[0m"} {
			plain = strings.ReplaceAll(plain, code, "")
		}
		if strings.ContainsRune(plain, 0x1b) || strings.ContainsRune(plain, 0x07) {
			t.Fatalf("tty=%v: a model escape reached the terminal: %q", tty, s)
		}
		if !strings.Contains(s, `\x1b[2J`) || !strings.Contains(s, `\x1b[8mhidden`) {
			t.Fatalf("tty=%v: escapes must be shown, not dropped: %q", tty, s)
		}
		coloured := strings.Contains(s, "\x1b[32m+new")
		if coloured != tty {
			t.Fatalf("tty=%v: coloured=%v: %q", tty, coloured, s)
		}
	}
}
