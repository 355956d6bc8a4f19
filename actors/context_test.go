package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/ctxmgr"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/sessiontools"
)

// windowModel is a model with a context window: it counts a request's
// tokens (4 bytes a token plus 4 a message, as a tokenizer would, roughly)
// and refuses one over the window with a 400, as providers do. It asks for
// reads read_file calls, one per turn, then answers; a tool-less request
// with the summarizer's instructions gets a summary.
type windowModel struct {
	mu         sync.Mutex
	window     int
	reads      int
	n          int
	reqs       []provider.Request
	summarized int
	// also asks, at turn alsoAt, for this call beside its read.
	alsoAt int
	also   string
}

func reqTokens(req provider.Request) int {
	n := 0
	for _, m := range req.Messages {
		n += 4 + ctxmgr.Bytes(m)/4
	}
	for _, t := range req.Tools {
		n += (len(t.Name) + len(t.Description) + len(t.Parameters)) / 4
	}
	return n
}

func (w *windowModel) call(_ context.Context, req provider.Request, _ func(provider.Delta)) (provider.Response, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reqs = append(w.reqs, req)
	t := reqTokens(req)
	if t > w.window {
		return provider.Response{}, provider.ClassifyStatus(400, fmt.Sprintf("This model's maximum context length is %d tokens; your request has %d", w.window, t))
	}
	usage := messages.Usage{PromptTokens: t, CompletionTokens: 5, TotalTokens: t + 5}
	if len(req.Tools) == 0 && len(req.Messages) > 0 && req.Messages[0].Content == ctxmgr.SummarizerSystem {
		w.summarized++
		return provider.Response{Message: messages.ChatMessage{Role: messages.RoleAssistant, Content: fmt.Sprintf("SUMMARY %d: read the files", w.summarized)},
			Usage: usage, UsageReported: true}, nil
	}
	w.n++
	if w.n <= w.reads {
		calls := []messages.ToolCall{{ID: fmt.Sprintf("c%d", w.n), Name: "read", Arguments: fmt.Sprintf(`{"n":%d}`, w.n)}}
		if w.n == w.alsoAt {
			calls = append(calls, messages.ToolCall{ID: "extra", Name: w.also, Arguments: "{}"})
		}
		return provider.Response{Message: messages.ChatMessage{Role: messages.RoleAssistant, ToolCalls: calls}, Usage: usage, UsageReported: true}, nil
	}
	return provider.Response{Message: messages.ChatMessage{Role: messages.RoleAssistant, Content: "all files read"}, Usage: usage, UsageReported: true}, nil
}

func (w *windowModel) requests() []provider.Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]provider.Request(nil), w.reqs...)
}

func readTool(size int) tools.Tool {
	return sizedRead(func(int) int { return size })
}

// sizedRead is a read tool whose n-th result is size(n) bytes.
func sizedRead(size func(n int) int) tools.Tool {
	return tool("read", func(_ context.Context, _ *tools.Env, args json.RawMessage) tools.Result {
		var a struct{ N int }
		_ = json.Unmarshal(args, &a)
		return tools.OK(string(args) + strings.Repeat("x", size(a.N)))
	})
}

// mixed alternates results worth clearing (~1,100 tokens) with small ones.
func mixed(n int) int {
	if n%2 == 1 {
		return 4400
	}
	return 400
}

// runCfg runs one agent with cfg (Place, Ctx and Env filled in).
func runCfg(tb testing.TB, cfg actors.Config) messages.RunFinished {
	tb.Helper()
	return runPrompt(tb, cfg, "read every file")
}

// runPrompt runs one agent with cfg (Place, Ctx and Env filled in) on a
// real engine, asked prompt, until it reports RunFinished.
func runPrompt(tb testing.TB, cfg actors.Config, prompt string) messages.RunFinished {
	tb.Helper()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	place := messages.Place{RunID: "run-test", AgentID: "a1", AgentName: "tester"}
	cfg.Place, cfg.Ctx = place, ctx
	if cfg.Env == nil {
		cfg.Env = &tools.Env{WorkDir: tb.TempDir()}
	}
	done := make(chan messages.RunFinished, 1)
	owner := e.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started:
			pid := c.SpawnChild(actors.New(cfg), "agent", actor.WithMiddleware(supervisor.Recover(place, nil)))
			c.Send(pid, messages.RunRequested{Place: place, Prompt: prompt})
		case messages.RunFinished:
			done <- m
		case messages.ActorFailed:
			done <- messages.RunFinished{Error: "agent crashed: " + m.Reason}
		}
	}, "owner")
	defer func() { <-e.Poison(owner).Done() }()
	select {
	case f := <-done:
		return f
	case <-time.After(30 * time.Second):
		tb.Fatal("the run did not finish within 30s")
	}
	return messages.RunFinished{}
}

func contextCfg(m *windowModel, budget int) *actors.ContextConfig {
	return &actors.ContextConfig{Settings: ctxmgr.Settings{Budget: budget, Warn: 0.7, Compact: 0.8}, Summarize: m.call, SummarizerModel: "m"}
}

