package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jazz-run/jazz/cli"
	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/internal/faults"
	"github.com/jazz-run/jazz/iostreams"
)

// cliWorld is a JAZZ_HOME and working directory for in-process runs of
// the command tree against a scripted OpenAI-wire model.
type cliWorld struct {
	t         *testing.T
	home, cwd string
	env       map[string]string
}

func newCLIWorld(t *testing.T, model *chatserver.Server) *cliWorld {
	t.Helper()
	w := &cliWorld{t: t, home: t.TempDir(), cwd: t.TempDir()}
	w.env = map[string]string{"HOME": w.home, "JAZZ_HOME": w.home, "OPENAI_BASE_URL": model.URL(),
		"OPENAI_API_KEY": "test", "NO_COLOR": "1", "PATH": os.Getenv("PATH")}
	if err := os.WriteFile(filepath.Join(w.home, "config.json"), []byte(`{"maxRetries": 0}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// exec runs jazz args in-process with plan, and returns the exit code,
// stdout and stderr.
func (w *cliWorld) exec(plan *faults.Plan, args ...string) (int, string, string) {
	io, _, out, errOut := iostreams.Test()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := cli.Execute(ctx, args, cli.Deps{IO: io, Getenv: func(k string) string { return w.env[k] }, Cwd: w.cwd, Faults: plan})
	return code, out.String(), errOut.String()
}

// TestFaultsFailTheRun: a panic in the gate, the agent, a call actor, a
// sub-agent or the event sink ends `jazz run --json` with exit 1 and a
// failure envelope naming what crashed, within a second of the panic,
// and leaves no goroutine behind.
func TestFaultsFailTheRun(t *testing.T) {
	write := chatserver.Call{ID: "w1", Name: "write_file", Arguments: chatserver.JSONArgs(map[string]string{"path": "f.txt", "content": "x"})}
	read := chatserver.Call{ID: "r1", Name: "ls", Arguments: `{}`}
	spawn := chatserver.Call{ID: "s1", Name: "spawn_subagent", Arguments: chatserver.JSONArgs(map[string]string{"task": "look around"})}
	for _, tc := range []struct {
		name  string
		plan  faults.Plan
		first chatserver.Turn
		args  []string
		want  string
	}{
		{"gate", faults.Plan{Gate: true}, chatserver.Turn{Calls: []chatserver.Call{write}}, nil, "approval gate crashed"},
		{"agent", faults.Plan{Agent: true}, chatserver.Turn{Text: "never read"}, nil, "agent crashed"},
		{"call", faults.Plan{Call: true}, chatserver.Turn{Calls: []chatserver.Call{read}}, nil, "crashed: injected fault in the tool call actor"},
		{"subagent", faults.Plan{Subagent: true}, chatserver.Turn{Calls: []chatserver.Call{spawn}}, []string{"--auto-approve-tools", "spawn_subagent"}, "injected fault in the sub-agent"},
		{"sink", faults.Plan{Sink: true}, chatserver.Turn{Text: "hello"}, []string{"--events", "all"}, "injected fault in the event sink"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := chatserver.NewFunc(func(n int, _ chatserver.Request) chatserver.Turn {
				if n == 0 {
					return tc.first
				}
				return chatserver.Turn{Text: "done"}
			})
			defer model.Close()
			w := newCLIWorld(t, model)
			if code, out, errOut := w.exec(nil, "agent", "create", "--name", "f", "--model", "openai/gpt-4o-mini",
				"--tools", "write_file,ls,spawn_subagent"); code != 0 {
				t.Fatalf("agent create: exit %d\n%s%s", code, out, errOut)
			}
			opt := goleak.IgnoreCurrent()
			var mu sync.Mutex
			var fired time.Time
			plan := tc.plan
			plan.Fired = func(string) {
				mu.Lock()
				defer mu.Unlock()
				if fired.IsZero() {
					fired = time.Now()
				}
			}
			args := append([]string{"run", "--agent", "f", "--json"}, tc.args...)
			code, out, errOut := w.exec(&plan, append(args, "go")...)
			ended := time.Now()
			mu.Lock()
			at := fired
			mu.Unlock()
			if at.IsZero() {
				t.Fatalf("the fault never fired (exit %d)\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			if took := ended.Sub(at); took > time.Second {
				t.Errorf("the run ended %s after the crash, want within a second", took)
			}
			if code != cli.ExitFailure {
				t.Errorf("exit %d, want %d", code, cli.ExitFailure)
			}
			var env struct {
				OK    *bool  `json:"ok"`
				Error string `json:"error"`
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &env) != nil || env.OK == nil || *env.OK {
				t.Fatalf("stdout is not one failure envelope:\n%s\nstderr: %s", out, errOut)
			}
			if !strings.Contains(env.Error, tc.want) {
				t.Errorf("error %q does not say %q", env.Error, tc.want)
			}
			model.Close()
			goleak.VerifyNone(t, opt)
		})
	}
}
