package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"go.uber.org/goleak"

	"github.com/jazz-run/jazz/deadline"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/ledger"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/personas"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/provider/replay"
	"github.com/jazz-run/jazz/shellguard"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/mcptools"
	"github.com/jazz-run/jazz/tools/shelltool"
)

// saEvents records every event the run emits (it is the emitter's
// publisher, where the bus would be).
type saEvents struct {
	mu  sync.Mutex
	evs []messages.Event
}

func (r *saEvents) Publish(_ string, msg any, _ messages.Trace) error {
	if ev, ok := msg.(messages.Event); ok {
		r.mu.Lock()
		r.evs = append(r.evs, ev)
		r.mu.Unlock()
	}
	return nil
}

func (r *saEvents) ofType(typ string) []messages.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []messages.Event
	for _, e := range r.evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// saCall is one model call as the recorder saw it.
type saCall struct {
	firstUser  string
	start, end time.Time
	req        provider.Request
}

// saModel wraps a real model caller (replay) and records each call.
type saModel struct {
	mu    sync.Mutex
	calls []saCall
	next  ModelCaller
}

func (m *saModel) call(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	c := saCall{start: time.Now(), req: req}
	for _, msg := range req.Messages {
		if msg.Role == messages.RoleUser {
			c.firstUser = msg.Content
			break
		}
	}
	resp, err := m.next(ctx, req, onDelta)
	c.end = time.Now()
	m.mu.Lock()
	m.calls = append(m.calls, c)
	m.mu.Unlock()
	return resp, err
}

func (m *saModel) callsFor(substr string) []saCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []saCall
	for _, c := range m.calls {
		if strings.Contains(c.firstUser, substr) {
			out = append(out, c)
		}
	}
	return out
}

// saRig is one run tree: a real engine, a real gate, a replayed model.
type saRig struct {
	engine *actor.Engine
	events *saEvents
	model  *saModel
	cfg    Config
	subs   *Subagents
}

type saOptions struct {
	script   string
	tools    []string // the parent's effective tools (subset of saAllTools)
	maxDepth int
	timeout  time.Duration
	price    Pricer
	personas func(string) (personas.Persona, error)
	calls    int
	caller   ModelCaller // instead of replay
}

// saAllTools is every tool a test run knows.
func saAllTools(t testing.TB) *tools.Registry {
	note := tools.Tool{
		Name: "note", Description: "Echo a note.", Level: messages.LevelReadOnly,
		Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
		Handler: func(_ context.Context, _ *tools.Env, args json.RawMessage) tools.Result {
			var a struct{ Text string }
			_ = json.Unmarshal(args, &a)
			return tools.OK("noted: " + a.Text)
		},
	}
	// acts names the turn to change files its call was given (Env.Acts).
	acts := tools.Tool{
		Name: "acts", Description: "Name the turn to act.", Level: messages.LevelReadOnly,
		Schema: json.RawMessage(`{"type":"object"}`),
		Handler: func(_ context.Context, env *tools.Env, _ json.RawMessage) tools.Result {
			return tools.OK(fmt.Sprintf("turn %p", env.Acts))
		},
	}
	all := []tools.Tool{note, acts, SubagentTool()}
	all = append(all, shelltool.Tools(shelltool.Options{})...)
	reg, err := tools.NewRegistry(all...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func saNewRig(t testing.TB, o saOptions) *saRig {
	t.Helper()
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	rec := &saEvents{}
	em := events.NewEmitter(rec, "run-test")
	place := messages.Place{RunID: "run-test", AgentID: "top", AgentName: "tester"}

	model := &saModel{next: o.caller}
	if model.next == nil {
		p, err := replay.Parse("test", []byte(o.script))
		if err != nil {
			t.Fatalf("replay script: %v", err)
		}
		model.next = p.Chat
	}
	names := o.tools
	if names == nil {
		names = []string{"note", SubagentToolName, shelltool.Name}
	}
	// The work directory is not inside JAZZ_HOME: every program jazz
	// starts sees JAZZ_HOME as an empty mount.
	home, work := t.TempDir(), t.TempDir()
	env := &tools.Env{AgentID: "top", AgentName: "tester", JazzHome: home, WorkDir: work}
	cfg := Config{
		Place: place, Provider: "replay", Model: "test", SystemPrompt: "You are a test agent.",
		Call: model.call, Registry: saAllTools(t).Subset(names), Env: env, Events: em,
		MaxIterations: 20, Price: o.price, MaxConcurrentCalls: o.calls,
	}
	subs := NewSubagents(engine, cfg, o.maxDepth, 0)
	subs.Timeout, subs.Personas = o.timeout, o.personas
	env.Subagents = subs
	return &saRig{engine: engine, events: rec, model: model, cfg: cfg, subs: subs}
}

// run runs the top agent under the run's real root actor, as app does,
// and returns its RunFinished; ctx ending stops the run through the root,
// as a Ctrl-C does. The rig's cfg and subs are read now, so a test may
// change them after saNewRig.
func (r *saRig) run(t testing.TB, ctx context.Context, prompt string) messages.RunFinished {
	t.Helper()
	out := make(chan messages.RunFinished, 1)
	place := r.cfg.Place
	account := ledger.New(place, ledger.Pricer(r.cfg.Price))
	root := r.engine.Spawn(NewRun(RunConfig{
		Place:  place,
		Ledger: account,
		Gate: gateactor.New(gateactor.Config{
			RunID: place.RunID, Policy: messages.PolicyHighRisk, Events: r.cfg.Events, Deadline: deadline.New(0), Ctx: context.Background(),
			// The judgement lets an approved command run in its runner.
			Checks: gateactor.CommandChecks{Judge: shellguard.JudgeJSON},
		}),
		Agent: func(gate, root *actor.PID) actor.Producer {
			cfg := r.cfg
			cfg.Ctx, cfg.Gate, cfg.Root = ctx, gate, root
			// A fresh account per run, shared with the spawner, as app does.
			cfg.Ledger = account
			env := *cfg.Env
			cfg.Env = &env
			subs := *r.subs
			subs.Parent = cfg
			env.Subagents = &subs
			return New(cfg)
		},
		Request:  messages.RunRequested{Place: place, Prompt: prompt},
		Events:   r.cfg.Events,
		Finished: func(o RunOutcome) { out <- o.RunFinished },
	}), "run", actor.WithMiddleware(supervisor.Recover(place, nil)))
	defer func() { <-r.engine.Poison(root).Done() }()
	stop := ctx.Done()
	for {
		select {
		case f := <-out:
			return f
		case <-stop:
			stop = nil
			r.engine.Send(root, messages.CancelRun{Place: place, Reason: "cancelled"})
		case <-time.After(20 * time.Second):
			t.Fatal("the run did not finish")
		}
	}
}

func saScript(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type saTurn = map[string]any
type saConv = map[string]any

func saSpawn(task string, extra ...string) map[string]any {
	args := map[string]any{"task": task}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i]] = extra[i+1]
	}
	return map[string]any{"name": SubagentToolName, "arguments": args}
}

