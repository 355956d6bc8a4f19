package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/jazz-run/jazz/safefile"
	"github.com/jazz-run/jazz/workstate"
)

// ErrNoConversation matches (errors.Is) a Show or Remove of a
// conversation the agent does not have.
var ErrNoConversation = errors.New("no such conversation")

// Summary is a conversation without its messages.
type Summary struct {
	ConversationID string  `json:"conversationId"`
	Title          string  `json:"title"`
	StartedAt      string  `json:"startedAt"`
	EndedAt        *string `json:"endedAt"`
	MessageCount   int     `json:"messageCount"`
}

// List returns an agent's conversations, newest first, without their
// messages. A file that cannot be used is no conversations and a
// warning, as for Load.
func (s *Store) List(ctx context.Context, agentID string) ([]Summary, string, error) {
	if err := checkIDs(agentID, "-"); err != nil {
		return nil, "", fmt.Errorf("list conversations: %w", err)
	}
	recs, bad, err := s.readFile(ctx, s.Path(agentID))
	if err != nil {
		return nil, "", err
	}
	warning := ""
	if bad != nil {
		warning = bad.why
	}
	out := make([]Summary, 0, len(recs))
	for _, r := range recs {
		var c Conversation
		if json.Unmarshal(r, &c) != nil {
			continue
		}
		if c.MessageCount == 0 {
			c.MessageCount = len(c.Messages)
		}
		out = append(out, Summary{ConversationID: c.ConversationID, Title: c.Title, StartedAt: c.StartedAt, EndedAt: c.EndedAt, MessageCount: c.MessageCount})
	}
	return out, warning, nil
}

// Show returns one conversation whole, messages included.
func (s *Store) Show(ctx context.Context, agentID, convID string) (Conversation, error) {
	if err := checkIDs(agentID, convID); err != nil {
		return Conversation{}, fmt.Errorf("show conversation: %w", err)
	}
	recs, bad, err := s.readFile(ctx, s.Path(agentID))
	if err != nil {
		return Conversation{}, err
	}
	if bad != nil {
		return Conversation{}, errors.New(bad.why)
	}
	raw, ok := find(recs, convID)
	if !ok {
		return Conversation{}, fmt.Errorf("%w %q", ErrNoConversation, convID)
	}
	var c Conversation
	if err := json.Unmarshal(raw, &c); err != nil {
		return Conversation{}, fmt.Errorf("conversation %q in %s is unreadable: %w", convID, s.Path(agentID), err)
	}
	return c, nil
}

// Remove deletes one conversation: its record (under the lock) and its
// work state (JAZZ_HOME/work/<agentId>/<conversation>: journal, state,
// todos), so nothing of it is left to resume. A conversation with
// neither is ErrNoConversation; work state left by a record removed
// before is removed too.
func (s *Store) Remove(ctx context.Context, agentID, convID string) error {
	if err := checkIDs(agentID, convID); err != nil {
		return fmt.Errorf("remove conversation: %w", err)
	}
	ws := workstate.Store{Home: s.Home, AgentID: agentID, ConversationID: convID}
	work, err := ws.Dir()
	if err != nil {
		return fmt.Errorf("remove conversation: %w", err)
	}
	_, statErr := os.Lstat(work)
	hadWork := statErr == nil
	removed, err := s.removeRecord(ctx, agentID, convID)
	if err != nil {
		return err
	}
	if !removed && !hadWork {
		return fmt.Errorf("%w %q", ErrNoConversation, convID)
	}
	if err := ws.Remove(); err != nil {
		return fmt.Errorf("remove the work state of conversation %q: %w", convID, err)
	}
	return nil
}

// removeRecord deletes the conversation's record from the history file
// under the lock; false when there is none.
func (s *Store) removeRecord(ctx context.Context, agentID, convID string) (bool, error) {
	if _, err := os.Lstat(s.dir()); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	unlock, err := s.lock(ctx, filepath.Join(s.dir(), agentID+".lock"))
	if err != nil {
		return false, fmt.Errorf("remove conversation: %w", err)
	}
	defer unlock()
	path := s.Path(agentID)
	recs, bad, err := s.readFile(ctx, path)
	if err != nil {
		return false, err
	}
	if bad != nil {
		return false, fmt.Errorf("remove conversation %q: %s", convID, bad.why)
	}
	keep := make([]json.RawMessage, 0, len(recs))
	for _, r := range recs {
		if id, _ := recordID(r); id != convID {
			keep = append(keep, r)
		}
	}
	if len(keep) == len(recs) {
		return false, nil
	}
	data, err := json.Marshal(file{AgentID: agentID, Conversations: keep})
	if err != nil {
		return false, err
	}
	if err := writeAtomic(path, data, s.crash); err != nil {
		return false, fmt.Errorf("remove conversation %q from %s: %w", convID, path, err)
	}
	return true, nil
}

// RemoveAll deletes an agent's whole history: its history file, and
// the work state of its conversations (JAZZ_HOME/work/<agentId>). An
// agent without either is no error.
func (s *Store) RemoveAll(ctx context.Context, agentID string) error {
	if err := checkIDs(agentID, "-"); err != nil {
		return fmt.Errorf("remove history: %w", err)
	}
	if _, err := os.Lstat(s.dir()); errors.Is(err, fs.ErrNotExist) {
		return s.removeWork(agentID)
	}
	if err := safefile.CheckPrivate(s.dir()); err != nil {
		return fmt.Errorf("remove history: %w", err)
	}
	unlock, err := s.lock(ctx, filepath.Join(s.dir(), agentID+".lock"))
	if err != nil {
		return fmt.Errorf("remove history: %w", err)
	}
	defer unlock()
	s.removeTempFiles(agentID)
	if err := os.Remove(s.Path(agentID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove history %s: %w", s.Path(agentID), err)
	}
	return s.removeWork(agentID)
}

func (s *Store) removeWork(agentID string) error {
	return workstate.RemoveAgent(s.Home, agentID)
}
