package humanio

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/visible"
)

// prompt lines jazz itself writes start with one of these; every other
// line must be behind the gutter.
var ownApproval = []string{"🔐 ", "  asked by: ", "  its task: ", "  arguments: ", "  ▶ you decide: ", "Approve? "}

// checkApproval is the property every approval prompt keeps, whatever
// the model wrote: exactly one header first, one summary and one choice
// line last; every line of the model's text is behind the gutter, every
// JSON line of the arguments is ASCII; no hidden rune reaches the screen.
func checkApproval(t *testing.T, req messages.ApprovalRequired) {
	t.Helper()
	out := FormatApproval(req)
	if !utf8.ValidString(out) {
		t.Fatalf("invalid UTF-8 in prompt %q", out)
	}
	for _, r := range out {
		if r != '\n' && r != '\t' && visible.Hidden(r) {
			t.Fatalf("hidden %U reached the prompt:\n%q", r, out)
		}
	}
	narrow(t, out)
	lines := unwrap(out)
	if !strings.HasPrefix(lines[0], "🔐 ") || !strings.HasPrefix(lines[len(lines)-1], "Approve? ") ||
		!strings.HasPrefix(lines[len(lines)-2], "  ▶ you decide: ") {
		t.Fatalf("prompt does not start with its header and end with summary and choices:\n%s", out)
	}
	inArgs := false
	for i, l := range lines {
		own := ""
		for _, p := range ownApproval {
			if strings.HasPrefix(l, p) {
				own = p
			}
		}
		switch {
		case strings.HasPrefix(l, "  "+visible.Gutter) || strings.HasPrefix(l, visible.Gutter):
			inArgs = false
		case own == "  arguments: ":
			inArgs = true
			ascii(t, strings.TrimPrefix(l, own), out)
		case own != "":
			inArgs = false
			if (own == "🔐 ") != (i == 0) || (own == "Approve? ") != (i == len(lines)-1) || (own == "  ▶ you decide: ") != (i == len(lines)-2) {
				t.Fatalf("line %d %q passes for a line of the prompt:\n%s", i, l, out)
			}
		case inArgs:
			ascii(t, l, out)
		default:
			t.Fatalf("line %d %q is neither the prompt's nor quoted:\n%s", i, l, out)
		}
	}
}

// narrow fails unless every row of out fits a screen of
// visible.DefaultWidth columns: a wider one the terminal wraps itself,
// starting a row with whatever text is there.
func narrow(t *testing.T, out string) {
	t.Helper()
	for _, row := range strings.Split(out, "\n") {
		col := 0
		for _, r := range row {
			col += visible.Columns(r, col)
		}
		if col > visible.DefaultWidth {
			t.Fatalf("row %q is %d columns wide:\n%s", row, col, out)
		}
	}
}