func TestSubagentFanOutRunsInParallelAndRollsUpCost(t *testing.T) {
	usage := map[string]any{"promptTokens": 100, "completionTokens": 10}
	child := func(task, answer string) saConv {
		return saConv{"match": "do " + task, "turns": []saTurn{{"text": answer, "delayMs": 300, "usage": usage}}}
	}
	script := saScript(t, map[string]any{"conversations": []saConv{
		child("alpha", "A done"), child("beta", "B done"), child("gamma", "C done"),
		{"turns": []saTurn{
			{"toolCalls": []any{saSpawn("do alpha"), saSpawn("do beta", "persona", "researcher"), saSpawn("do gamma", "name", "Gamma")}, "usage": usage},
			{"text": "{{toolResult:1}}|{{toolResult:2}}|{{toolResult:3}}", "usage": usage},
		}},
	}})
	price := func(u messages.Usage) (float64, bool) { return float64(u.TotalTokens) / 1000, true }
	r := saNewRig(t, saOptions{script: script, maxDepth: 3, price: price})
	f := r.run(t, context.Background(), "fan out")

	if !f.OK || f.Answer != "A done|B done|C done" {
		t.Fatalf("run = ok %v answer %q error %q", f.OK, f.Answer, f.Error)
	}
	// Overlap, not wall time: every child's model call started before any
	// of them ended.
	var kids []saCall
	for _, task := range []string{"do alpha", "do beta", "do gamma"} {
		c := r.model.callsFor(task)
		if len(c) != 1 {
			t.Fatalf("%s: %d model calls, want 1", task, len(c))
		}
		if !strings.HasPrefix(c[0].firstUser, "[SUB-AGENT TASK]") {
			t.Fatalf("child prompt does not open with the preamble: %q", c[0].firstUser)
		}
		kids = append(kids, c[0])
	}
	for i, a := range kids {
		for j, b := range kids {
			if i != j && !a.start.Before(b.end) {
				t.Fatalf("child %d started after child %d ended: they ran one after another", i, j)
			}
		}
	}
	// Two own calls + three children, 110 tokens each.
	if f.Usage.TotalTokens != 5*110 {
		t.Fatalf("total tokens = %d, want %d (children rolled up)", f.Usage.TotalTokens, 5*110)
	}
	if !f.CostKnown || f.CostUSD < 0.549 || f.CostUSD > 0.551 {
		t.Fatalf("cost = %v known %v, want 0.55 (own 0.22 + children 0.33)", f.CostUSD, f.CostKnown)
	}

	starts, completes := r.events.ofType(messages.EventSubagentStart), r.events.ofType(messages.EventSubagentComplete)
	if len(starts) != 3 || len(completes) != 3 {
		t.Fatalf("subagent events: %d starts, %d completes, want 3 each", len(starts), len(completes))
	}
	ids := map[string]bool{}
	for _, e := range starts {
		if e.Depth != 1 || !strings.HasPrefix(e.AgentID, "subagent-") || e.Task == "" || e.AgentName == "" || e.Persona == "" {
			t.Fatalf("subagent_start lacks fields: %+v", e)
		}
		ids[e.AgentID] = true
	}
	for _, e := range completes {
		if !ids[e.AgentID] || e.Success == nil || !*e.Success {
			t.Fatalf("subagent_complete does not match a start or failed: %+v", e)
		}
	}
	names := map[string]string{}
	for _, e := range starts {
		names[e.Task] = e.AgentName + "/" + e.Persona
	}
	if names["do beta"] != "Sub-Agent (researcher)/researcher" || names["do gamma"] != "Gamma/default" {
		t.Fatalf("names/personas = %v", names)
	}
}

