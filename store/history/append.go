package history

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jazz-run/jazz/messages"
)

// Append records a finished turn by adding only what the turn produced
// (added: its user message and the replies that followed) to the record
// as it is stored now, under the lock. Two runs of one conversation that
// overlap therefore both keep their messages: each appends its own block
// to whatever the other already saved, where Save would let the later
// writer replace the earlier one. A new record starts from full, the
// turn's whole transcript (system message included). Title, startedAt,
// the move to the front and the cut to MaxConversations are Save's.
func (s *Store) Append(ctx context.Context, agentID, convID, prompt string, full, added []messages.ChatMessage) error {
	if err := checkIDs(agentID, convID); err != nil {
		return fmt.Errorf("save conversation: %w", err)
	}
	if err := os.MkdirAll(s.dir(), 0o700); err != nil {
		return fmt.Errorf("save conversation: create %s: %w", s.dir(), err)
	}
	unlock, err := s.lock(ctx, filepath.Join(s.dir(), agentID+".lock"))
	if err != nil {
		return fmt.Errorf("save conversation: %w", err)
	}
	defer unlock()
	s.removeTempFiles(agentID)

	path := s.Path(agentID)
	recs, warning := readFile(path)
	if warning != "" {
		_ = os.Rename(path, fmt.Sprintf("%s.corrupt-%d", path, s.now().UnixMilli()))
	}
	now := iso(s.now())
	rec := Conversation{ConversationID: convID, AgentID: agentID, StartedAt: now, Title: title(prompt)}
	var prior Conversation
	if raw, ok := find(recs, convID); ok && json.Unmarshal(raw, &prior) == nil {
		rec.Title, rec.StartedAt = prior.Title, prior.StartedAt
		if rec.Title == "" {
			rec.Title = title(prompt)
		}
		rec.Messages = Sanitize(append(append([]messages.ChatMessage(nil), prior.Messages...), Sanitize(added)...))
	} else {
		rec.Messages = Sanitize(full)
	}
	rec.EndedAt = &now
	rec.MessageCount = len(rec.Messages)
	encoded, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("save conversation %q: %w", convID, err)
	}
	out := file{AgentID: agentID, Conversations: make([]json.RawMessage, 0, min(len(recs)+1, MaxConversations))}
	out.Conversations = append(out.Conversations, encoded)
	for _, r := range recs {
		if len(out.Conversations) == MaxConversations {
			break
		}
		if id, _ := recordID(r); id != convID {
			out.Conversations = append(out.Conversations, r)
		}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("save conversation %q: %w", convID, err)
	}
	if err := writeAtomic(path, data); err != nil {
		return fmt.Errorf("save conversation %q to %s: %w", convID, path, err)
	}
	return nil
}
