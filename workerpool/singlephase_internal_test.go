package workerpool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/sessiontools"
	"github.com/jazz-run/jazz/workstore"
)

// singlePhaseRegistry is a child's ceiling with single-phase gated
// tools: the session tools (manage_todos low-risk, list_todos
// read-only), spawn_subagent, and a high-risk tool that describes its
// call (as http_request does) whose handler does nothing.
func singlePhaseRegistry(t *testing.T) *tools.Registry {
	t.Helper()
	all := sessiontools.Tools()
	all = append(all, actors.SubagentTool(), tools.Tool{Name: "notify", Level: messages.LevelHighRisk,
		Schema:   json.RawMessage(`{"type":"object","required":["to"],"properties":{"to":{"type":"string"}},"additionalProperties":false}`),
		Describe: func(args json.RawMessage) (string, error) { return "Notify " + string(args), nil },
		Handler:  func(context.Context, *tools.Env, json.RawMessage) tools.Result { return tools.OK("sent") }})
	reg, err := tools.NewRegistry(all...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// check takes a single-phase gated call as the tool actor asks for it
// (the tool itself, with the call's arguments) and tells it to the
// person in this runner's words: its own tool's message from the
// arguments that run, the arguments shown being those, whatever the
// worker wrote. It refuses what a tool actor never asks: another tool to
// run, arguments the schema refuses or that read two ways, a read-only
// tool, a tool outside the ceiling; and spawn_subagent, which a worker's
// agent may not use.
func TestCheckSinglePhase(t *testing.T) {
	reg := singlePhaseRegistry(t)
	me := messages.Place{RunID: "r", AgentID: "a-1", AgentName: "child", ParentAgentID: "a", Depth: 1}
	rt := &remote{cfg: actors.Config{Place: me, Registry: reg, Env: &tools.Env{Secrets: secrets.NewSet([]string{"sk-root-secret-123456"})}},
		worker: "UW"}
	todos := json.RawMessage(`{"todos":[{"content":"plan sk-root-secret-123456","status":"pending"}]}`)
	req := func(tool, exec string, args json.RawMessage) messages.ApprovalRequired {
		return messages.ApprovalRequired{Place: me, ToolCallID: "c1", ToolName: tool, ExecuteToolName: exec, ExecuteArgs: args,
			RiskLevel: messages.LevelReadOnly, Message: "nothing happens", PreviewDiff: "no diff", Arguments: json.RawMessage(`{"todos":[]}`)}
	}
	got, why := rt.check(req("manage_todos", "manage_todos", todos))
	if why != "" {
		t.Fatal(why)
	}
	want := "About to run manage_todos with arguments: " + strings.ReplaceAll(string(todos), "sk-root-secret-123456", secrets.Placeholder)
	if got.Message != want || got.PreviewDiff != "" || string(got.Arguments) != string(todos) || got.RiskLevel != messages.LevelLowRisk {
		t.Fatalf("manage_todos is told as message %q, diff %q, arguments %s, tier %s; want %q, none, what runs, low-risk",
			got.Message, got.PreviewDiff, got.Arguments, got.RiskLevel, want)
	}
	if got, why = rt.check(req("notify", "notify", json.RawMessage(`{"to":"ops"}`))); why != "" || got.Message != `Notify {"to":"ops"}` ||
		got.RiskLevel != messages.LevelHighRisk {
		t.Fatalf("notify: %q, message %q, tier %s", why, got.Message, got.RiskLevel)
	}
	for _, c := range []struct {
		name string
		req  messages.ApprovalRequired
		why  string
	}{
		{"another tool to run", req("manage_todos", "execute_write_file", todos), "runs only itself"},
		{"no tool to run", req("manage_todos", "", todos), "runs only itself"},
		{"the schema refuses", req("manage_todos", "manage_todos", json.RawMessage(`{"todos":[{"content":"x","status":"bogus"}]}`)), "invalid approval request"},
		{"a key twice", req("manage_todos", "manage_todos", json.RawMessage(`{"todos":[],"Todos":[{"content":"x","status":"pending"}]}`)), "appears twice"},
		{"not an object", req("manage_todos", "manage_todos", json.RawMessage(`[1]`)), "not one JSON object"},
		{"no arguments", req("manage_todos", "manage_todos", nil), "not one JSON object"},
		{"read-only", req("list_todos", "list_todos", json.RawMessage(`{}`)), "read-only"},
		{"outside the ceiling", req("update_everything", "update_everything", json.RawMessage(`{}`)), "is not a tool this agent was given"},
		{"nested spawn", req("spawn_subagent", "spawn_subagent", json.RawMessage(`{"task":"help"}`)), "cannot start sub-agents of its own"},
	} {
		if _, why := rt.check(c.req); !strings.Contains(why, c.why) {
			t.Errorf("%s: refusal %q, want one saying %q", c.name, why, c.why)
		}
	}
}

// TestARemoteSinglePhaseApprovalIsForThatCallOnly: through a real
// server, a worker that holds a task asks the run's gate (unattended,
// low-risk policy) for single-phase calls. The gate decides them as it
// decides the same calls of a local child (manage_todos approved by the
// policy, a high-risk one declined), and each decision names the call it
// decided; asking again under a decided number gets that decision only
// for that same call: with other arguments or another tool it is
// refused. The refusals of check (outside the ceiling, another tool to
// run, a nested spawn) come back as refusals.
func TestARemoteSinglePhaseApprovalIsForThatCallOnly(t *testing.T) {
	w, sayAs := newHostileWorker(t, gateactor.Config{RunID: "run-single", Policy: messages.PolicyLowRisk}, singlePhaseRegistry(t))
	ctx, tk, out, decisions, place := w.ctx, w.task, w.out, w.decisions, w.place
	say := func(kind string, v any) { sayAs(tk.id, kind, v) }
	// ask sends a request and returns what the runner sent for it: the
	// decision, and copies of it (a request is heard on the server's
	// subject and again from the stream, and a copy is answered too).
	ask := func(kind string, seq int, r messages.ApprovalRequired) []messages.WorkDecision {
		t.Helper()
		say(kind, messages.WorkApproval{TaskID: tk.id, Attempt: 1, Seq: seq, Required: r})
		var got []messages.WorkDecision
		var settle <-chan time.Time
		for waiting := true; waiting; {
			select {
			case wd := <-decisions:
				if wd.Seq == seq {
					got = append(got, wd)
					settle = time.After(300 * time.Millisecond)
				}
			case <-settle:
				waiting = false
			case <-ctx.Done():
				waiting = false
			}
		}
		if len(got) == 0 {
			t.Fatalf("request %d (%s): no decision came", seq, r.ToolName)
		}
		return got
	}
	// approvedFor is the approval among ds that names the call action,
	// which the worker's gate would run.
	approvedFor := func(ds []messages.WorkDecision, action string) (messages.WorkDecision, bool) {
		for _, d := range ds {
			if d.Decision.Approved && d.Action == action {
				return d, true
			}
		}
		return messages.WorkDecision{}, false
	}
	refused := func(ds []messages.WorkDecision, action, why string) bool {
		for _, d := range ds {
			if !d.Decision.Approved && d.Action == action && strings.Contains(d.Decision.Note, why) {
				return true
			}
		}
		return false
	}
	say(messages.WorkKindClaim, messages.WorkClaimed{TaskID: tk.id, Attempt: 1, LeaseMs: 10_000})
	call := func(id, tool string, args string) messages.ApprovalRequired {
		return messages.ApprovalRequired{Place: place, ToolCallID: id, ToolName: tool, RiskLevel: messages.LevelReadOnly,
			Message: "worker's words", ExecuteToolName: tool, ExecuteArgs: json.RawMessage(args)}
	}
	// The tool actor's own spacing: the digest reads the call, not its bytes.
	todos := call("c1", "manage_todos", `{ "todos": [ {"content": "a <b> & c", "status": "pending"} ] }`)
	ds := ask(messages.WorkKindApproval, 1, todos)
	if wd, ok := approvedFor(ds, actionOf(todos)); !ok || wd.Decision.DecidedBy != messages.DecidedByPolicy {
		t.Fatalf("the low-risk manage_todos: %+v, want approved by the policy, naming the call (%s)", ds, actionOf(todos))
	}
	// Asked again as it was (its decision was lost): the same decision.
	if _, ok := approvedFor(ask(messages.WorkKindAsk, 1, todos), actionOf(todos)); !ok {
		t.Fatal("the same request asked again was not answered with its approval")
	}
	// Asked again under that number for something else: refused, each.
	changed := []messages.ApprovalRequired{
		call("c1", "manage_todos", `{"todos":[{"content":"rm -rf everything","status":"pending"}]}`),
		call("c1", "update_task_state", `{"goal":"x"}`),
		call("c9", "manage_todos", string(todos.ExecuteArgs)),
	}
	for _, r := range changed {
		ds := ask(messages.WorkKindAsk, 1, r)
		if d, ok := approvedFor(ds, actionOf(r)); ok {
			t.Fatalf("another call (%s %s) got request 1's approval: %+v", r.ToolName, r.ExecuteArgs, d)
		}
		if !refused(ds, actionOf(r), "another tool or other arguments") {
			t.Fatalf("another call (%s %s) under request 1's number was not refused: %+v", r.ToolName, r.ExecuteArgs, ds)
		}
	}
	// The same call as a new request is a new decision: the gate's.
	if _, ok := approvedFor(ask(messages.WorkKindApproval, 2, changed[0]), actionOf(changed[0])); !ok {
		t.Fatal("a new low-risk manage_todos was not approved")
	}
	// A high-risk single-phase call is declined unattended, as a local one.
	notify := call("c3", "notify", `{"to":"ops"}`)
	if d, ok := approvedFor(ask(messages.WorkKindApproval, 3, notify), actionOf(notify)); ok {
		t.Fatalf("a high-risk call was approved under the low-risk policy: %+v", d)
	}
	for i, c := range []struct {
		req messages.ApprovalRequired
		why string
	}{
		{call("c4", "spawn_subagent", `{"task":"help"}`), "cannot start sub-agents of its own"},
		{call("c5", "write_file", `{"path":"/w/a","content":"x"}`), "is not a tool this agent was given"},
		{messages.ApprovalRequired{Place: place, ToolCallID: "c6", ToolName: "manage_todos", ExecuteToolName: "notify",
			ExecuteArgs: json.RawMessage(`{"to":"ops"}`)}, "runs only itself"},
	} {
		if ds := ask(messages.WorkKindApproval, 4+i, c.req); !refused(ds, actionOf(c.req), c.why) {
			t.Errorf("%s: %+v, want refused saying %q", c.req.ToolName, ds, c.why)
		}
	}
	say(messages.WorkKindResult, messages.WorkResult{TaskID: tk.id, Attempt: 1, Finished: messages.RunFinished{OK: true}})
	select {
	case <-out:
	case <-ctx.Done():
		t.Fatal("the child did not end")
	}
}

// TestWorkerGateRunsOnlyTheCallApproved: the worker's stand-in gate
// hands its call actor an approval only when the runner's decision names
// that call (WorkDecision.Action): one naming other arguments (the same
// request number, the same call id) is a refusal, and a decision is
// taken once, so a copy of it (a re-ask answered) approves nothing more.
// The requests go to the runner over a real server.
func TestWorkerGateRunsOnlyTheCallApproved(t *testing.T) {
	ctx, srv, b := poolBus(t, 30*time.Second)
	h, err := workstore.Open(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	place := messages.Place{RunID: "r", AgentID: "top-1", AgentName: "child", ParentAgentID: "top", Depth: 1}
	key := NewTaskKey()
	w := &Worker{o: WorkerOptions{Conn: b, Key: "wk", Pool: workstore.DefaultPool}, h: h, engine: engine, jobs: map[string]*job{}}
	j := &job{w: w, task: messages.WorkTask{TaskID: "t1", Key: key, Pool: workstore.DefaultPool, Place: place}, attempt: 1, token: "t1",
		seal: sealer(key)}
	j.ctx, j.cancel = context.WithCancelCause(ctx)
	defer j.cancel(nil)
	asked := make(chan messages.WorkApproval, 8)
	runner := srv.Conn(t)
	sub, err := runner.Subscribe(j.subject(messages.WorkKindApproval), func(m *nats.Msg) {
		if wa, err := messages.Decode[messages.WorkApproval](m.Data); err == nil {
			asked <- wa
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// The server has the subscription only once the connection is
	// flushed: the gate publishes on another one, and a request sent
	// before would be lost (the runner never asked).
	if err := runner.Flush(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	gate := engine.Spawn(func() actor.Receiver { return &workerGate{j: j, pending: map[int]pendingCall{}} }, "task-gate")
	defer engine.Poison(gate)
	// call stands in for a tool actor: it asks for req and reports what
	// it was told, once the runner was sent the request.
	call := func(n int, req messages.ApprovalRequired) <-chan messages.ApprovalDecided {
		t.Helper()
		told := make(chan messages.ApprovalDecided, 4)
		engine.SpawnFunc(func(c *actor.Context) {
			switch m := c.Message().(type) {
			case actor.Started:
				c.Send(gate, req)
			case messages.ApprovalDecided:
				told <- m
			}
		}, "call", actor.WithID(fmt.Sprint(n)))
		select {
		case wa := <-asked:
			if wa.Seq != n || string(wa.Required.ExecuteArgs) == "" {
				t.Fatalf("the runner was asked %+v, want request %d", wa, n)
			}
		case <-ctx.Done():
			t.Fatal("the runner was never asked")
		}
		return told
	}
	todo := func(id, content string) messages.ApprovalRequired {
		return messages.ApprovalRequired{Place: place, ToolCallID: id, ToolName: "manage_todos", ExecuteToolName: "manage_todos",
			ExecuteArgs: json.RawMessage(`{"todos": [{"content": "` + content + `", "status": "pending"}]}`)}
	}
	decide := func(seq int, approved bool, action string) {
		engine.Send(gate, workDecided{messages.WorkDecision{TaskID: "t1", Attempt: 1, Seq: seq, Action: action,
			Decision: messages.ApprovalDecided{ToolCallID: "c1", Approved: approved, DecidedBy: messages.DecidedByPolicy}}})
	}
	wait := func(told <-chan messages.ApprovalDecided) messages.ApprovalDecided {
		t.Helper()
		select {
		case d := <-told:
			return d
		case <-time.After(10 * time.Second):
			t.Fatal("the call was told nothing")
		}
		return messages.ApprovalDecided{}
	}
	quiet := func(told <-chan messages.ApprovalDecided) {
		t.Helper()
		select {
		case d := <-told:
			t.Fatalf("the call was told more: %+v", d)
		case <-time.After(200 * time.Millisecond):
		}
	}
	// Request 1 asks for "a"; the runner's approval names "b".
	first := call(1, todo("c1", "a"))
	decide(1, true, actionOf(todo("c1", "b")))
	if d := wait(first); d.Approved || !strings.Contains(d.Note, "named another call") {
		t.Fatalf("an approval naming other arguments: %+v", d)
	}
	decide(1, true, actionOf(todo("c1", "a")))
	quiet(first)
	// Request 2 is approved by name, once; a copy approves nothing more.
	second := call(2, todo("c1", "a"))
	decide(2, true, actionOf(todo("c1", "a")))
	if d := wait(second); !d.Approved {
		t.Fatalf("the approval naming the call: %+v", d)
	}
	decide(2, true, actionOf(todo("c1", "a")))
	quiet(second)
	// A refusal needs no name: it runs nothing.
	third := call(3, todo("c1", "c"))
	decide(3, false, "")
	if d := wait(third); d.Approved {
		t.Fatalf("a refusal: %+v", d)
	}
}