func TestSubagentDepthLimit(t *testing.T) {
	refusal := func(d, max int) string {
		return fmt.Sprintf("Sub-agent nesting limit reached (depth %d of %d). Do this task yourself instead of delegating it further.", d, max)
	}
	nested := saScript(t, map[string]any{"conversations": []saConv{
		{"match": "level one", "turns": []saTurn{{"toolCalls": []any{saSpawn("level two")}}, {"text": "one saw: {{lastToolResult}}"}}},
		{"match": "level two", "turns": []saTurn{{"toolCalls": []any{saSpawn("level three")}}, {"text": "two saw: {{lastToolResult}}"}}},
		{"match": "level three", "turns": []saTurn{{"text": "three did it"}}},
		{"turns": []saTurn{{"toolCalls": []any{saSpawn("level one")}}, {"text": "{{lastToolResult}}"}}},
	}})
	tests := []struct {
		name      string
		maxDepth  int
		prefix    string
		want      string
		maxDepthS int // deepest subagent_start depth
	}{
		{"zero disables delegation", 0, "", refusal(0, 0), 0},
		{"one level", 1, "one saw: ", refusal(1, 1), 1},
		{"two levels", 2, "one saw: two saw: ", refusal(2, 2), 2},
		{"three levels reach the leaf", 3, "one saw: two saw: ", "three did it", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := saNewRig(t, saOptions{script: nested, maxDepth: tt.maxDepth})
			f := r.run(t, context.Background(), "start")
			if !strings.HasPrefix(f.Answer, tt.prefix) || !strings.Contains(f.Answer, tt.want) {
				t.Fatalf("answer = %q, want %q… containing %q", f.Answer, tt.prefix, tt.want)
			}
			deepest := 0
			for _, e := range r.events.ofType(messages.EventSubagentStart) {
				deepest = max(deepest, e.Depth)
			}
			if deepest != tt.maxDepthS {
				t.Fatalf("deepest child depth = %d, want %d (a refusal spawns no child)", deepest, tt.maxDepthS)
			}
		})
	}
}

func TestSubagentToolCeiling(t *testing.T) {
	script := saScript(t, map[string]any{"conversations": []saConv{
		{"match": "escalate", "turns": []saTurn{
			{"toolCalls": []any{map[string]any{"name": "execute_command", "arguments": map[string]any{"command": "touch pwned", "description": "try"}}}},
			{"text": "child saw: {{lastToolResult}}"},
		}},
		{"turns": []saTurn{{"toolCalls": []any{saSpawn("escalate", "persona", "coder")}}, {"text": "{{lastToolResult}}"}}},
	}})
	// The parent may read notes and delegate; it has no shell.
	r := saNewRig(t, saOptions{script: script, maxDepth: 3, tools: []string{"note", SubagentToolName}})
	f := r.run(t, context.Background(), "go")
	if !strings.Contains(f.Answer, "Unknown tool: execute_command") {
		t.Fatalf("answer = %q, want the child refused execute_command", f.Answer)
	}
	if _, err := os.Stat(filepath.Join(r.cfg.Env.Cwd(), "pwned")); err == nil {
		t.Fatal("the child ran a shell command its parent does not have")
	}
	c := r.model.callsFor("escalate")
	if len(c) == 0 {
		t.Fatal("the child never called the model")
	}
	var offered []string
	for _, s := range c[0].req.Tools {
		offered = append(offered, s.Name)
	}
	if strings.Join(offered, ",") != "note,spawn_subagent" {
		t.Fatalf("child was offered %v, want exactly the parent's tools", offered)
	}
}

// TestSubagentSharesTheTurnToAct: a sub-agent's file twins take the same
// turn as its parent's (Env.Acts), one per run tree, so no twin of the
// tree acts between another's checks and its act.
func TestSubagentSharesTheTurnToAct(t *testing.T) {
	script := saScript(t, map[string]any{"conversations": []saConv{
		{"match": "probe", "turns": []saTurn{
			{"toolCalls": []any{map[string]any{"name": "acts", "arguments": map[string]any{}}}},
			{"text": "child saw: {{lastToolResult}}"},
		}},
		{"turns": []saTurn{{"toolCalls": []any{saSpawn("probe", "persona", "coder")}}, {"text": "{{lastToolResult}}"}}},
	}})
	r := saNewRig(t, saOptions{script: script, maxDepth: 3, tools: []string{"acts", SubagentToolName}})
	turn := tools.NewTurn()
	r.cfg.Env.Acts = turn
	f := r.run(t, context.Background(), "go")
	if want := fmt.Sprintf("turn %p", turn); !strings.Contains(f.Answer, "child saw: "+want) {
		t.Fatalf("answer = %q, want the child to hold its parent's %s", f.Answer, want)
	}
}

