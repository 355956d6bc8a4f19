package cli

import (
	"testing"

	"github.com/jazz-run/jazz/messages"
)

func TestDeclineNotice(t *testing.T) {
	call := func(name, by string) messages.AgentCall {
		return messages.AgentCall{ToolCall: messages.ToolCall{Name: name}, DecidedBy: by}
	}
	levels := func(n string) string {
		return map[string]string{"write_file": "high-risk", "manage_todos": "low-risk", "execute_command": "unknown"}[n]
	}
	for _, c := range []struct {
		calls []messages.AgentCall
		want  string
	}{
		{[]messages.AgentCall{call("write_file", "unattended")},
			"w: the gate declined 1 tool call: write_file (unattended, so nobody could approve). To allow it: --approval-policy high-risk, or --auto-approve-tools write_file"},
		{[]messages.AgentCall{call("manage_todos", "unattended"), call("manage_todos", "unattended")},
			"w: the gate declined 2 tool calls: manage_todos ×2 (unattended, so nobody could approve). To allow it: --approval-policy low-risk, or --auto-approve-tools manage_todos"},
		{[]messages.AgentCall{call("execute_command", "unattended"), call("write_file", "human"), call("execute_command", "denylist")},
			"w: the gate declined 3 tool calls: execute_command (unattended, so nobody could approve). To allow it: --approval-policy high-risk, or an \"autoApprovedCommands\" entry for the command in JAZZ_HOME/config.json; " +
				"write_file (declined by the person asked); execute_command (refused by the command denylist; no option allows it)"},
	} {
		if got := declineNotice("w", c.calls, levels); got != c.want {
			t.Errorf("got\n%s\nwant\n%s", got, c.want)
		}
	}
}
