package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/store/agents"
	"github.com/jazz-run/jazz/store/history"
)

// The per-run overrides of `jazz run`: another model, more instructions,
// another working directory, and a conversation the caller keeps
// (--ephemeral, --history-json) instead of jazz.

// MaxHistoryJSON bounds --history-json: it is read whole, like a stored
// conversation.
const MaxHistoryJSON = history.MaxConversationBytes

// runCwd is --cwd resolved against where jazz started: an existing
// directory, or an error naming it.
func runCwd(flag, start string) (string, error) {
	if flag == "" {
		return start, nil
	}
	dir := flag
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(start, dir)
	}
	dir = filepath.Clean(dir)
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return "", fmt.Errorf("Invalid --cwd %q: %v", flag, errors.Unwrap(err))
	case !fi.IsDir():
		return "", fmt.Errorf("Invalid --cwd %q: not a directory", flag)
	}
	return dir, nil
}

// withModel is the agent run on another model (--model provider/model)
// for this run only; its file is not changed.
func withModel(a agents.Agent, model string) (agents.Agent, error) {
	if model = strings.TrimSpace(model); model == "" {
		return a, nil
	}
	p, m, err := provider.ParseModelID(model)
	if err != nil {
		return a, fmt.Errorf("Invalid --model: %w", err)
	}
	a.Model, a.Config.LLMProvider, a.Config.LLMModel = p+"/"+m, p, m
	return a, nil
}

// historyJSON reads --history-json: a JSON array of messages
// ({"role","content"}, as `messages` in an --ephemeral envelope), the
// conversation so far. System messages are dropped (the agent's own
// comes first) and the rest made valid for every provider.
func historyJSON(raw string) ([]messages.ChatMessage, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	if len(raw) > MaxHistoryJSON {
		return nil, fmt.Errorf("--history-json is larger than %d bytes", MaxHistoryJSON)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	var msgs []messages.ChatMessage
	if err := dec.Decode(&msgs); err != nil {
		return nil, fmt.Errorf("--history-json must be a JSON array of messages ({\"role\":\"user\",\"content\":\"...\"}): %v", err)
	}
	if dec.More() {
		return nil, errors.New("--history-json holds more than one JSON value")
	}
	out := make([]messages.ChatMessage, 0, len(msgs))
	for i, m := range msgs {
		switch m.Role {
		case messages.RoleSystem:
			continue
		case messages.RoleUser, messages.RoleAssistant, messages.RoleTool:
		default:
			return nil, fmt.Errorf("--history-json[%d]: role %q must be user, assistant or tool", i, m.Role)
		}
		out = append(out, m)
	}
	return history.Sanitize(out), nil
}

// transcriptOf is `messages` of an --ephemeral envelope: the whole
// conversation after the run, without the system message, ready to be
// passed back as --history-json.
func transcriptOf(f messages.RunFinished, prompt string) []messages.ChatMessage {
	out := make([]messages.ChatMessage, 0, len(f.Transcript))
	for _, m := range f.Transcript {
		if m.Role != messages.RoleSystem {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		out = append(out, messages.ChatMessage{Role: messages.RoleUser, Content: prompt},
			messages.ChatMessage{Role: messages.RoleAssistant, Content: f.Answer})
	}
	return out
}
