package history

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestListShowRemove(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, c := range []string{"one", "two", "three"} {
		if err := s.Save(ctx, "a1", c, "prompt "+c, nil, "answer "+c); err != nil {
			t.Fatal(err)
		}
	}
	list, warn, err := s.List(ctx, "a1")
	if err != nil || warn != "" || len(list) != 3 || list[0].ConversationID != "three" || list[0].MessageCount != 2 {
		t.Fatalf("List = %+v, %q, %v", list, warn, err)
	}
	c, err := s.Show(ctx, "a1", "two")
	if err != nil || len(c.Messages) != 2 || c.Messages[1].Content != "answer two" {
		t.Fatalf("Show = %+v, %v", c, err)
	}
	if err := s.Remove(ctx, "a1", "two"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Show(ctx, "a1", "two"); !errors.Is(err, ErrNoConversation) {
		t.Fatalf("Show after Remove: %v", err)
	}
	if err := s.Remove(ctx, "a1", "two"); !errors.Is(err, ErrNoConversation) {
		t.Fatalf("second Remove: %v", err)
	}
	if list, _, _ = s.List(ctx, "a1"); len(list) != 2 {
		t.Fatalf("after Remove: %+v", list)
	}
	work := filepath.Join(s.Home, "work", "a1", "one")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveAll(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path("a1")); !os.IsNotExist(err) {
		t.Errorf("history file left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Home, "work", "a1")); !os.IsNotExist(err) {
		t.Errorf("work state left: %v", err)
	}
	if err := s.RemoveAll(ctx, "nobody"); err != nil {
		t.Errorf("RemoveAll of an agent without history: %v", err)
	}
}