func TestChildRegistry(t *testing.T) {
	all := saAllTools(t)
	twin := tools.TwinName(shelltool.Name)
	tests := []struct {
		name    string
		ceiling []string
		persona personas.Persona
		want    []string
	}{
		{"default inherits all, twins included", []string{"note", shelltool.Name, SubagentToolName},
			personas.Persona{Name: "default"}, []string{"note", SubagentToolName, shelltool.Name, twin}},
		{"persona list cannot exceed the ceiling", []string{"note"},
			personas.Persona{Name: "coder", Tools: []string{"note", shelltool.Name, twin}}, []string{"note"}},
		{"persona list narrows", []string{"note", shelltool.Name, SubagentToolName},
			personas.Persona{Name: "x", Tools: []string{shelltool.Name}}, []string{shelltool.Name, twin}},
		{"researcher deny drops the pair", []string{"note", shelltool.Name},
			personas.Builtins()["researcher"], []string{"note"}},
		{"a twin alone is not a way in", []string{"note"},
			personas.Persona{Name: "x", Tools: []string{twin}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ChildRegistry(all.Subset(tt.ceiling), tt.persona).Names()
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("tools = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestChildSearchToolsStaysInCeiling: search_tools in a child answers
// with the schemas of the deferred tools the child holds, never those its
// persona's list or denies left with the parent.
func TestChildSearchToolsStaysInCeiling(t *testing.T) {
	d := tools.NewDeferral()
	mcp := []tools.Tool{
		{Name: "mcp_gh_read_issue", Description: "gh read", Schema: json.RawMessage(`{"type":"object"}`), Deferral: d},
		{Name: "mcp_gh_delete_repo", Description: "gh delete", Schema: json.RawMessage(`{"type":"object","properties":{"secret_shape":{}}}`), Deferral: d},
	}
	parent, err := tools.NewRegistry(append(mcp, mcptools.SearchTool([]*tools.Tool{&mcp[0], &mcp[1]}, d))...)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []personas.Persona{
		{Name: "listed", Tools: []string{mcptools.SearchName, "mcp_gh_read_issue"}},
		{Name: "denied", Deny: []string{"mcp_gh_delete_repo"}},
	} {
		t.Run(p.Name, func(t *testing.T) {
			st, ok := ChildRegistry(parent, p).Lookup(mcptools.SearchName)
			if !ok {
				t.Fatal("the child lost search_tools")
			}
			res := st.Handler(context.Background(), nil, json.RawMessage(`{"query":"gh"}`))
			b, _ := json.Marshal(res.Value)
			if !res.Success || !strings.Contains(string(b), "mcp_gh_read_issue") || strings.Contains(string(b), "delete_repo") {
				t.Fatalf("child's search_tools answered %s", b)
			}
		})
	}
}

func TestSubagentFailuresAreResults(t *testing.T) {
	tests := []struct {
		name    string
		child   []saTurn
		timeout time.Duration
		want    []string
	}{
		{
			name: "timeout keeps partial results",
			child: []saTurn{
				{"text": "partial finding", "toolCalls": []any{map[string]any{"name": "note", "arguments": map[string]any{"text": "x"}}}},
				{"text": "never", "delayMs": 10000},
			},
			timeout: 300 * time.Millisecond,
			want:    []string{"timed out after 300ms", "partial finding"},
		},
		{
			name:  "provider keeps failing",
			child: []saTurn{{"error": map[string]any{"status": 400, "message": "bad request from test", "times": -1}}},
			want:  []string{"failed", "bad request from test"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := saScript(t, map[string]any{"conversations": []saConv{
				{"match": "risky", "turns": tt.child},
				// The parent's own usage keeps its subtree's total off 666.
				{"turns": []saTurn{{"toolCalls": []any{saSpawn("risky")}, "usage": map[string]any{"promptTokens": 1}}, {"text": "parent went on: {{lastToolResult}}"}}},
			}})
			price := func(u messages.Usage) (float64, bool) {
				if u.PromptTokens == 666 {
					panic("child pricing exploded")
				}
				return 0, false
			}
			r := saNewRig(t, saOptions{script: script, maxDepth: 3, timeout: tt.timeout, price: price})
			f := r.run(t, context.Background(), "go")
			if !f.OK || !strings.HasPrefix(f.Answer, "parent went on: ") {
				t.Fatalf("parent did not go on: ok %v answer %q error %q", f.OK, f.Answer, f.Error)
			}
			for _, w := range tt.want {
				if !strings.Contains(f.Answer, w) {
					t.Fatalf("answer = %q, want it to contain %q", f.Answer, w)
				}
			}
			completes := r.events.ofType(messages.EventSubagentComplete)
			if len(completes) != 1 || completes[0].Success == nil || *completes[0].Success {
				t.Fatalf("want one failed subagent_complete, got %+v", completes)
			}
		})
	}
}

func TestSubagentRestartSpec(t *testing.T) {
	var crashes atomic.Int32
	script := saScript(t, map[string]any{"conversations": []saConv{
		{"match": "flaky", "turns": []saTurn{{"text": "made it", "usage": map[string]any{"promptTokens": 666, "completionTokens": 1}}}},
		{"turns": []saTurn{{"toolCalls": []any{saSpawn("flaky")}}, {"text": "{{lastToolResult}}"}}},
	}})
	price := func(u messages.Usage) (float64, bool) {
		if u.PromptTokens == 666 && crashes.Add(1) == 1 {
			panic("first attempt crashes")
		}
		return 0, false
	}
	r := saNewRig(t, saOptions{script: script, maxDepth: 3, price: price})
	r.subs.Spec = supervisor.Spec{OnPanic: supervisor.Restart, OnTimeout: supervisor.ReportFailure, OnRun: supervisor.ReportFailure, OnCancel: supervisor.Stop, MaxRestarts: 1}
	f := r.run(t, context.Background(), "go")
	// The crashed attempt's spend stays in the child's account: the second
	// attempt prices 2×666 prompt tokens and does not crash.
	if attempts := len(r.model.callsFor("flaky")); f.Answer != "made it" || crashes.Load() != 1 || attempts != 2 {
		t.Fatalf("answer %q after %d attempts (%d crashes), want the restarted child's answer after 2", f.Answer, attempts, crashes.Load())
	}
	if f.Usage.PromptTokens != 2*666 {
		t.Fatalf("prompt tokens %d, want both attempts' %d", f.Usage.PromptTokens, 2*666)
	}
}

func TestSubagentBadInput(t *testing.T) {
	tests := []struct {
		name     string
		args     string
		maxDepth int
		want     string
	}{
		{"empty task", `{"task":""}`, 3, "The task is empty"},
		{"blank task", `{"task":"  \n\t "}`, 3, "The task is empty"},
		{"enormous task", `{"task":"` + strings.Repeat("x", MaxTaskChars+1) + `"}`, 3, "the limit is 100000"},
		{"unknown persona", `{"task":"t","persona":"wizard"}`, 3, `unknown persona "wizard": use one of coder, default, researcher`},
		{"negative depth", `{"task":"t"}`, -1, "maxSubagentDepth is -1"},
		{"absurd depth", `{"task":"t"}`, 1000, "maxSubagentDepth is 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := saNewRig(t, saOptions{script: `{"turns":[{"text":"x"}]}`, maxDepth: tt.maxDepth})
			res := spawnSubagent(context.Background(), r.cfg.Env, json.RawMessage(tt.args))
			if res.Success || !strings.Contains(res.Error, tt.want) {
				t.Fatalf("result = %+v, want a failure containing %q", res, tt.want)
			}
			if n := len(r.events.ofType(messages.EventSubagentStart)); n != 0 {
				t.Fatalf("%d children started on bad input", n)
			}
		})
	}
	t.Run("no parent context", func(t *testing.T) {
		res := spawnSubagent(context.Background(), &tools.Env{}, json.RawMessage(`{"task":"t"}`))
		if res.Error != NoParentContext {
			t.Fatalf("error = %q", res.Error)
		}
	})
	t.Run("schema rejects unknown fields and bad effort", func(t *testing.T) {
		reg := saAllTools(t)
		for _, args := range []string{`{}`, `{"task":"t","model":"other"}`, `{"task":"t","reasoningEffort":"max"}`} {
			if err := reg.Validate(SubagentToolName, json.RawMessage(args)); err == nil {
				t.Fatalf("schema accepted %s", args)
			}
		}
	})
	t.Run("the parent goes on", func(t *testing.T) {
		script := saScript(t, map[string]any{"turns": []saTurn{
			{"toolCalls": []any{saSpawn("x", "persona", "wizard")}}, {"text": "went on: {{lastToolResult}}"},
		}})
		r := saNewRig(t, saOptions{script: script, maxDepth: 3})
		f := r.run(t, context.Background(), "go")
		if !f.OK || !strings.Contains(f.Answer, "went on:") || !strings.Contains(f.Answer, "unknown persona") {
			t.Fatalf("run = %+v", f)
		}
	})
}

func TestTaskPreview(t *testing.T) {
	long := strings.Repeat("a", 50) + strings.Repeat("b", 77)
	tests := []struct{ in, want string }{
		{"short", "short"},
		{strings.Repeat("x", 80), strings.Repeat("x", 80)},
		{long, "..." + strings.Repeat("b", 77)},
	}
	for _, tt := range tests {
		if got := TaskPreview(tt.in); got != tt.want {
			t.Fatalf("TaskPreview(%d chars) = %q", len(tt.in), got)
		}
	}
}

func TestSubagentResultText(t *testing.T) {
	tests := []struct {
		name string
		fin  messages.RunFinished
		want string
	}{
		{"answer", messages.RunFinished{OK: true, Answer: "done", Texts: []string{"x", "done"}}, "done"},
		{"partial", messages.RunFinished{OK: true, Texts: []string{"one", "two"}}, PartialResultsHeader + "\n\none\n\ntwo"},
		{"nothing", messages.RunFinished{OK: true}, NoContentResult},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := subagentResult("kid", ChildOutcome{Finished: tt.fin})
			if !r.Success || r.Value != tt.want {
				t.Fatalf("result = %+v, want %q", r, tt.want)
			}
		})
	}
}

// saMarkerPIDs lists live processes whose command line holds marker.
func saMarkerPIDs(t testing.TB, marker string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var out []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmd), marker) {
			continue
		}
		// A zombie has exited already; only its parent's wait is missing.
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:])); len(f) > 0 && f[0] == "Z" {
				continue
			}
		}
		out = append(out, e.Name())
	}
	return out
}

