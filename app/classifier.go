package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
)

// classifierContextChars caps the user requests sent with a command.
const classifierContextChars = 800

// harnessClassifier asks the cheap harness model to rate a shell command.
// It sees the command and, since a person is at the terminal, the last five
// user requests (newest kept, 800 characters at most), never an assistant
// turn: the agent proposing the command wrote those.
func harnessClassifier(p provider.Provider, model string, userRequests []string) gateactor.Classifier {
	var ctxText string
	if n := len(userRequests); n > 0 {
		start := max(0, n-5)
		var b strings.Builder
		for i := n - 1; i >= start; i-- {
			line := "- " + strings.TrimSpace(userRequests[i]) + "\n"
			if b.Len()+len(line) > classifierContextChars {
				break
			}
			b.WriteString(line)
		}
		ctxText = b.String()
	}
	return func(ctx context.Context, command string) (string, error) {
		prompt := "Rate the risk of running this shell command on the user's machine. Reply with exactly one of: read-only, low-risk, high-risk.\n" +
			"read-only: only inspects (lists, reads, searches, shows status). low-risk: changes little and is easy to undo. " +
			"high-risk: deletes, overwrites, installs, pushes, sends data out, or anything you are unsure of.\n\nCommand:\n" + command + "\n"
		if ctxText != "" {
			prompt += "\nThe user's recent requests (newest first):\n" + ctxText
		}
		resp, err := p.Chat(ctx, provider.Request{Model: model, Messages: []messages.ChatMessage{{Role: messages.RoleUser, Content: prompt}}}, nil)
		if err != nil {
			return "", fmt.Errorf("classify command: %w", err)
		}
		return strings.TrimSpace(resp.Message.Content), nil
	}
}

// harnessModel is the cheap model that rates commands: the agent's
// summarizerModel when it is set and opens, else the agent's own model
// (with a warning when summarizerModel was set but unusable).
func harnessModel(ctx context.Context, o RunOptions, getenv func(string) string, own provider.Provider, warn func(agent, msg string)) (provider.Provider, string) {
	id := strings.TrimSpace(o.Agent.Config.SummarizerModel)
	if id == "" {
		return own, o.Agent.Config.LLMModel
	}
	name, model, err := provider.ParseModelID(id)
	if err == nil {
		var p provider.Provider
		if p, err = openModel(ctx, o, getenv, name, model); err == nil {
			return p, model
		}
	}
	warn(o.Agent.Name, fmt.Sprintf("summarizerModel %q cannot be used (%v); the agent's own model classifies commands", id, err))
	return own, o.Agent.Config.LLMModel
}

// userRequests lists the user turns of a run: prior conversation, then
// the prompt.
func userRequests(history []messages.ChatMessage, prompt string) []string {
	var out []string
	for _, m := range history {
		if m.Role == messages.RoleUser {
			out = append(out, m.Content)
		}
	}
	return append(out, prompt)
}
