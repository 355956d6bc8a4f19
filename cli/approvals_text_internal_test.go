package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/iostreams"
	"github.com/jazz-run/jazz/visible"
)

// joinRows is rendered text with the rows visible.Wrap broke its lines
// into joined back.
func joinRows(s string) string { return strings.ReplaceAll(s, "\n  "+visible.Continued, "") }

// shellRecord is a pending execute_command record whose message is laid
// out as the shell tool writes it (a command's later lines indented).
func shellRecord(command string) approvals.Record {
	args, _ := json.Marshal(map[string]any{"command": command, "description": "say hi", "timeout": 120000, "workingDirectory": "/w"})
	msg := "Command: " + strings.ReplaceAll(command, "\n", "\n  ") + "\nDescription: say hi\nWorking Directory: /w\nTimeout: 120000ms"
	return approvals.Record{Status: approvals.StatusPending, Request: approvals.Request{RequestID: "apr-1", RunID: "run-1",
		Tool: "execute_command", ExecuteTool: "execute_execute_command", RiskTier: "high-risk", Message: msg,
		ExecuteArgs: args, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Minute)}}
}

// TestListLineSaysWhatRuns: the one line `list` prints for a request,
// from which a person may `approve ID`, says what runs, all of it or
// with a mark where it is cut. The first line of the message cut at a
// newline showed "Command: echo hi" for `echo hi` + newline + `rm -rf ~`,
// with nothing to say more followed; padding pushed the tail past the
// cut the same way.
func TestListLineSaysWhatRuns(t *testing.T) {
	for _, tc := range []struct{ command, want string }{
		{"echo hi\nrm -rf ~", `echo hi\nrm -rf ~`},
		{"echo hi" + strings.Repeat(" ", 300) + "; rm -rf ~", `echo hi⟪300 spaces⟫; rm -rf ~`},
		{"echo " + strings.Repeat("x", 300) + "; rm -rf ~", "more chars"},
	} {
		line := summaryLine(shellRecord(tc.command), time.Now())
		if !strings.Contains(line, tc.want) {
			t.Errorf("command %q: list line %q does not say %q", tc.command, line, tc.want)
		}
		if strings.Contains(line, "\n") {
			t.Errorf("command %q: list line spans lines: %q", tc.command, line)
		}
	}
}

// TestRenderEndsWithWhatRuns: `show` and `watch` print a request right
// above the prompt, diff last; a diff or an argument taller than the
// screen scrolled what runs (the file, the command's start) out of
// sight, and the prompt names only the tool. The last line says it
// again, in a form no padding pushes away, and says when the request is
// taller than a screen.
func TestRenderEndsWithWhatRuns(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	c := &approverConn{d: Deps{IO: io, Getenv: func(string) string { return "" }}}
	args, _ := json.Marshal(map[string]any{"path": "/home/u/.bashrc", "content": strings.Repeat("echo x\n", 300), "expectedState": "s"})
	write := approvals.Record{Status: approvals.StatusPending, Request: approvals.Request{RequestID: "apr-2", RunID: "run-1",
		Tool: "write_file", ExecuteTool: "execute_write_file", RiskTier: "high-risk", Message: "About to write 2100 characters to file: /home/u/.bashrc",
		ExecuteArgs: args, PreviewDiff: "--- a/.bashrc\n+++ b/.bashrc\n@@ -0,0 +1,300 @@\n" + strings.Repeat("+echo x\n", 300),
		CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Minute)}}
	for _, tc := range []struct {
		r    approvals.Record
		want []string
	}{
		{write, []string{`path="/home/u/.bashrc"`, "more chars", "read it all above"}},
		{shellRecord("rm -rf ~ #" + strings.Repeat(" ", 5000) + "ls"), []string{`command="rm -rf ~ #⟪5000 spaces⟫ls"`}},
	} {
		var out bytes.Buffer
		c.render(&out, tc.r)
		lines := strings.Split(strings.TrimSuffix(joinRows(out.String()), "\n"), "\n")
		last := lines[len(lines)-1]
		for _, w := range tc.want {
			if !strings.Contains(last, w) {
				t.Errorf("%s: the last line %q does not say %q", tc.r.Request.Tool, last, w)
			}
		}
	}
}

// TestRenderRowsCannotForgeFields: a field the model fills on one line
// (the sub-agent's task, an argument) padded to the edge of an 80-column
// screen does not start a row of its own that passes for a field: every
// line is broken at the screen's width, its further rows behind the
// continuation mark.
func TestRenderRowsCannotForgeFields(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	c := &approverConn{d: Deps{IO: io, Getenv: func(string) string { return "" }}}
	r := shellRecord("rm -rf ~ #" + strings.Repeat("#", 100) + "FAKE")
	r.Request.Subagent, r.Request.Depth = "helper", 1
	r.Request.Task = "tidy" + strings.Repeat(" ", 80-len("  task       tidy")) + `  executes   {"command":"FAKE"}`
	var out bytes.Buffer
	c.render(&out, r)
	text := out.String()
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("row %q is %d columns: the terminal wraps it", l, n)
		}
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "FAKE") && !strings.HasPrefix(l, "  "+visible.Gutter) && !strings.HasPrefix(l, "  "+visible.Continued) &&
			!strings.HasPrefix(l, `    "command"`) && !strings.HasPrefix(l, "  ▶ runs:") {
			t.Errorf("row %q passes for a line of its own:\n%s", l, text)
		}
	}
}

// TestRenderKeepsDigestsWhole: the action and shown digests are copied
// into `approve --shown`, so show prints each on one row, wider than the
// 80 columns it breaks other lines at; a forged action field that is no
// digest (padding to the screen's edge, then text) is broken like any
// other text, its later rows behind the continuation mark.
func TestRenderKeepsDigestsWhole(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	c := &approverConn{d: Deps{IO: io, Getenv: func(string) string { return "" }}}
	r := shellRecord("ls")
	var err error
	if r.Request.ActionHash, err = approvals.ActionHash(r.Request.ExecuteTool, r.Request.ExecuteArgs); err != nil {
		t.Fatal(err)
	}
	shown, err := approvals.ShownHash(r.Request)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c.render(&out, r)
	for _, d := range []string{r.Request.ActionHash, shown} {
		if !strings.Contains(out.String(), " "+d+"\n") {
			t.Errorf("digest %s is not whole on one row:\n%s", d, out.String())
		}
	}
	wide := func() {
		t.Helper()
		for _, row := range strings.Split(out.String(), "\n") {
			if n := len([]rune(row)); n > visible.DefaultWidth {
				t.Errorf("a row of %d columns:\n%s", n, out.String())
			}
		}
	}
	wide()
	r.Request.ActionHash = strings.Repeat(" ", 70) + "Approve? [y/N] y"
	out.Reset()
	c.render(&out, r)
	wide()
	if !strings.Contains(out.String(), "\n  "+visible.Continued+"   Approve?") {
		t.Errorf("the forged action field's text does not start a continued row:\n%s", out.String())
	}
}