func TestSubagentCancelStopsTheWholeTree(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	marker := fmt.Sprintf("%d.%d", 40+os.Getpid()%50, time.Now().UnixNano()%1000)
	sleep := map[string]any{"name": "execute_command", "arguments": map[string]any{"command": "sleep " + marker, "description": "wait"}}
	script := saScript(t, map[string]any{"conversations": []saConv{
		{"match": "grandchild", "turns": []saTurn{{"toolCalls": []any{sleep}}, {"text": "slept"}}},
		{"match": "child", "turns": []saTurn{{"toolCalls": []any{saSpawn("grandchild A"), saSpawn("grandchild B")}}, {"text": "kids done"}}},
		{"turns": []saTurn{{"toolCalls": []any{saSpawn("child")}}, {"text": "all done"}}},
	}})
	r := saNewRig(t, saOptions{script: script, maxDepth: 3})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelledAt atomic.Int64
	go func() {
		// Cancel once both grandchildren run their command; if they never
		// do, cancel anyway (so the run ends) but leave cancelledAt unset.
		defer cancel()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if len(saMarkerPIDs(t, marker)) >= 2 {
				cancelledAt.Store(time.Now().UnixNano())
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	f := r.run(t, ctx, "go")
	if f.OK {
		t.Fatalf("a cancelled run reported success: %+v", f)
	}
	if cancelledAt.Load() == 0 {
		t.Fatal("the grandchildren never started their commands")
	}
	// Within 2 s of the cancel, no command of the tree is left.
	limit := time.Unix(0, cancelledAt.Load()).Add(2 * time.Second)
	for len(saMarkerPIDs(t, marker)) > 0 {
		if time.Now().After(limit) {
			t.Fatalf("processes %v outlived the cancel by 2 s", saMarkerPIDs(t, marker))
		}
		time.Sleep(10 * time.Millisecond)
	}
	completes := r.events.ofType(messages.EventSubagentComplete)
	if len(completes) != 3 {
		t.Fatalf("%d subagent_complete events, want 3 (child and both grandchildren)", len(completes))
	}
	// The grandchildren asked the run's one gate, labelled as themselves,
	// and their tool events share the run's stream.
	asked := map[string]bool{}
	for _, e := range r.events.ofType(messages.EventApprovalRequired) {
		if e.ToolName == shelltool.Name {
			if e.Depth != 2 || !strings.HasPrefix(e.AgentID, "subagent-") || !strings.HasPrefix(e.AgentName, "Sub-Agent") {
				t.Fatalf("approval not labelled with the grandchild: %+v", e.Place)
			}
			asked[e.AgentID] = true
		}
	}
	started := 0
	for _, e := range r.events.ofType(messages.EventToolExecutionStart) {
		if e.ToolName == shelltool.Name && e.Depth == 2 {
			started++
		}
	}
	if len(asked) != 2 || started != 2 {
		t.Fatalf("gate saw %d grandchildren, %d commands started; want 2 and 2", len(asked), started)
	}
}

// saScripted is a model that calls note once per turn with the args
// argsFor(turn) returns, and records every request it gets.
func saScripted(argsFor func(turn int) string, reqs *[]provider.Request, mu *sync.Mutex) ModelCaller {
	turn := 0
	return func(_ context.Context, req provider.Request, _ func(provider.Delta)) (provider.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		turn++
		*reqs = append(*reqs, req)
		return provider.Response{Message: messages.ChatMessage{Role: messages.RoleAssistant, Content: fmt.Sprintf("turn %d", turn),
			ToolCalls: []messages.ToolCall{{ID: fmt.Sprintf("c%d", turn), Name: "note", Arguments: argsFor(turn)}}}}, nil
	}
}

func TestBudgetPressureIsEphemeral(t *testing.T) {
	var mu sync.Mutex
	var reqs []provider.Request
	r := saNewRig(t, saOptions{caller: saScripted(func(n int) string { return fmt.Sprintf(`{"text":"%d"}`, n) }, &reqs, &mu)})
	r.cfg.MaxIterations = 10
	f := r.run(t, context.Background(), "work")
	if len(reqs) != 10 || f.Iterations != 10 {
		t.Fatalf("%d requests, %d iterations; want 10", len(reqs), f.Iterations)
	}
	for i, req := range reqs {
		n := i + 1
		last := req.Messages[len(req.Messages)-1]
		var want string
		switch {
		case n >= 9:
			want = fmt.Sprintf("[BUDGET CRITICAL: Iteration %d/10 (%d%%).", n, n*10)
		case n >= 7:
			want = fmt.Sprintf("[BUDGET WARNING: Iteration %d/10 (%d%%).", n, n*10)
		}
		if want == "" {
			if strings.HasPrefix(last.Content, "[BUDGET") {
				t.Fatalf("request %d carries pressure early: %q", n, last.Content)
			}
		} else if last.Role != messages.RoleUser || !strings.HasPrefix(last.Content, want) {
			t.Fatalf("request %d ends with %q, want %q…", n, last.Content, want)
		}
		for _, m := range req.Messages[:len(req.Messages)-1] {
			if strings.HasPrefix(m.Content, "[BUDGET") {
				t.Fatalf("request %d repeats an earlier pressure message: it was stored", n)
			}
		}
	}
	for _, m := range f.Transcript {
		if strings.HasPrefix(m.Content, "[BUDGET") {
			t.Fatal("pressure message stored in the transcript")
		}
	}
}

func TestPressure(t *testing.T) {
	tests := []struct {
		i, max int
		want   string
	}{
		{6, 10, ""}, {7, 10, "[BUDGET WARNING: Iteration 7/10 (70%)."}, {9, 10, "[BUDGET CRITICAL: Iteration 9/10 (90%)."},
		{21, 30, "[BUDGET WARNING: Iteration 21/30 (70%)."}, {20, 30, ""}, {27, 30, "[BUDGET CRITICAL: Iteration 27/30 (90%)."},
		{1, 1, "[BUDGET CRITICAL: Iteration 1/1 (100%)."}, {1, 0, ""},
	}
	for _, tt := range tests {
		got := Pressure(tt.i, tt.max)
		if (tt.want == "") != (got == "") || !strings.HasPrefix(got, tt.want) {
			t.Fatalf("Pressure(%d, %d) = %q, want %q…", tt.i, tt.max, got, tt.want)
		}
	}
	if !strings.Contains(Pressure(7, 10), "stop spawning research sub-agents") || !strings.Contains(Pressure(9, 10), "NOW") {
		t.Fatal("pressure wording drifted from agent-loop.md §2")
	}
}

func TestMeltdownIsStoredAfterTheResults(t *testing.T) {
	var mu sync.Mutex
	var reqs []provider.Request
	r := saNewRig(t, saOptions{caller: saScripted(func(int) string { return `{"text":"same"}` }, &reqs, &mu)})
	r.cfg.MaxIterations = 12
	f := r.run(t, context.Background(), "loop")
	count := 0
	for i, m := range f.Transcript {
		if !strings.HasPrefix(m.Content, "[MELTDOWN DETECTED:") {
			continue
		}
		count++
		if m.Role != messages.RoleUser || i == 0 || f.Transcript[i-1].Role != messages.RoleTool {
			t.Fatalf("meltdown message at %d follows a %s message; it must come after the tool results so call/result pairs stay adjacent", i, f.Transcript[i-1].Role)
		}
		if f.Transcript[i-2].Role != messages.RoleAssistant || f.Transcript[i-2].Content != "turn 10" {
			t.Fatalf("meltdown fired after %q, want after the 10th repeat", f.Transcript[i-2].Content)
		}
	}
	if count != 1 {
		t.Fatalf("%d meltdown messages, want 1 (the window empties after one)", count)
	}
	// Stored: the next request carries it.
	found := false
	for _, m := range reqs[10].Messages {
		found = found || strings.HasPrefix(m.Content, "[MELTDOWN DETECTED:")
	}
	if !found {
		t.Fatal("the request after the meltdown does not carry the message")
	}
}

func TestMeltdown(t *testing.T) {
	rep := func(keys ...string) []string {
		var w []string
		for len(w) < 10 {
			w = append(w, keys...)
		}
		return w[:10]
	}
	var distinct []string
	for i := range 10 {
		distinct = append(distinct, fmt.Sprintf(`read_file:{"path":"f%d"}`, i))
	}
	tests := []struct {
		name   string
		window []string
		want   bool
	}{
		{"ten distinct reads are progress", distinct, false},
		{"one key repeated", rep("a"), true},
		{"three keys", rep("a", "b", "c"), true},
		{"four keys is exactly 0.4", rep("a", "b", "c", "d"), false},
		{"window not full", rep("a")[:9], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Meltdown(tt.window); got != tt.want {
				t.Fatalf("Meltdown = %v, want %v", got, tt.want)
			}
		})
	}
}

// saPeakRSS is this process's peak resident set (VmHWM), in bytes.
func saPeakRSS() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(rest), "%f", &kb)
			return kb * 1024
		}
	}
	return 0
}

