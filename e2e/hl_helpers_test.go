package e2e

// Helpers of the headless-contract tests (prefix hl): the jazz binary,
// a JAZZ_HOME with agents, a run of the binary, and a fake Chat
// Completions server speaking the real wire format (JSON and SSE).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// hlJazz returns the path of a jazz binary built from this checkout.
func hlJazz(t testing.TB) string {
	t.Helper()
	p := os.Getenv("JAZZ_E2E_BIN") // set by TestMain once it built the binary
	if p == "" {
		t.Fatal("JAZZ_E2E_BIN is not set: the package's TestMain builds the binary")
	}
	return p
}

// hlEnv is a JAZZ_HOME, a HOME and a working directory of one test.
type hlEnv struct {
	t     testing.TB
	bin   string
	home  string // JAZZ_HOME
	user  string // HOME
	cwd   string
	extra []string
}

func hlNewEnv(t testing.TB) *hlEnv {
	t.Helper()
	root := t.TempDir()
	e := &hlEnv{t: t, bin: hlJazz(t), home: filepath.Join(root, "jazz-home"), user: filepath.Join(root, "user"), cwd: filepath.Join(root, "work")}
	for _, d := range []string{e.home, e.user, e.cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// environ is a clean environment: nothing of the test runner's leaks in
// (CI, NO_COLOR, API keys).
func (e *hlEnv) environ() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.user, "JAZZ_HOME=" + e.home, "JAZZ_OFFLINE=1"}
	return append(env, e.extra...)
}

// writeConfig writes JAZZ_HOME/config.json.
func (e *hlEnv) writeConfig(cfg map[string]any) {
	e.t.Helper()
	data, err := json.Marshal(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), data, 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// writeFile writes a file under the working directory and returns its path.
func (e *hlEnv) writeFile(name, content string) string {
	e.t.Helper()
	p := filepath.Join(e.cwd, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// agent creates an agent and returns its id.
func (e *hlEnv) agent(name, model string, tools ...string) string {
	e.t.Helper()
	args := []string{"agent", "create", "--name", name, "--model", model}
	if len(tools) > 0 {
		args = append(args, "--tools", strings.Join(tools, ","))
	}
	r := e.run(hlRunOpts{args: args})
	if r.code != 0 {
		e.t.Fatalf("agent create: exit %d\n%s", r.code, r.stderr)
	}
	return strings.TrimSpace(r.stdout)
}

// replayAgent writes a replay script and creates an agent playing it.
func (e *hlEnv) replayAgent(name string, script any, tools ...string) string {
	e.t.Helper()
	data, err := json.Marshal(script)
	if err != nil {
		e.t.Fatal(err)
	}
	p := filepath.Join(e.home, name+".replay.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return e.agent(name, "replay/"+p, tools...)
}

type hlRunOpts struct {
	args  []string
	stdin string
	// stdinReader, when set, is stdin instead of the stdin string; an
	// *os.File is handed to the child and closed here after the start.
	stdinReader io.Reader
	// onStderr, when set, gets each stderr line as it is written.
	onStderr func(line string)
	env      []string
	timeout  time.Duration
}

type hlResult struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// run starts the binary and waits for it.
func (e *hlEnv) run(o hlRunOpts) hlResult {
	e.t.Helper()
	p := e.start(o)
	return p.wait(o.timeout)
}

// hlProc is a started jazz process.
type hlProc struct {
	t              testing.TB
	cmd            *exec.Cmd
	stdout, stderr *hlBuffer
	done           chan struct{} // stderr fully read
	start          time.Time
}

// start launches the binary; stderr is read line by line as it comes.
func (e *hlEnv) start(o hlRunOpts) *hlProc {
	e.t.Helper()
	cmd := exec.Command(e.bin, o.args...)
	cmd.Dir = e.cwd
	cmd.Env = append(e.environ(), o.env...)
	if o.stdinReader != nil {
		cmd.Stdin = o.stdinReader
	} else {
		cmd.Stdin = strings.NewReader(o.stdin)
	}
	p := &hlProc{t: e.t, cmd: cmd, stdout: &hlBuffer{}, stderr: &hlBuffer{}, done: make(chan struct{})}
	cmd.Stdout = p.stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	if f, ok := o.stdinReader.(*os.File); ok {
		_ = f.Close() // the child has its own copy
	}
	p.start = time.Now()
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			_, _ = p.stderr.Write(append(sc.Bytes(), '\n'))
			if o.onStderr != nil {
				o.onStderr(sc.Text())
			}
		}
	}()
	return p
}

// wait waits for the process (killing it after timeout, default 60 s).
func (p *hlProc) wait(timeout time.Duration) hlResult {
	p.t.Helper()
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	timer := time.AfterFunc(timeout, func() { _ = p.cmd.Process.Kill() })
	<-p.done // stderr must be drained before Wait closes the pipe
	err := p.cmd.Wait()
	killed := !timer.Stop()
	r := hlResult{stdout: p.stdout.String(), stderr: p.stderr.String(), elapsed: time.Since(p.start)}
	if killed {
		p.t.Fatalf("jazz %v did not finish within %v\nstderr:\n%s", p.cmd.Args[1:], timeout, r.stderr)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		p.t.Fatal(err)
	}
	return r
}

// hlBuffer is a goroutine-safe bytes.Buffer whose readers can wait for
// what is written.
type hlBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed by the next Write
}

func (b *hlBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written != nil {
		close(b.written)
		b.written = nil
	}
	return b.b.Write(p)
}

// waitFor reports whether cond came to hold on the text written so far
// within d. It looks again on each write, never on a timer.
func (b *hlBuffer) waitFor(d time.Duration, cond func(text string) bool) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		text := b.b.String()
		if b.written == nil {
			b.written = make(chan struct{})
		}
		next := b.written
		b.mu.Unlock()
		if cond(text) {
			return true
		}
		select {
		case <-next:
		case <-deadline.C:
			return cond(b.String())
		}
	}
}

