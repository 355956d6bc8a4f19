package humanio

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/messages"
)

// TestTallMeansScreenRows: a request is taller than a screen by the rows
// it takes, not the newlines in it: one argument of 5000 characters
// without a blank or a newline is a handful of lines that wrap to over
// sixty rows, and its start is as far out of sight.
func TestTallMeansScreenRows(t *testing.T) {
	cmd := "rm -rf ~;echo " + strings.Repeat("x", 5000)
	args, _ := json.Marshal(map[string]string{"command": cmd, "description": "d"})
	out := FormatApproval(messages.ApprovalRequired{ToolName: "execute_command", RiskLevel: "high-risk", Command: cmd, ExecuteArgs: args})
	lines := unwrap(out)
	if sum := lines[len(lines)-2]; !strings.Contains(sum, "read it all above") {
		t.Errorf("summary %q does not say the request is taller than a screen:\n%d lines", sum, len(lines))
	}
	if got := Height("a\n" + strings.Repeat("y", 161) + "\n"); got != 4 {
		t.Errorf("Height = %d, want 4 (1 + 3 rows of 80 columns)", got)
	}
}
