//go:build unix

package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// TestPreRunReadsNeverHang: every file jazz reads before the run (config
// files, the agent, the replay script, the history) is a FIFO or a huge
// file in turn. A FIFO is refused at once, never waited on, and a file
// over its limit is refused without being read; in --json mode stdout is
// one failure envelope naming the file. History is memory, not input: a
// FIFO or an oversize history is a warning and the run goes on without it.
func TestPreRunReadsNeverHang(t *testing.T) {
	t.Parallel()
	huge := func(t *testing.T, path string, size int64) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
	}
	fifo := func(t *testing.T, path string) {
		t.Helper()
		os.Remove(path)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		mkfifo(t, path)
	}
	cases := []struct {
		name string
		// setup returns the file it made hostile and extra arguments.
		setup func(t *testing.T, w *world, agentID string) (string, []string)
		want  string // "" = the run succeeds, with a warning naming the file
	}{
		{"global config fifo", func(t *testing.T, w *world, _ string) (string, []string) {
			p := filepath.Join(w.home, "config.json")
			fifo(t, p)
			return p, nil
		}, "named pipe"},
		{"--config fifo", func(t *testing.T, w *world, _ string) (string, []string) {
			p := filepath.Join(w.cwd, "cfg.json")
			fifo(t, p)
			return p, []string{"--config", p}
		}, "named pipe"},
		{"project config fifo", func(t *testing.T, w *world, _ string) (string, []string) {
			p := filepath.Join(w.cwd, ".jazz", "config.json")
			fifo(t, p)
			return p, nil
		}, "named pipe"},
		{"global config huge", func(t *testing.T, w *world, _ string) (string, []string) {
			p := filepath.Join(w.home, "config.json")
			huge(t, p, 2<<20)
			return p, nil
		}, "over the limit of 1 MiB"},
		{"agent file fifo", func(t *testing.T, w *world, id string) (string, []string) {
			p := filepath.Join(w.home, "agents", id+".json")
			fifo(t, p)
			return p, nil
		}, "named pipe"},
		{"agent file huge", func(t *testing.T, w *world, id string) (string, []string) {
			p := filepath.Join(w.home, "agents", id+".json")
			huge(t, p, 2<<20)
			return p, nil
		}, "over the limit of 1 MiB"},
		{"history fifo", func(t *testing.T, w *world, id string) (string, []string) {
			p := filepath.Join(w.home, "history", id+".json")
			fifo(t, p)
			return p, []string{"--conversation", "c"}
		}, ""},
		{"history huge", func(t *testing.T, w *world, id string) (string, []string) {
			p := filepath.Join(w.home, "history", id+".json")
			huge(t, p, 100<<20)
			return p, []string{"--conversation", "c"}
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := chatserver.NewFunc(func(int, chatserver.Request) chatserver.Turn { return answer("ok") })
			defer srv.Close()
			w := newWorld(t, srv.URL())
			id := w.agent("x", "read_file")
			path, extra := c.setup(t, w, id)
			args := append([]string{"run", "--agent", id, "--json", "--timeout", "20000"}, extra...)
			r := w.exec("", append(args, "hi")...)
			if r.took > 10*time.Second {
				t.Fatalf("took %v: a read waited", r.took)
			}
			if c.want != "" {
				e := wantFailure(t, r, c.want)
				if !strings.Contains(e.Error, path) {
					t.Fatalf("error %q does not name %s", e.Error, path)
				}
				if len(srv.Requests()) != 0 {
					t.Fatal("the model was called although the run could not start")
				}
				return
			}
			if e := wantSuccess(t, r); e.Answer != "ok" {
				t.Fatalf("answer %q", e.Answer)
			}
			if !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, "starting fresh") {
				t.Fatalf("no warning naming %s:\n%s", path, r.stderr)
			}
			// The unusable file is kept aside, not lost; the new turn saved.
			aside, _ := filepath.Glob(path + ".*-*")
			if len(aside) != 1 {
				t.Fatalf("history not moved aside: %v\n%s", aside, r.stderr)
			}
		})
	}
}

