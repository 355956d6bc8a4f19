package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
)

func user(s string) messages.ChatMessage {
	return messages.ChatMessage{Role: messages.RoleUser, Content: s}
}
func reply(s string) messages.ChatMessage {
	return messages.ChatMessage{Role: messages.RoleAssistant, Content: s}
}
func callsTo(ids ...string) messages.ChatMessage {
	m := messages.ChatMessage{Role: messages.RoleAssistant}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, messages.ToolCall{ID: id, Name: "read_file", Arguments: "{}"})
	}
	return m
}
func result(id, s string) messages.ChatMessage {
	return messages.ChatMessage{Role: messages.RoleTool, ToolCallID: id, Name: "read_file", Content: s}
}

func size(msgs []messages.ChatMessage) int {
	n := 0
	for _, m := range msgs {
		n += encodedSize(m)
	}
	return n
}

func TestBoundKeepsPairsAndStartsAtUser(t *testing.T) {
	big := strings.Repeat("x", 1000)
	msgs := []messages.ChatMessage{
		user("q1 " + big), reply("a1"),
		user("q2"), callsTo("c1", "c2"), result("c1", big), result("c2", big), reply("a2"),
		user("q3"), callsTo("c3"), result("c3", "small"), reply("a3"),
	}
	// Everything fits: unchanged.
	if kept, dropped := Bound(msgs, size(msgs)); dropped != 0 || len(kept) != len(msgs) {
		t.Fatalf("dropped %d of a conversation that fits", dropped)
	}
	// Room for the last turn and part of the second: the pair c1/c2 must
	// not be split, so the kept part starts at q3.
	limit := size(msgs[7:]) + encodedSize(msgs[6]) + encodedSize(msgs[5])
	kept, dropped := Bound(msgs, limit)
	if !reflect.DeepEqual(kept, msgs[7:]) || dropped != 7 {
		t.Fatalf("kept %d messages (dropped %d), want the last turn from q3", len(kept), dropped)
	}
	// Room for the last two turns exactly.
	kept, dropped = Bound(msgs, size(msgs[2:]))
	if dropped != 2 || kept[0].Content != "q2" {
		t.Fatalf("kept from %q, dropped %d", kept[0].Content, dropped)
	}
	// Nothing fits: nothing kept.
	if kept, dropped := Bound(msgs, 10); len(kept) != 0 || dropped != len(msgs) {
		t.Fatalf("kept %d", len(kept))
	}
}

// TestBoundProperties: on random valid transcripts, the result is a
// suffix, within the limit, still valid (Sanitize keeps it whole), and
// starts with a user message whenever its input suffix held one.
func TestBoundProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		var msgs []messages.ChatMessage
		for range r.IntN(12) {
			msgs = append(msgs, user(strings.Repeat("u", r.IntN(300))))
			for range r.IntN(3) {
				n := 1 + r.IntN(3)
				ids := make([]string, n)
				for k := range ids {
					ids[k] = fmt.Sprintf("c%d-%d", len(msgs), k)
				}
				msgs = append(msgs, callsTo(ids...))
				for _, id := range ids {
					msgs = append(msgs, result(id, strings.Repeat("r", r.IntN(500))))
				}
			}
			msgs = append(msgs, reply(strings.Repeat("a", r.IntN(200))))
		}
		limit := r.IntN(size(msgs) + 10)
		kept, dropped := Bound(msgs, limit)
		if dropped+len(kept) != len(msgs) || (len(kept) > 0 && !reflect.DeepEqual(kept, msgs[dropped:])) {
			t.Fatalf("case %d: not a suffix", i)
		}
		if size(kept) > limit {
			t.Fatalf("case %d: %d bytes kept, limit %d", i, size(kept), limit)
		}
		if got := Sanitize(kept); len(got) != len(kept) {
			t.Fatalf("case %d: kept part is not valid: sanitize drops %d", i, len(kept)-len(got))
		}
		if len(kept) > 0 && kept[0].Role != messages.RoleUser {
			for _, m := range kept {
				if m.Role == messages.RoleUser {
					t.Fatalf("case %d: kept part starts with %s though it holds a user message", i, kept[0].Role)
				}
			}
		}
	}
}

func TestLoadBoundsConversation(t *testing.T) {
	s := newStore(t)
	s.MaxConversationBytes = 4 << 10
	var transcript []messages.ChatMessage
	for i := range 20 {
		transcript = append(transcript, user(fmt.Sprintf("q%d %s", i, strings.Repeat("x", 500))),
			callsTo(fmt.Sprintf("c%d", i)), result(fmt.Sprintf("c%d", i), "ok"), reply(fmt.Sprintf("a%d", i)))
	}
	// Stored under a larger limit (as an older jazz would have), then
	// loaded under the small one.
	big := *s
	big.MaxConversationBytes = 1 << 20
	if err := big.Save(context.Background(), "agent", "c", "q", transcript, ""); err != nil {
		t.Fatal(err)
	}
	msgs, warn, err := s.Load(context.Background(), "agent", "c")
	if err != nil || size(msgs) > s.MaxConversationBytes || len(msgs) == 0 {
		t.Fatalf("err %v, %d messages of %d bytes", err, len(msgs), size(msgs))
	}
	if msgs[0].Role != messages.RoleUser || msgs[len(msgs)-1].Content != "a19" {
		t.Fatalf("kept %q .. %q, want the newest turns from a user message", msgs[0].Content, msgs[len(msgs)-1].Content)
	}
	if !strings.Contains(warn, "oldest") || !strings.Contains(warn, fmt.Sprint(len(transcript)-len(msgs))) {
		t.Fatalf("warning %q", warn)
	}
}