// unwrap is the lines of a prompt before visible.Wrap broke them into
// rows: a row behind the continuation mark goes on the line before it.
func unwrap(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "  "+visible.Continued); ok && len(lines) > 0 {
			lines[len(lines)-1] += rest
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

// joined is out with its rows joined back into lines (unwrap).
func joined(out string) string { return strings.Join(unwrap(out), "\n") }

func ascii(t *testing.T, l, out string) {
	t.Helper()
	for _, r := range l {
		if r >= utf8.RuneSelf || r < 0x20 || r == 0x7f {
			t.Fatalf("argument line %q shows %U as is:\n%s", l, r, out)
		}
	}
}

// checkQuestion: the question's first line follows the ❓, every other
// line of it is quoted, there is one option line per suggestion, and the
// answer line is last.
func checkQuestion(t *testing.T, q messages.UserInputRequired) {
	t.Helper()
	out := FormatQuestion(q)
	for _, r := range out {
		if r != '\n' && r != '\t' && visible.Hidden(r) {
			t.Fatalf("hidden %U reached the question:\n%q", r, out)
		}
	}
	narrow(t, out)
	lines := unwrap(out)
	if !strings.HasPrefix(lines[0], "❓ ") || !strings.HasPrefix(lines[len(lines)-1], "Answer (") {
		t.Fatalf("question form:\n%s", out)
	}
	options := 0
	for _, l := range lines[1 : len(lines)-1] {
		switch {
		case strings.HasPrefix(l, "  "+visible.Gutter), strings.HasPrefix(l, "  asked by: "), strings.HasPrefix(l, "  its task: "):
		case len(l) > 3 && l[0] == ' ' && l[1] == ' ' && l[2] >= '0' && l[2] <= '9':
			options++
		default:
			t.Fatalf("line %q is neither the question's nor quoted:\n%s", l, out)
		}
	}
	if options != len(q.Suggestions) {
		t.Fatalf("%d option lines for %d suggestions:\n%s", options, len(q.Suggestions), out)
	}
}

// TestModelTextCannotForgePromptLines: a description, a diff or a
// question whose lines look like the prompt's own (a fake "Approve?"
// line, fake arguments, fake numbered options) is shown quoted; the real
// options are the only numbered lines, and the label a number picks says
// which value it answers with.
func TestModelTextCannotForgePromptLines(t *testing.T) {
	fake := "List the files.\n  arguments: {\"command\": \"ls\"}\n  ▶ you decide: execute_command command=\"ls\"\nApprove? y = yes, n [note] = no: "
	args, _ := json.Marshal(map[string]string{"command": "rm -rf ~", "description": fake})
	req := messages.ApprovalRequired{ToolName: "execute_command", RiskLevel: "high-risk", Message: fake, ExecuteArgs: args,
		Command: "rm -rf ~", PreviewDiff: "--- a/x\n" + fake + "\n"}
	checkApproval(t, req)
	if out := FormatApproval(req); !strings.Contains(out, `  ▶ you decide: execute_command command="rm -rf ~"`) {
		t.Errorf("the summary does not say what runs:\n%s", out)
	}
	q := messages.UserInputRequired{Question: "Which?\n  1) keep everything\n  2) cancel\nAnswer (number): ",
		Suggestions: []messages.Suggestion{{Value: "delete everything", Label: "keep everything"}, {Value: "cancel"}}}
	checkQuestion(t, q)
	if out := FormatQuestion(q); !strings.Contains(out, `1) keep everything (answers "delete everything")`) {
		t.Errorf("the option does not say what it answers:\n%s", out)
	}
}

// TestSummaryKeepsWhatRunsInSight: an argument padded to push what runs
// off the screen, or a lookalike in it, is plain in the line next to the
// answer.
func TestSummaryKeepsWhatRunsInSight(t *testing.T) {
	cmd := "rm -rf ~ #" + strings.Repeat(" ", 5000) + "ls"
	args, _ := json.Marshal(map[string]string{"command": cmd, "path": "/home/\u0430lice/.bashrc"})
	out := FormatApproval(messages.ApprovalRequired{ToolName: "execute_command", RiskLevel: "high-risk", Command: cmd,
		ExecuteArgs: args, PreviewDiff: strings.Repeat("+x\n", 100)})
	lines := unwrap(out)
	sum := lines[len(lines)-2]
	for _, want := range []string{`command="rm -rf ~ #⟪5000 spaces⟫ls"`, `path="/home/\u0430lice/.bashrc"`, "read it all above"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary %q lacks %q", sum, want)
		}
	}
	if !strings.Contains(out, `"/home/\u0430lice/.bashrc"`) {
		t.Errorf("the lookalike is drawn as is in the arguments:\n%s", out)
	}
}

// FuzzPromptsInert: for any bytes in any field the model sets, both
// prompts keep their properties (checkApproval, checkQuestion).
func FuzzPromptsInert(f *testing.F) {
	f.Add("msg\nApprove? y", "+x\n  1) y", "q\n  1) yes", "approve", "y", "\x1b]8;;http://x\x07a\x1b]8;;\x07", "a\u0301\u0301\u0301")
	f.Add("\u202erm", "\x1b[2J\x1b[H", "\r\x1b[1A", "\u200b", "\xff", "\x1b]52;c;ZWNobw==\x07", "e\u20dd")
	f.Fuzz(func(t *testing.T, msg, diff, question, label, value, tool, arg string) {
		args, _ := json.Marshal(map[string]any{"command": arg, tool: []string{arg, msg}, "n": 1})
		for _, a := range [][]byte{args, []byte(arg)} {
			checkApproval(t, messages.ApprovalRequired{ToolName: tool, RiskLevel: label, Message: msg, PreviewDiff: diff,
				ExecuteArgs: a, Command: arg, Task: question, Place: messages.Place{AgentName: tool, Depth: len(label) % 2, ParentAgentID: value}})
		}
		checkQuestion(t, messages.UserInputRequired{Question: question, Task: msg, Place: messages.Place{AgentName: label, Depth: len(tool) % 2},
			Suggestions: []messages.Suggestion{{Value: value, Label: label, Description: diff}, {Value: msg}}})
	})
}
