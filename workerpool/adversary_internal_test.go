package workerpool

import (
	"strings"
	"testing"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/tools"
)

// TestTaskCarriesNoSecretAnywhere: the task goes to a machine that is not
// the run's, so no string of it may carry one of the run's secrets,
// whichever field holds it: a history turn's thinking block, a name the
// model chose for the child, a tool call's name. Every string field the
// runner fills from the parent is seeded with the secret.
func TestTaskCarriesNoSecretAnywhere(t *testing.T) {
	const secret = "sk-parent-only-9f8e7d6c5b4a3210"
	env := &tools.Env{Secrets: secrets.NewSet([]string{secret})}
	place := messages.Place{RunID: "r", AgentID: "a-1", AgentName: "child " + secret, ParentAgentID: "a", Depth: 1}
	tk := &remote{d: &Dispatcher{o: DispatcherOptions{Pool: "p"}}, id: "t1", key: NewTaskKey(), kind: messages.TaskSubagent}
	c := actors.ChildRun{
		Config: actors.Config{Place: place, Env: env, SystemPrompt: "sys " + secret, Task: "task " + secret,
			Provider: "openai", Model: "m"},
		Prompt: "prompt " + secret,
		History: []messages.ChatMessage{{
			Role: messages.RoleAssistant, Content: "said " + secret, Reasoning: "thought " + secret,
			Thinking:  []messages.ThinkingBlock{{Thinking: "the key is " + secret, Signature: "sig"}},
			ToolCalls: []messages.ToolCall{{ID: "c1", Name: "read_file " + secret, Arguments: `{"p":"` + secret + `"}`}},
		}, {Role: messages.RoleTool, ToolCallID: "c1", Name: "read_file", Content: "file: " + secret}},
	}
	task, err := tk.task(c)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := messages.Encode(task)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), secret) {
		t.Fatalf("the task carries the run's secret:\n%s", raw)
	}
	if task.Key != tk.key || task.TaskID != "t1" || task.Pool != "p" {
		t.Fatalf("redaction changed the task's identity: %+v", task)
	}
}