// TestContextRungsKeepALongRunUnderTheWindow: forty reads, every other
// one ~1,100 tokens, in an 8,000-token window finish, where the same run without
// context management gets the provider's 400; the requests show clearing,
// a compaction with a tool-less summarizer, and pairs that always hold.
func TestContextRungsKeepALongRunUnderTheWindow(t *testing.T) {
	const window, reads = 8000, 40
	t.Run("unmanaged", func(t *testing.T) {
		m := &windowModel{window: window, reads: reads}
		f := runCfg(t, actors.Config{Model: "m", Call: m.call, Registry: mustRegistry(t, sizedRead(mixed)), MaxIterations: 100})
		if f.OK || !strings.Contains(f.Error, "maximum context length") {
			t.Fatalf("without context management the run must hit the 400: %+v", f.Error)
		}
	})
	m := &windowModel{window: window, reads: reads}
	f := runCfg(t, actors.Config{Model: "m", Call: m.call, Registry: mustRegistry(t, sizedRead(mixed)), MaxIterations: 100, Context: contextCfg(m, window)})
	if !f.OK || f.Answer != "all files read" {
		t.Fatalf("managed run: %+v", f.Error)
	}
	cleared, summaries := false, false
	for i, req := range m.requests() {
		if reqTokens(req) > window {
			t.Fatalf("request %d is over the window", i)
		}
		if len(req.Tools) == 0 {
			if req.Messages[0].Content != ctxmgr.SummarizerSystem || len(req.Messages) != 2 {
				t.Fatalf("summarizer request %d: %+v", i, req.Messages[0])
			}
			continue
		}
		for _, msg := range req.Messages {
			cleared = cleared || strings.HasPrefix(msg.Content, ctxmgr.ClearedPrefix)
			summaries = summaries || msg.Kind == messages.KindSummary
		}
		pairsHold(t, i, req.Messages)
		task := false
		for _, msg := range req.Messages[:min(3, len(req.Messages))] {
			task = task || msg.Content == "read every file"
		}
		if !task {
			t.Fatalf("request %d lost the task: %+v", i, req.Messages[0])
		}
	}
	if !cleared || !summaries || m.summarized == 0 {
		t.Errorf("cleared %v, summary %v, summarizer calls %d", cleared, summaries, m.summarized)
	}
}

// pairsHold fails unless every tool message answers a call of the
// assistant message before its run and every call is answered.
func pairsHold(t *testing.T, n int, msgs []messages.ChatMessage) {
	t.Helper()
	for i := 0; i < len(msgs); i++ {
		if msgs[i].Role == messages.RoleTool {
			t.Fatalf("request %d: orphan result %s at %d", n, msgs[i].ToolCallID, i)
		}
		if msgs[i].Role != messages.RoleAssistant || len(msgs[i].ToolCalls) == 0 {
			continue
		}
		open := map[string]bool{}
		for _, c := range msgs[i].ToolCalls {
			open[c.ID] = true
		}
		for i+1 < len(msgs) && msgs[i+1].Role == messages.RoleTool {
			i++
			delete(open, msgs[i].ToolCallID)
		}
		if len(open) > 0 {
			t.Fatalf("request %d: calls without results %v", n, open)
		}
	}
}

// TestSummarizeContextTool: the model compacts on purpose; the next
// request starts with the system prompt and the summary, and the batch
// that asked for it keeps its results.
func TestSummarizeContextTool(t *testing.T) {
	m := &windowModel{window: 1 << 20, reads: 12, alsoAt: 10, also: sessiontools.SummarizeContext}
	reg := mustRegistry(t, append(sessiontools.Tools(), readTool(2000))...)
	f := runCfg(t, actors.Config{Model: "m", Call: m.call, Registry: reg, MaxIterations: 100, Context: contextCfg(m, 10000), SystemPrompt: "sys"})
	if !f.OK {
		t.Fatalf("run: %s", f.Error)
	}
	var result string
	for _, msg := range f.Transcript {
		if msg.ToolCallID == "extra" {
			result = msg.Content
		}
	}
	if !strings.HasPrefix(result, "Context compacted from ") {
		t.Fatalf("summarize_context said %q", result)
	}
	reqs := m.requests()
	var next provider.Request
	for i, r := range reqs {
		if len(r.Tools) == 0 {
			next = reqs[i+1]
			break
		}
	}
	if len(next.Messages) < 3 || next.Messages[0].Content != "sys" || next.Messages[1].Kind != messages.KindSummary ||
		!strings.Contains(next.Messages[1].Content, "SUMMARY 1") {
		t.Fatalf("after the compaction: %+v", next.Messages[:3])
	}
	pairsHold(t, -1, next.Messages)
	last := next.Messages[len(next.Messages)-1]
	if last.Role != messages.RoleTool {
		t.Errorf("the batch that compacted must keep its results: %+v", last)
	}
}

// TestTrimAlone: with no summarizer, trimming alone keeps every request
// under the window, the task and the pairs intact.
func TestTrimAlone(t *testing.T) {
	m := &windowModel{window: 8000, reads: 30}
	cc := contextCfg(m, 8000)
	cc.Summarize = nil
	f := runCfg(t, actors.Config{Model: "m", Call: m.call, Registry: mustRegistry(t, readTool(6000)), MaxIterations: 100, Context: cc, SystemPrompt: "sys"})
	if !f.OK {
		t.Fatalf("run: %s", f.Error)
	}
	reqs := m.requests()
	for i, r := range reqs {
		if reqTokens(r) > 8000 {
			t.Fatalf("request %d over the window", i)
		}
		pairsHold(t, i, r.Messages)
		if r.Messages[0].Content != "sys" || r.Messages[1].Content != "read every file" {
			t.Fatalf("request %d: head %q %q", i, r.Messages[0].Content, r.Messages[1].Content)
		}
	}
	if shrank := len(reqs[len(reqs)-1].Messages) < 2*30; !shrank || m.summarized != 0 {
		t.Errorf("trimmed %v, summarizer calls %d", shrank, m.summarized)
	}
}