func saFanOutScript(tb testing.TB, n int) string {
	calls := make([]any, n)
	for i := range calls {
		calls[i] = saSpawn(fmt.Sprintf("job %d", i))
	}
	return saScript(tb, map[string]any{"conversations": []saConv{
		{"match": "[SUB-AGENT TASK]", "turns": []saTurn{{"text": "ok", "usage": map[string]any{"promptTokens": 10, "completionTokens": 1}}}},
		{"turns": []saTurn{{"toolCalls": calls}, {"text": "all done"}}},
	}})
}

// BenchmarkSubagentFanOut100 runs one parent that spawns 100 subagents
// at once (cap raised to 100) against an instant replayed model.
func BenchmarkSubagentFanOut100(b *testing.B) {
	r := saNewRig(b, saOptions{script: saFanOutScript(b, 100), maxDepth: 3, calls: 100})
	b.ResetTimer()
	for range b.N {
		f := r.run(b, context.Background(), "fan out")
		if !f.OK || f.Usage.TotalTokens != 100*11 {
			b.Fatalf("run = ok %v tokens %d error %q", f.OK, f.Usage.TotalTokens, f.Error)
		}
	}
	b.StopTimer()
	b.ReportMetric(saPeakRSS()/(1<<20), "peak-RSS-MiB")
}

