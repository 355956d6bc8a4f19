package toolactors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/toolactors"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/customtools"
)

// deployTool is a custom command tool "deploy" taking params, which
// appends the arguments it reads on stdin to the file it returns,
// allowlisted by the person (--auto-approve-tools), and a call through a
// real call actor and gate.
func deployTool(t *testing.T, params string) (call func(id, args string) messages.ToolResult, got string) {
	t.Helper()
	dir := t.TempDir()
	got = filepath.Join(dir, "stdin")
	decl, err := config.ParseCustomToolsJSON(json.RawMessage(fmt.Sprintf(`[{"name":"deploy","description":"Deploy.",
		"parameters":%s,
		"handler":{"type":"command","command":["sh","-c","cat >> %s"],"timeoutMs":10000}}]`, params, got)), "customTools")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.NewRegistry(customtools.Tools(decl, customtools.Options{BaseDir: dir})...)
	if err != nil {
		t.Fatal(err)
	}
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	gate := e.Spawn(gateactor.New(gateactor.Config{RunID: "r", AutoApproveTools: []string{"deploy"}}), "gate")
	t.Cleanup(func() { <-e.Poison(gate).Done() })
	call = func(id, args string) messages.ToolResult {
		t.Helper()
		done := make(chan messages.ToolResultReady, 1)
		place := messages.Place{RunID: "r", AgentID: "a", ToolCallID: id}
		deps := toolactors.Deps{Registry: reg, Env: &tools.Env{WorkDir: dir}, Gate: gate, Ctx: context.Background()}
		parent := e.SpawnFunc(func(ctx *actor.Context) {
			switch m := ctx.Message().(type) {
			case actor.Started:
				pid := ctx.SpawnChild(toolactors.New(deps), "call", actor.WithMiddleware(supervisor.Recover(place, nil)))
				ctx.Send(pid, messages.ToolCallRequested{Place: place, Call: messages.ToolCall{ID: id, Name: "deploy", Arguments: args}})
			case messages.ToolResultReady:
				done <- m
			}
		}, "parent-"+id)
		defer func() { <-e.Poison(parent).Done() }()
		select {
		case r := <-done:
			return r.Result
		case <-time.After(20 * time.Second):
			t.Fatal("no result")
		}
		return messages.ToolResult{}
	}
	return call, got
}

// TestRepeatedKeyNeverReachesACommandTool: a custom command tool whose
// schema admits only env "staging", allowlisted by the person on the
// strength of that schema (--auto-approve-tools), is called with env
// given twice, the second time (as is, in capitals, \u-escaped, or with
// a look-alike the decoder folds) as "staging". The schema check and the
// prompt read the last value; the program, reading the first, would
// deploy production. The call is refused before the gate, and the
// program never starts; the honest call runs.
func TestRepeatedKeyNeverReachesACommandTool(t *testing.T) {
	call, got := deployTool(t, `{"type":"object","required":["env"],"properties":{"env":{"enum":["staging"]}}}`)
	for i, again := range []string{`"env"`, `"ENV"`, `"Env"`, `"\u0065\u006e\u0076"`, `"\u0065nv"`} {
		for j, args := range []string{
			`{"env":"production",` + again + `:"staging"}`,
			`{` + again + `:"production","env":"staging"}`,
		} {
			r := call(fmt.Sprintf("c%d-%d", i, j), args)
			if r.Success || !strings.HasPrefix(r.Error, "Ambiguous tool arguments: ") {
				t.Fatalf("%s: %+v, want it refused as ambiguous", args, r)
			}
			if b, err := os.ReadFile(got); err == nil {
				t.Fatalf("%s: the command ran and read %q", args, b)
			}
		}
	}
	if r := call("honest", `{"env":"staging"}`); !r.Success {
		t.Fatalf("honest call: %+v", r)
	}
	if b, err := os.ReadFile(got); err != nil || strings.TrimSpace(string(b)) != `{"env":"staging"}` {
		t.Fatalf("honest call: the command read %q (%v)", b, err)
	}
}

// TestUndeclaredKeyNeverReachesACommandTool: the same allowlisted tool,
// whose schema names env (only "staging") and an options object, is
// called with a key the schema never named, beside env or inside the
// options, which a program could read as "deploy production". The call
// fails validation before the gate and the program never starts; an
// object whose author said additionalProperties true, or left untyped,
// still takes more.
func TestUndeclaredKeyNeverReachesACommandTool(t *testing.T) {
	call, got := deployTool(t, `{"type":"object","required":["env"],"properties":{
		"env":{"enum":["staging"]},
		"opts":{"type":"object","properties":{"dry":{"type":"boolean"}}},
		"labels":{"type":"object","properties":{},"additionalProperties":true},
		"meta":{"description":"untyped: any object"}}}`)
	for i, args := range []string{
		`{"env":"staging","target":"production"}`,
		`{"env":"staging","opts":{"dry":false,"target":"production"}}`,
		`{"env":"staging","ENV":"production"}`,
	} {
		r := call(fmt.Sprintf("u%d", i), args)
		if r.Success || r.Error == "" {
			t.Fatalf("%s: %+v, want it refused", args, r)
		}
		if b, err := os.ReadFile(got); err == nil {
			t.Fatalf("%s: the command ran and read %q", args, b)
		}
	}
	want := `{"env":"staging","opts":{"dry":true},"labels":{"team":"web"},"meta":{"any":1}}`
	if r := call("declared", want); !r.Success {
		t.Fatalf("declared keys only: %+v", r)
	}
	if b, err := os.ReadFile(got); err != nil || strings.TrimSpace(string(b)) != want {
		t.Fatalf("the command read %q (%v)", b, err)
	}
}
