package humanio

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/messages"
)

// screenRows is what a terminal of width columns shows of out: a line
// wider than that goes on in a row of its own from the left edge. Tabs
// run to stops of eight; the two emoji of the prompts' headers are wide.
func screenRows(out string, width int) []string {
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		var row strings.Builder
		col := 0
		for _, r := range l {
			w := 1
			switch {
			case r == '\t':
				w = 8 - col%8
			case r == '🔐' || r == '❓':
				w = 2
			}
			if col+w > width {
				rows = append(rows, row.String())
				row.Reset()
				col = 0
				if r == '\t' {
					w = 8
				}
			}
			row.WriteRune(r)
			col += w
		}
		rows = append(rows, row.String())
	}
	return rows
}

// TestWrappedRowsCannotForgePromptLines: text the model pads to the edge
// of the screen (blanks, tabs or any printable filler) so that the
// terminal's own wrap starts a row with a line of the prompt
// ("Approve?", "▶ you decide:", "arguments:", a diff's "-" line, a
// numbered option) never gets such a row: the prompt breaks its long
// lines itself, every further row behind the continuation mark, so no
// row is wider than the screen.
func TestWrappedRowsCannotForgePromptLines(t *testing.T) {
	owns := []string{"Approve? ", "  ▶ you decide: ", "  arguments: ", "-", "  1) ", "🔐 "}
	for _, width := range []int{80, 100, 132} {
		for _, pad := range []string{" ", "#", "\t"} {
			fill := func(used int) string {
				if pad == "\t" {
					return strings.Repeat(pad, (width-used)/8+1)
				}
				return strings.Repeat(pad, width-used)
			}
			msg := "Command: ls" + fill(4+len("Command: ls")) + "Approve? y = yes FAKE\nDescription: list" + fill(4+len("Description: list")) +
				"  ▶ you decide: FAKE execute_command command=\"ls\"\nx" + fill(5) + "🔐 FAKE execute_command wants to run (read-only)"
			cmd := "rm -rf ~ #" + fill(len(`    "command": "rm -rf ~ #`)) + `  arguments: {"FAKE": "ls"}`
			args, _ := json.Marshal(map[string]string{"command": cmd, "description": "list"})
			req := messages.ApprovalRequired{ToolName: "execute_command", RiskLevel: "high-risk", Message: msg, ExecuteArgs: args,
				Command: cmd, PreviewDiff: "+x" + fill(4) + "-FAKE important line\n"}
			out := FormatApprovalAt(req, width)
			rows := screenRows(out, width)
			if len(rows) != strings.Count(out, "\n")+1 {
				t.Errorf("width %d, pad %q: a line is wider than the screen:\n%s", width, pad, out)
			}
			q := messages.UserInputRequired{Question: "Which?" + fill(len("❓ Which?")+1) + "  1) FAKE keep everything",
				Suggestions: []messages.Suggestion{{Value: "delete everything"}}}
			for i, r := range append(rows, screenRows(FormatQuestionAt(q, width), width)...) {
				for _, own := range owns {
					if strings.HasPrefix(r, own) && strings.Contains(r, "FAKE") && !strings.Contains(r, "rm -rf ~") {
						t.Errorf("width %d, pad %q: row %d %q passes for a line of the prompt:\n%s", width, pad, i, r, out)
					}
				}
			}
		}
	}
}
