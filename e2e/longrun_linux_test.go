package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jazz-run/jazz/ctxmgr"
	"github.com/jazz-run/jazz/e2e/chatserver"
)

// runMeasured runs the built binary like runJazz and also returns its
// peak resident set size in KiB (getrusage's ru_maxrss).
func runMeasured(t *testing.T, w *world, args ...string) (result, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, jazzBin, args...)
	cmd.Dir, cmd.Env = w.cwd, w.environ()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("run jazz %v: %v", args, err)
	}
	// jazz's own peak, VmHWM of its memory, polled while it runs: the
	// rusage of a child also counts the peak of the process it was forked
	// from (this test binary), which says nothing about jazz.
	peak := make(chan int64, 1)
	stop := make(chan struct{})
	go func() {
		var hwm int64
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			if v, ok := vmHWM(status); ok && v > hwm {
				hwm = v
			}
			select {
			case <-stop:
				peak <- hwm
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	close(stop)
	r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
		if !ee.Exited() {
			t.Fatalf("jazz %v died of a signal (%v)\nstderr: %s", args, ee.ProcessState, r.stderr)
		}
	} else if err != nil {
		t.Fatalf("run jazz %v: %v", args, err)
	}
	return r, <-peak
}

// vmHWM reads the VmHWM line (KiB) of a /proc/<pid>/status file.
func vmHWM(status string) (int64, bool) {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			v, err := strconv.ParseInt(f[0], 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// TestStalledServersEndTheRun: a server that accepts and never answers,
// one that sends its headers and a chunk then stalls, and one that
// streams forever each end `jazz run --json` with a failure envelope
// naming the bound that fired (first byte, idle, size), never a hang;
// the endless stream is cut at the default 32 MiB cap and jazz's memory
// stays under 100 MB.
func TestStalledServersEndTheRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		turn   chatserver.Turn
		bounds string
		want   string
	}{
		{"accepts, never answers", chatserver.Turn{Delay: time.Hour}, `{"firstByteTimeoutMs": 1000}`, "accepted the request but sent no response within"},
		{"headers, then stalls", chatserver.Turn{Stall: true}, `{"idleTimeoutMs": 1000}`, "stopped sending its response"},
		{"streams forever", chatserver.Turn{Endless: true}, `{}`, fmt.Sprintf("larger than %d bytes", 32<<20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Every attempt meets the same server (a stall is retried).
			srv := chatserver.NewFunc(func(int, chatserver.Request) chatserver.Turn { return tc.turn })
			defer srv.Close()
			w := newWorld(t, srv.URL())
			w.writeConfig(`{"maxRetries": 0, "modelCall": ` + tc.bounds + `}`)
			w.agent("x", "read_file")
			r, rss := runMeasured(t, w, "run", "--agent", "x", "--json", "--stream", "hi")
			e := wantFailure(t, r, tc.want)
			if e.Error == "" {
				t.Fatal("no error")
			}
			t.Logf("ended after %s: %s (peak RSS %d KiB)", r.took.Round(time.Millisecond), e.Error, rss)
			if rss > 100<<10 {
				t.Errorf("peak RSS %d KiB, over 100 MB", rss)
			}
		})
	}
}

// The long run's shape: a small declared window and files whose results
// are each over the clear rung's 1 000-token floor.
const (
	lrWindow       = 8000
	lrFiles        = 100
	lrIterations   = 150
	lrSecret       = "TAIL-OF-A-LONG-ARGUMENT-SUMMARIZER-MUST-NOT-SEE"
	lrAgentsMarker = "AGENTS-MD-RULE-7731"
	lrAnswer       = "Read all 100 files; every one of them says it is file number n."
)

// lrTokens is the scripted server's own count of a request's prompt: a
// token per 4 bytes of its body. Past lrWindow it answers 400, as a
// provider does.
func lrTokens(q chatserver.Request) int { return len(q.Raw) / 4 }

