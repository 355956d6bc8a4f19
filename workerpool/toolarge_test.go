package workerpool_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/e2e/chatserver"
)

// TestWorkersRequestTooLargeForTheBusIsDeclinedNotWaitedFor: a child on
// a worker writes a small file, then one whose approval request is
// larger than the bus server takes. The small one is approved by the
// runner's gate and written; the large one, which the bus refuses to
// carry, is declined on the worker at once, the child told its size, the
// limit and to split it, and nothing is written. Before, the request was
// dropped unsent and re-asked every two seconds, and the run waited
// until its --timeout.
func TestWorkersRequestTooLargeForTheBusIsDeclinedNotWaitedFor(t *testing.T) {
	small := strings.Repeat("s", 100<<10)
	big := strings.Repeat("b", 3<<20) // its request carries it three times: over the server's 8 MB
	write := func(id, path, content string) chatserver.Call {
		args, _ := json.Marshal(map[string]string{"path": path, "content": content})
		return chatserver.Call{ID: id, Name: "write_file", Arguments: string(args)}
	}
	told := make(chan string, 1)
	// The child's turns are counted, not read from its history: the
	// large call may be compacted out of what it sends.
	var childTurns atomic.Int32
	f := newFixture(t, 1, func(_ int, r chatserver.Request) chatserver.Turn {
		tm := r.ToolMessages()
		if isChild(r) {
			switch childTurns.Add(1) {
			case 1:
				return chatserver.Turn{Calls: []chatserver.Call{write("w1", "small.txt", small)}}
			case 2:
				return chatserver.Turn{Calls: []chatserver.Call{write("w2", "big.txt", big)}}
			}
			for _, m := range tm {
				if m.Content != nil && strings.Contains(*m.Content, "too large") {
					select {
					case told <- *m.Content:
					default:
					}
				}
			}
			return chatserver.Turn{Text: "child done"}
		}
		if len(tm) == 0 {
			return chatserver.Turn{Calls: []chatserver.Call{spawn("c1", "write them")}}
		}
		return chatserver.Turn{Text: "parent done"}
	})
	// A long lease: under -race, building the large request and its
	// events can hold the worker's connection past a short one, and a
	// worker taken for lost after an approved write is not run again.
	// 10 s was exceeded once, in a CI run at a load of 20 on 2 cores.
	f.worker("w1", 1, 30*time.Second)
	o := f.runOptions("go", "spawn_subagent", "write_file")
	// Under -race, building and refusing the large request takes seconds;
	// a run that waited for its request would end by this timeout.
	o.Timeout = 120 * time.Second
	o.AutoApprove = []string{"write_file"} // the runner's allowlist approves a relayed write
	start := time.Now()
	out, err := app.RunAndWait(context.Background(), o)
	if err != nil || !out.OK {
		t.Fatalf("run: %v, ok=%v, stop %s, after %s", err, out.OK, out.StopReason, time.Since(start))
	}
	if got, err := os.ReadFile(filepath.Join(f.cwd, "small.txt")); err != nil || string(got) != small {
		t.Fatalf("the small write: %d bytes, %v", len(got), err)
	}
	if _, err := os.Stat(filepath.Join(f.cwd, "big.txt")); !os.IsNotExist(err) {
		t.Fatalf("the write nobody could approve happened: %v", err)
	}
	select {
	case msg := <-told:
		if !strings.Contains(msg, "too large to send for approval") || !strings.Contains(msg, "Split it") {
			t.Fatalf("the child was told %.300q", msg)
		}
	default:
		for i, r := range f.chat.Requests() {
			for _, m := range r.ToolMessages() {
				if m.Content != nil {
					t.Logf("request %d (child %v): tool %.200q", i, isChild(r), *m.Content)
				}
			}
		}
		t.Fatalf("the child never heard back about the large write (child turns %d, answer %.300q)", childTurns.Load(), out.Answer)
	}
}

// TestChildsResultTooLargeForTheBusFailsSayingSo: a child on a worker
// answers with more than the bus server takes. Its parent is told the
// child failed because its result was too large to send back (the size,
// the limit, what to ask for instead), not that its worker went silent;
// before, the worker retried the result for half a minute, its
// heartbeats stopped, and the parent was told the worker stopped
// answering.
func TestChildsResultTooLargeForTheBusFailsSayingSo(t *testing.T) {
	f := newFixture(t, 1, func(_ int, r chatserver.Request) chatserver.Turn {
		if isChild(r) {
			return chatserver.Turn{Text: strings.Repeat("a", 9<<20)}
		}
		if len(r.ToolMessages()) == 0 {
			return chatserver.Turn{Calls: []chatserver.Call{spawn("c1", "answer at length")}}
		}
		return chatserver.Turn{Text: "parent heard: " + *r.ToolMessages()[0].Content}
	})
	f.worker("w1", 1, 2*time.Second)
	o := f.runOptions("go", "spawn_subagent")
	o.Timeout = 120 * time.Second
	out, err := app.RunAndWait(context.Background(), o)
	if err != nil || !out.OK {
		t.Fatalf("run: %v, ok=%v, stop %s", err, out.OK, out.StopReason)
	}
	if !strings.Contains(out.Answer, "its result was") || !strings.Contains(out.Answer, "more than the bus takes") ||
		strings.Contains(out.Answer, "stopped answering") || strings.Contains(out.Answer, "aaaa") {
		t.Fatalf("the parent was told %.400q", out.Answer)
	}
}
