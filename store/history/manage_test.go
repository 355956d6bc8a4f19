package history

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jazz-run/jazz/workstate"
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

// TestRemoveTakesWorkState: removing a conversation removes its work
// state (todos, state, journal) too — an id stored under its hash
// included — and leaves every other conversation's; work state whose
// record is already gone is removed as well; a conversation with neither
// is ErrNoConversation.
func TestRemoveTakesWorkState(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	work := func(conv string) string {
		t.Helper()
		ws := workstate.Store{Home: s.Home, AgentID: "a1", ConversationID: conv}
		if err := ws.SaveTodos(ctx, []workstate.Todo{{Content: "x", Status: "pending", Priority: "low"}}); err != nil {
			t.Fatal(err)
		}
		dir, err := ws.Dir()
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
	gone := func(dir string) bool { _, err := os.Lstat(dir); return os.IsNotExist(err) }
	var dirs = map[string]string{}
	for _, c := range []string{"one", "two", "odd/../id"} {
		if err := s.Save(ctx, "a1", c, "prompt", nil, "answer"); err != nil {
			t.Fatal(err)
		}
		dirs[c] = work(c)
	}
	dirs["orphan"] = work("orphan")
	for _, c := range []string{"one", "odd/../id", "orphan"} {
		if err := s.Remove(ctx, "a1", c); err != nil {
			t.Fatalf("Remove %q: %v", c, err)
		}
		if !gone(dirs[c]) {
			t.Errorf("the work state of %q is left: %s", c, dirs[c])
		}
	}
	if gone(dirs["two"]) {
		t.Error("the work state of another conversation was removed")
	}
	if list, _, _ := s.List(ctx, "a1"); len(list) != 1 || list[0].ConversationID != "two" {
		t.Errorf("after Remove: %+v", list)
	}
	if err := s.Remove(ctx, "a1", "never"); !errors.Is(err, ErrNoConversation) {
		t.Errorf("Remove of nothing: %v", err)
	}
}

// TestRemoveNeverFollowsAPlantedLink: with work/ or work/<agent>/
// planted as a symlink to a directory elsewhere, removing a conversation
// or an agent's history deletes nothing there.
func TestRemoveNeverFollowsAPlantedLink(t *testing.T) {
	ctx := context.Background()
	for _, at := range []string{"work", "work/a1"} {
		for _, all := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/all=%v", at, all), func(t *testing.T) {
				s := newStore(t)
				if err := s.Save(ctx, "a1", "conv", "p", nil, "a"); err != nil {
					t.Fatal(err)
				}
				elsewhere := t.TempDir()
				// What the removal would reach through the link.
				victims := []string{filepath.Join(elsewhere, "a1", "conv", "keep"), filepath.Join(elsewhere, "conv", "keep")}
				for _, v := range victims {
					if err := os.MkdirAll(filepath.Dir(v), 0o700); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(v, []byte("precious"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				link := filepath.Join(s.Home, filepath.FromSlash(at))
				if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(elsewhere, link); err != nil {
					t.Fatal(err)
				}
				if all {
					_ = s.RemoveAll(ctx, "a1")
				} else {
					_ = s.Remove(ctx, "a1", "conv")
				}
				for _, v := range victims {
					if _, err := os.Stat(v); err != nil {
						t.Errorf("%s was deleted through the link: %v", v, err)
					}
				}
			})
		}
	}
}