// TestReplayScriptFIFO: a replay model whose script is a FIFO fails the
// run at once with a message naming the script.
func TestReplayScriptFIFO(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "http://127.0.0.1:1/v1")
	p := filepath.Join(w.cwd, "script.json")
	mkfifo(t, p)
	r := w.exec("", "agent", "create", "--name", "r", "--model", "replay/"+p)
	if r.code != 0 {
		t.Fatalf("agent create: %s", r.stderr)
	}
	r = w.exec("", "run", "--agent", "r", "--json", "hi")
	if r.took > 10*time.Second {
		t.Fatalf("took %v", r.took)
	}
	if e := wantFailure(t, r, "named pipe"); !strings.Contains(e.Error, p) {
		t.Fatalf("error %q does not name %s", e.Error, p)
	}
}

// TestOversizeConversationIsBounded: a conversation stored bigger than a
// run may load (by an older jazz, or by hand) is sent to the model as its
// newest messages within the bound, tool calls with their results, and
// stderr says so.
func TestOversizeConversationIsBounded(t *testing.T) {
	t.Parallel()
	srv := chatserver.NewFunc(func(int, chatserver.Request) chatserver.Turn { return answer("ok") })
	defer srv.Close()
	w := newWorld(t, srv.URL())
	// What is loaded is the point here: with context management on, a
	// history this far over the window would first be compacted.
	w.env = append(w.env, "JAZZ_CONTEXT_MANAGEMENT=off")
	id := w.agent("x", "read_file")
	filler := strings.Repeat("x", 64<<10)
	var msgs []map[string]any
	// 40 turns of ~128 KiB: 5 MiB, under the file limit and well over the
	// ~2 MiB that may be sent.
	const turns = 40
	for i := range turns {
		msgs = append(msgs,
			map[string]any{"role": "user", "content": fmt.Sprintf("q%d %s", i, filler)},
			map[string]any{"role": "assistant", "toolCalls": []map[string]string{{"id": fmt.Sprintf("c%d", i), "name": "read_file", "arguments": "{}"}}},
			map[string]any{"role": "tool", "toolCallId": fmt.Sprintf("c%d", i), "name": "read_file", "content": filler},
			map[string]any{"role": "assistant", "content": fmt.Sprintf("a%d", i)})
	}
	doc := map[string]any{"agentId": id, "conversations": []map[string]any{{
		"conversationId": "c", "title": "t", "agentId": id, "startedAt": "2025-01-01T00:00:00.000Z", "messageCount": len(msgs), "messages": msgs}}}
	data, _ := json.Marshal(doc)
	if err := os.MkdirAll(filepath.Join(w.home, "history"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.home, "history", id+".json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	r := w.exec("", "run", "--agent", id, "--json", "--conversation", "c", "next")
	wantSuccess(t, r)
	if !strings.Contains(r.stderr, "oldest") {
		t.Fatalf("no warning about the cut:\n%s", r.stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	sent := len(reqs[0].Raw)
	if sent > 3<<20 || sent < 1<<20 {
		t.Fatalf("the model got %d bytes; want the newest ~2 MiB of a %d-byte history", sent, len(data))
	}
	// The newest turn is there, with its tool call and result paired.
	ms := reqs[0].Messages
	newest := fmt.Sprintf("c%d", turns-1)
	var sawCall, sawResult bool
	for _, m := range ms {
		if len(m.ToolCalls) > 0 && m.ToolCalls[0].ID == newest {
			sawCall = true
		}
		if m.ToolCallID == newest {
			sawResult = sawCall
		}
	}
	if !sawCall || !sawResult {
		t.Fatal("the newest tool call and its result were not sent together")
	}
	for i, m := range ms {
		if m.Role == "tool" && (i == 0 || (ms[i-1].Role != "assistant" && ms[i-1].Role != "tool")) {
			t.Fatalf("message %d is a tool result without its call", i)
		}
	}
}
