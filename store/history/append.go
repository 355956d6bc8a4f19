package history

import (
	"context"

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
	return s.upsert(ctx, agentID, convID, prompt, func(prior Conversation, found bool) []messages.ChatMessage {
		if !found {
			return Sanitize(full)
		}
		return Sanitize(append(append([]messages.ChatMessage(nil), prior.Messages...), Sanitize(added)...))
	})
}