// BenchmarkIdleSubagent measures what a subagent costs while it waits on
// its model: 100 children are held inside their first model call, and
// the heap and stacks in use are compared with the run before it spawned.
// The timer runs through the whole iteration (set-up and GCs included) so
// that b.N stays small: timing only the spawn let the framework pick
// hundreds of iterations of mostly untimed work.
func BenchmarkIdleSubagent(b *testing.B) {
	const n = 100
	for range b.N {
		release := make(chan struct{})
		var waiting atomic.Int32
		instant, err := replay.Parse("bench", []byte(saFanOutScript(b, n)))
		if err != nil {
			b.Fatal(err)
		}
		caller := func(ctx context.Context, req provider.Request, d func(provider.Delta)) (provider.Response, error) {
			if strings.Contains(req.Messages[1].Content, "[SUB-AGENT TASK]") {
				waiting.Add(1)
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return instant.Chat(ctx, req, d)
		}
		r := saNewRig(b, saOptions{caller: caller, maxDepth: 3, calls: n})
		var before, during runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		done := make(chan messages.RunFinished, 1)
		go func() { done <- r.run(b, context.Background(), "fan out") }()
		for waiting.Load() < n {
			time.Sleep(time.Millisecond)
		}
		runtime.GC()
		runtime.ReadMemStats(&during)
		close(release)
		if f := <-done; !f.OK {
			b.Fatalf("run failed: %s", f.Error)
		}
		used := func(m runtime.MemStats) float64 { return float64(m.HeapAlloc + m.StackInuse) }
		b.ReportMetric((used(during)-used(before))/n, "B/idle-subagent")
		b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines-after")
	}
}

// A crash in a subagent is a bug, not a failed task: it is escalated to
// the run's root and the whole run fails, naming it, with the child's
// subagent_complete still sent.
func TestSubagentCrashFailsTheRun(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	script := saScript(t, map[string]any{"conversations": []saConv{
		// The price hook runs inside the child's Receive: this usage makes
		// it panic there, as a bug in the agent would.
		{"match": "risky", "turns": []saTurn{{"text": "about to crash", "usage": map[string]any{"promptTokens": 666, "completionTokens": 1}}}},
		{"turns": []saTurn{{"toolCalls": []any{saSpawn("risky")}}, {"text": "parent went on"}}},
	}})
	var priced atomic.Int32
	price := func(u messages.Usage) (float64, bool) {
		// Only the child's own first pricing explodes (the tree's totals
		// include its usage too).
		if u.PromptTokens >= 666 && priced.Add(1) == 1 {
			panic("child pricing exploded")
		}
		return 0, false
	}
	r := saNewRig(t, saOptions{script: script, maxDepth: 3, price: price})
	start := time.Now()
	f := r.run(t, context.Background(), "go")
	if f.OK || !strings.Contains(f.Error, "Sub-agent") || !strings.Contains(f.Error, "crashed") || !strings.Contains(f.Error, "child pricing exploded") {
		t.Fatalf("run = ok %v error %q, want a failed run naming the crashed sub-agent", f.OK, f.Error)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the run took %s to end after the crash", d)
	}
	if n := len(r.events.ofType(messages.EventSubagentComplete)); n != 1 {
		t.Fatalf("%d subagent_complete events, want 1", n)
	}
}