func TestSaveBoundsConversationAndFile(t *testing.T) {
	s := newStore(t)
	s.MaxConversationBytes = 4 << 10
	s.MaxFileBytes = 12 << 10
	var notices []string
	s.Notice = func(m string) { notices = append(notices, m) }
	transcript := []messages.ChatMessage{{Role: messages.RoleSystem, Content: "sys"}}
	for i := range 20 {
		transcript = append(transcript, user(fmt.Sprintf("q%d %s", i, strings.Repeat("x", 500))), reply(fmt.Sprintf("a%d", i)))
	}
	if err := s.Save(context.Background(), "agent", "c0", "q", transcript, ""); err != nil {
		t.Fatal(err)
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "were dropped") {
		t.Fatalf("notices %q", notices)
	}
	st, err := os.Stat(s.Path("agent"))
	if err != nil || st.Size() > int64(s.MaxConversationBytes)+1024 {
		t.Fatalf("stored %v bytes: %v", st.Size(), err)
	}
	// Conversations past the file limit give way, oldest first.
	for i := 1; i < 6; i++ {
		if err := s.Save(context.Background(), "agent", fmt.Sprintf("c%d", i), "q", transcript, ""); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := os.Stat(s.Path("agent")); st.Size() > int64(s.MaxFileBytes) {
		t.Fatalf("file is %d bytes, limit %d", st.Size(), s.MaxFileBytes)
	}
	if msgs, _, _ := s.Load(context.Background(), "agent", "c0"); len(msgs) != 0 {
		t.Fatal("the oldest conversation survived a file over its limit")
	}
	if msgs, warn, _ := s.Load(context.Background(), "agent", "c5"); len(msgs) == 0 || warn != "" {
		t.Fatalf("newest conversation: %d messages, warning %q", len(msgs), warn)
	}
	if !strings.Contains(strings.Join(notices, "\n"), "oldest conversations were dropped") {
		t.Fatalf("notices %q", notices)
	}
}

// TestOversizeHistoryFile: a real file over the default 16 MiB is not
// read; the next save moves it aside whole and starts afresh.
func TestOversizeHistoryFile(t *testing.T) {
	s := newStore(t)
	os.MkdirAll(s.dir(), 0o700)
	big := `{"agentId":"agent","conversations":[{"conversationId":"c","messages":[{"role":"user","content":"` +
		strings.Repeat("x", MaxFileBytes) + `"}]}]}`
	if err := os.WriteFile(s.Path("agent"), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	msgs, warn, err := s.Load(context.Background(), "agent", "c")
	if err != nil || len(msgs) != 0 || !strings.Contains(warn, "over the limit of 16 MiB") || !strings.Contains(warn, s.Path("agent")) {
		t.Fatalf("msgs %d warn %q err %v", len(msgs), warn, err)
	}
	var notices []string
	s.Notice = func(m string) { notices = append(notices, m) }
	if err := s.Save(context.Background(), "agent", "c", "p", nil, "a"); err != nil {
		t.Fatal(err)
	}
	aside, _ := filepath.Glob(s.Path("agent") + ".oversize-*")
	if len(aside) != 1 || len(notices) != 1 || !strings.Contains(notices[0], aside[0]) {
		t.Fatalf("aside %v notices %q", aside, notices)
	}
	if data, _ := os.ReadFile(aside[0]); string(data) != big {
		t.Fatal("the oversize file was not kept as it was")
	}
	if msgs, warn, _ := s.Load(context.Background(), "agent", "c"); len(msgs) != 2 || warn != "" {
		t.Fatalf("after save: %d messages, %q", len(msgs), warn)
	}
}

func TestUnusableHistoryFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs or POSIX modes")
	}
	t.Run("fifo", func(t *testing.T) {
		s := newStore(t)
		os.MkdirAll(s.dir(), 0o700)
		mkfifo(t, s.Path("agent"))
		done := make(chan struct{})
		go func() {
			defer close(done)
			msgs, warn, err := s.Load(context.Background(), "agent", "c")
			if err != nil || len(msgs) != 0 || !strings.Contains(warn, "named pipe") {
				t.Errorf("msgs %d warn %q err %v", len(msgs), warn, err)
			}
			if err := s.Save(context.Background(), "agent", "c", "p", nil, "a"); err != nil {
				t.Error(err)
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a FIFO history blocked the load")
		}
		if aside, _ := filepath.Glob(s.Path("agent") + ".not-a-file-*"); len(aside) != 1 {
			t.Fatalf("FIFO not moved aside: %v", aside)
		}
	})
	t.Run("writable by others", func(t *testing.T) {
		s := newStore(t)
		if err := s.Save(context.Background(), "agent", "c", "p", nil, "a"); err != nil {
			t.Fatal(err)
		}
		os.Chmod(s.Path("agent"), 0o666)
		msgs, warn, err := s.Load(context.Background(), "agent", "c")
		if err != nil || len(msgs) != 0 || !strings.Contains(warn, "writable by group and others") {
			t.Fatalf("msgs %d warn %q err %v", len(msgs), warn, err)
		}
	})
	t.Run("directory writable by others", func(t *testing.T) {
		s := newStore(t)
		os.MkdirAll(s.dir(), 0o700)
		os.Chmod(s.dir(), 0o777)
		err := s.Save(context.Background(), "agent", "c", "p", nil, "a")
		if err == nil || !strings.Contains(err.Error(), "chmod go-w "+s.dir()) {
			t.Fatalf("save into a shared directory: %v", err)
		}
	})
}