func (b *hlBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// hlChatReq is the part of a Chat Completions request the tests read.
type hlChatReq struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// text is message i's content as a string.
func (r hlChatReq) text(i int) string {
	var s string
	_ = json.Unmarshal(r.Messages[i].Content, &s)
	return s
}

// userTexts lists the user messages in order.
func (r hlChatReq) userTexts() []string {
	var out []string
	for i, m := range r.Messages {
		if m.Role == "user" {
			out = append(out, r.text(i))
		}
	}
	return out
}

func (r hlChatReq) toolNames() []string {
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// hlCall is a tool call the fake model makes.
type hlCall struct{ Name, Args string }

// hlReply is what the fake model answers to one request.
type hlReply struct {
	Status     int    // non-zero: an HTTP error with ErrMessage
	ErrMessage string // body message of the error
	Content    string
	Chunks     []string // streamed content pieces (default: Content whole)
	Calls      []hlCall
	Prompt     int
	Completion int
}

// hlChat is a fake OpenAI Chat Completions server.
type hlChat struct {
	srv   *httptest.Server
	mu    sync.Mutex
	reqs  []hlChatReq
	reply func(n int, req hlChatReq) hlReply
}

func hlNewChat(t testing.TB, reply func(n int, req hlChatReq) hlReply) *hlChat {
	c := &hlChat{reply: reply}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *hlChat) requests() []hlChatReq {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]hlChatReq(nil), c.reqs...)
}

func (c *hlChat) serve(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	var req hlChatReq
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	n := len(c.reqs)
	c.reqs = append(c.reqs, req)
	c.mu.Unlock()
	rep := c.reply(n, req)
	if rep.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"test_error"}}`, rep.ErrMessage)
		return
	}
	usage := map[string]int{"prompt_tokens": rep.Prompt, "completion_tokens": rep.Completion, "total_tokens": rep.Prompt + rep.Completion}
	var calls []map[string]any
	for i, tc := range rep.Calls {
		calls = append(calls, map[string]any{"index": i, "id": fmt.Sprintf("call_%d_%d", n, i), "type": "function",
			"function": map[string]string{"name": tc.Name, "arguments": tc.Args}})
	}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": rep.Content}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	bw := bufio.NewWriterSize(w, 64*1024)
	send := func(v any) {
		data, _ := json.Marshal(v)
		fmt.Fprintf(bw, "data: %s\n\n", data)
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion.chunk", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	pieces := rep.Chunks
	if pieces == nil && rep.Content != "" {
		pieces = []string{rep.Content}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, p := range pieces {
		send(chunk(map[string]any{"content": p}, nil))
	}
	if len(calls) > 0 {
		send(chunk(map[string]any{"tool_calls": calls}, nil))
	}
	send(chunk(map[string]any{}, "stop"))
	send(map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion.chunk", "model": req.Model, "choices": []any{}, "usage": usage})
	fmt.Fprint(bw, "data: [DONE]\n\n")
	_ = bw.Flush()
}

// openAIAgent points JAZZ_HOME's config at the fake server (priced at
// input 1 $/M, output 2 $/M unless unpriced) and creates an agent on it.
func (e *hlEnv) openAIAgent(c *hlChat, name string, priced bool, extraCfg map[string]any, tools ...string) string {
	e.t.Helper()
	cfg := map[string]any{
		"llm":        map[string]any{"openai": map[string]any{"base_url": c.srv.URL + "/v1", "api_key": "sk-test"}},
		"maxRetries": 2,
	}
	if priced {
		cfg["pricing"] = map[string]any{"openai/test-model": map[string]any{"input": 1.0, "output": 2.0}}
	}
	for k, v := range extraCfg {
		cfg[k] = v
	}
	e.writeConfig(cfg)
	model := "openai/test-model"
	if !priced {
		model = "openai/unpriced-model-x"
	}
	return e.agent(name, model, tools...)
}

// hlEnvelope is the --json result.
type hlEnvelope struct {
	OK         *bool    `json:"ok"`
	Answer     string   `json:"answer"`
	Error      string   `json:"error"`
	StopReason string   `json:"stopReason"`
	CostUSD    *float64 `json:"costUSD"`
	CostKnown  *bool    `json:"costKnown"`
	TokenUsage *struct {
		PromptTokens     int `json:"promptTokens"`
		CompletionTokens int `json:"completionTokens"`
		TotalTokens      int `json:"totalTokens"`
	} `json:"tokenUsage"`
	ToolCalls []struct {
		ID, Name, Arguments string
	} `json:"toolCalls"`
	Declined []struct {
		ID, Name, Arguments string
	} `json:"declinedToolCalls"`
}

// envelope parses stdout as exactly one single-line JSON object.
func (r hlResult) envelope(t testing.TB) hlEnvelope {
	t.Helper()
	out := r.stdout
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("stdout is not exactly one line:\n%q\nstderr:\n%s", out, r.stderr)
	}
	var env hlEnvelope
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if env.OK == nil || env.CostUSD == nil {
		t.Fatalf("envelope lacks ok or costUSD: %s", out)
	}
	return env
}

// events parses the NDJSON lines of stderr (lines that are JSON objects).
func (r hlResult) events(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(r.stderr, "\n") {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stderr line is not JSON: %v\n%s", err, l)
		}
		out = append(out, m)
	}
	return out
}

func hlOfType(evs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if e["type"] == typ {
			out = append(out, e)
		}
	}
	return out
}