// longRun scripts a 150-iteration task that reads 100 files (then reads
// some again), one call carrying a long argument, one long answer text
// that pushes the history over the trim ratio, and a final answer; a
// tool-less request (the summarizer) gets a short summary.
func longRun(t *testing.T) *chatserver.Server {
	t.Helper()
	var mu sync.Mutex
	main, trimAsked := 0, false
	return chatserver.NewFunc(func(n int, q chatserver.Request) chatserver.Turn {
		mu.Lock()
		defer mu.Unlock()
		used := lrTokens(q)
		usage := map[string]any{"prompt_tokens": used, "completion_tokens": 5, "total_tokens": used + 5}
		if used > lrWindow {
			return chatserver.Turn{Status: http.StatusBadRequest,
				ErrorMessage: fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens.", lrWindow, used)}
		}
		if len(q.Tools) == 0 {
			return chatserver.Turn{Text: fmt.Sprintf("Summary %d: files were read; each says it is file number n.", n), Usage: usage}
		}
		k := main
		main++
		file := fmt.Sprintf("files/f%03d.txt", k%lrFiles+1)
		call := chatserver.Call{Name: "read_file", Arguments: chatserver.JSONArgs(map[string]string{"path": file})}
		turn := chatserver.Turn{Calls: []chatserver.Call{call}, Usage: usage}
		switch {
		case k == lrIterations-1:
			return chatserver.Turn{Text: lrAnswer, Usage: usage}
		case k == 3:
			// The model's arguments reach the summarizer cut to 200
			// characters: what is past them never does.
			turn.Calls[0].Arguments = chatserver.JSONArgs(map[string]string{"path": file, "note": strings.Repeat("n", 220) + lrSecret})
		case k >= 100 && !trimAsked && used >= lrWindow/2 && used < lrWindow*8/10:
			// Once, an answer long enough to take the history past the
			// trim ratio (0.95) once it is in, though not past the window.
			trimAsked = true
			turn.Text = strings.Repeat("x", (lrWindow*99/100-used)*4)
		}
		return turn
	})
}

// lrWorld is a world with the files, an agent with the small window and
// enough iterations.
func lrWorld(t *testing.T, srv *chatserver.Server) (*world, string) {
	t.Helper()
	w := newWorld(t, srv.URL())
	for i := 1; i <= lrFiles; i++ {
		w.file(fmt.Sprintf("files/f%03d.txt", i), fmt.Sprintf("This is file number %d. ", i)+strings.Repeat("lorem ipsum dolor sit amet ", 165))
	}
	w.file("AGENTS.md", "Project rule: "+lrAgentsMarker+".\n")
	id := w.agent("long", "read_file")
	w.setAgentConfig(id, map[string]any{"maxContextTokens": lrWindow})
	return w, id
}

// lrPairsIntact fails unless every tool message of q answers a call of
// the assistant message before it, and every call has its answer.
func lrPairsIntact(t *testing.T, i int, q chatserver.Request) {
	t.Helper()
	open := map[string]bool{}
	for j, m := range q.Messages {
		switch {
		case m.Role == "tool":
			if !open[m.ToolCallID] {
				t.Fatalf("request %d, message %d: a result for %q, whose call is not before it", i, j, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		case len(open) > 0:
			t.Fatalf("request %d, message %d: calls %v have no results", i, j, open)
		}
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
	}
	// The last message's calls are answered in the next request; no
	// request ends with an unanswered call.
	if len(open) > 0 {
		t.Fatalf("request %d ends with unanswered calls %v", i, open)
	}
}

// TestLongRunStaysInItsWindow: a 150-iteration run that reads 100 files
// with an 8 000-token window completes with the model's answer and no
// 400: the requests the server received show tool results cleared, the
// history compacted (by tool-less summarizer requests that never see an
// argument past its 200-character cut, each later one merging the prior
// summary), and trimmed, in that order, with every call/result pair
// intact; AGENTS.md is in every system message and in no summarizer
// request. Without context management the same run gets the 400.
func TestLongRunStaysInItsWindow(t *testing.T) {
	t.Parallel()
	srv := longRun(t)
	defer srv.Close()
	w, _ := lrWorld(t, srv)
	r, rss := runMeasured(t, w, "run", "--agent", "long", "--json", "--events", "usage",
		"--max-iterations", fmt.Sprint(lrIterations), "read the files and say what they say")
	e := wantSuccess(t, r)
	if e.Answer != lrAnswer {
		t.Fatalf("answer %q", e.Answer)
	}
	t.Logf("%d iterations in %s, peak RSS %d KiB", lrIterations, r.took.Round(time.Millisecond), rss)

	reqs := srv.Requests()
	var mainReqs, summarizer int
	firstCleared, firstSummary := -1, -1
	for i, q := range reqs {
		if used := lrTokens(q); used > lrWindow {
			t.Fatalf("request %d: %d tokens, over the window", i, used)
		}
		if len(q.Tools) == 0 {
			summarizer++
			if strings.Contains(string(q.Raw), lrSecret) {
				t.Fatalf("summarizer request %d carries the argument past its cut", i)
			}
			if strings.Contains(string(q.Raw), lrAgentsMarker) {
				t.Fatalf("summarizer request %d carries AGENTS.md", i)
			}
			if summarizer > 1 && !strings.Contains(string(q.Raw), "Summary ") {
				t.Errorf("summarizer request %d does not merge the prior summary", i)
			}
			continue
		}
		mainReqs++
		lrPairsIntact(t, i, q)
		if q.Messages[0].Role != "system" || q.Messages[0].Content == nil || !strings.Contains(*q.Messages[0].Content, lrAgentsMarker) {
			t.Fatalf("request %d: the system message lacks AGENTS.md", i)
		}
		raw := string(q.Raw)
		if firstCleared < 0 && strings.Contains(raw, ctxmgr.ClearedPrefix) {
			firstCleared = i
		}
		if firstSummary < 0 && strings.Contains(raw, "CONTEXT SUMMARY") {
			firstSummary = i
		}
	}
	if mainReqs != lrIterations {
		t.Errorf("%d model requests of the agent, want %d", mainReqs, lrIterations)
	}
	if firstCleared < 0 || firstSummary < 0 || summarizer == 0 {
		t.Fatalf("cleared at request %d, summary at %d, %d summarizer requests", firstCleared, firstSummary, summarizer)
	}
	if firstCleared > firstSummary {
		t.Errorf("the first compaction (request %d) came before the first clear (request %d)", firstSummary, firstCleared)
	}

	// The rungs in order, from the context_managed events.
	first := map[string]int{}
	n := 0
	for _, line := range strings.Split(r.stderr, "\n") {
		var ev struct {
			Type    string `json:"type"`
			Context *struct {
				Rung        string `json:"rung"`
				TokensSaved int    `json:"tokensSaved"`
			} `json:"context"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Type != "context_managed" || ev.Context == nil {
			continue
		}
		if _, ok := first[ev.Context.Rung]; !ok {
			first[ev.Context.Rung] = n
		}
		n++
	}
	for _, rung := range []string{"clear", "compact", "trim"} {
		if _, ok := first[rung]; !ok {
			t.Fatalf("no %s event among %d context_managed events: %v", rung, n, first)
		}
	}
	if !(first["clear"] < first["compact"] && first["compact"] < first["trim"]) {
		t.Errorf("rungs out of order: %v", first)
	}
	t.Logf("%d summarizer requests, %d context_managed events, first of each: %v", summarizer, n, first)

	t.Run("without context management the provider answers 400", func(t *testing.T) {
		srv := longRun(t)
		defer srv.Close()
		w, _ := lrWorld(t, srv)
		w.env = append(w.env, "JAZZ_CONTEXT_MANAGEMENT=off")
		r := w.exec("", "run", "--agent", "long", "--json", "--max-iterations", fmt.Sprint(lrIterations), "read the files and say what they say")
		wantFailure(t, r, "maximum context length")
	})
}
