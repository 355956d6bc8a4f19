package workerpool_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/messages"
)

// A remote child's single-phase gated call (one with no execute twin:
// manage_todos) goes to the root run's gate as a local child's does: the
// root's low-risk policy approves it and it runs once on the worker. What
// a local child could not do stays refused: a tool outside its ceiling is
// Unknown tool, and a nested spawn_subagent, which would start agents on
// the worker outside the run's own dispatch, is refused saying why.
func TestRemoteChildSinglePhaseCallGoesThroughTheRootGate(t *testing.T) {
	f, childTools, mu := singlePhaseFixture(t)
	out, err := app.RunAndWait(context.Background(), f.runOptions("plan", "spawn_subagent", "manage_todos"))
	if err != nil || !out.OK {
		t.Fatalf("run: %v %+v", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	checkSinglePhase(t, f, out, childTools, messages.DecidedByPolicy)
}

// The same call under the read-only policy is put to the run's bridge
// (--interactive-stdin), told in the runner's words, and runs once on its
// approval.
func TestRemoteChildSinglePhaseCallAskedOfTheBridge(t *testing.T) {
	f, childTools, mu := singlePhaseFixture(t)
	o := f.runOptions("plan", "spawn_subagent", "manage_todos")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	o.Policy, o.Reachable, o.Bridge, o.Stdin, o.Stderr = messages.PolicyReadOnly, true, true, inR, outW
	asked := map[string]string{}
	bridged := make(chan struct{})
	go func() {
		defer close(bridged)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var req map[string]any
			if json.Unmarshal(sc.Bytes(), &req) != nil || req["type"] != messages.EventApprovalRequired {
				continue
			}
			asked[fmt.Sprint(req["toolName"])] = fmt.Sprint(req["message"])
			b, _ := json.Marshal(map[string]any{"type": "approval_decision", "requestId": req["requestId"], "toolCallId": req["toolCallId"], "approved": true})
			if _, err := inW.Write(append(b, '\n')); err != nil {
				return
			}
		}
	}()
	out, err := app.RunAndWait(context.Background(), o)
	_ = outW.Close()
	<-bridged
	_ = inW.Close()
	if err != nil || !out.OK {
		t.Fatalf("run: %v %+v", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "About to run manage_todos with arguments: " + todoArgs; asked["manage_todos"] != want {
		t.Fatalf("the bridge was asked %q for manage_todos, want %q (asked: %v)", asked["manage_todos"], want, asked)
	}
	checkSinglePhase(t, f, out, childTools, messages.DecidedByBridge)
}

// todoArgs are the remote child's manage_todos arguments as the bus
// carries them (compact, with <, > and & escaped, as json.Marshal writes).
const todoArgs = `{"todos":[{"content":"write the \u003cplan\u003e \u0026 check it","status":"in_progress"}]}`

// singlePhaseFixture is a parent that sends one child to a worker; the
// child calls manage_todos (in its ceiling), spawn_subagent (nested) and
// update_task_state (outside its ceiling), and childTools records the
// results it got, by call id.
func singlePhaseFixture(t *testing.T) (*fixture, map[string][]string, *sync.Mutex) {
	mu := &sync.Mutex{}
	childTools := map[string][]string{}
	f := newFixture(t, 1, func(_ int, r chatserver.Request) chatserver.Turn {
		if !isChild(r) {
			if len(r.ToolMessages()) == 0 {
				return chatserver.Turn{Calls: []chatserver.Call{spawn("call_0", "plan it")}}
			}
			return chatserver.Turn{Text: "parent heard: " + parentAnswerOf(r)}
		}
		if len(r.ToolMessages()) == 0 {
			return chatserver.Turn{Calls: []chatserver.Call{
				{ID: "todo_1", Name: "manage_todos", Arguments: `{"todos": [{"content": "write the <plan> & check it", "status": "in_progress"}]}`},
				{ID: "nest_1", Name: "spawn_subagent", Arguments: `{"task":"help me"}`},
				{ID: "state_1", Name: "update_task_state", Arguments: `{"goal":"x"}`},
			}}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, m := range r.ToolMessages() {
			if m.Content != nil {
				childTools[m.ToolCallID] = append(childTools[m.ToolCallID], *m.Content)
			}
		}
		return chatserver.Turn{Text: "child done"}
	})
	f.worker("w1", 2, 2*time.Second)
	return f, childTools, mu
}

func checkSinglePhase(t *testing.T, f *fixture, out app.Outcome, childTools map[string][]string, by string) {
	t.Helper()
	todo := strings.Join(childTools["todo_1"], "|")
	if len(childTools["todo_1"]) != 1 || !strings.Contains(todo, "Todo list saved (1 items") {
		dumpRequests(t, f)
		t.Fatalf("the remote child's manage_todos, approved by the root's low-risk policy, did not run once: %q", todo)
	}
	if nest := strings.Join(childTools["nest_1"], "|"); !strings.Contains(nest, "cannot start sub-agents of its own") {
		t.Fatalf("the remote child's nested spawn_subagent was not refused saying why: %q", nest)
	}
	if state := strings.Join(childTools["state_1"], "|"); !strings.Contains(state, "Unknown tool: update_task_state") {
		t.Fatalf("a tool outside the remote child's ceiling was not Unknown tool: %q", state)
	}
	// The run's record says who at the root decided it, once.
	n := 0
	for _, c := range out.ToolCalls {
		if c.Name == "manage_todos" {
			n++
			if c.DecidedBy != by {
				t.Errorf("manage_todos decided by %q, want %q", c.DecidedBy, by)
			}
		}
	}
	if n != 1 {
		t.Fatalf("the run lists manage_todos %d times: %+v", n, out.ToolCalls)
	}
}

func parentAnswerOf(r chatserver.Request) string {
	var parts []string
	for _, m := range r.ToolMessages() {
		if m.Content != nil {
			parts = append(parts, *m.Content)
		}
	}
	return strings.Join(parts, "|")
}
