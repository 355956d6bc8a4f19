package e2e_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/store/agents"
)

// TestRunLeaksNoGoroutines runs a whole app.Run in-process (embedded bus,
// engine, gate, agent, call actors, event sink) on a replay script with a
// tool turn, then checks that every goroutine it started has ended. No
// goroutine is ignored: hollywood's engine, the embedded nats-server and
// the nats.go connection must all be torn down by Run itself.
func TestRunLeaksNoGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	home, cwd := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "notes.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(cwd, "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[
		{"toolCalls":[{"name":"read_file","arguments":{"path":"notes.txt"}},{"name":"ls","arguments":{"path":"."}}]},
		{"text":"read: {{lastToolResult}}"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "JAZZ_HOME" {
			return home
		}
		return ""
	}
	cfg, _, err := config.Load(context.Background(), config.LoadOptions{Home: home, Getenv: getenv, Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	agent := agents.Agent{ID: "leak", Name: "leak", Model: "replay/" + script,
		Config: agents.Config{LLMProvider: "replay", LLMModel: script, Tools: []string{"read_file", "ls"}}}
	out, err := runToEnd(context.Background(), app.RunOptions{
		Agent:         agent,
		Prompt:        "read notes",
		Config:        cfg,
		Events:        []string{"all"},
		MaxIterations: 5,
		Stdin:         eofReader{},
		Stderr:        io.Discard,
		Getenv:        getenv,
		Cwd:           cwd,
	})
	if err != nil || !out.OK {
		t.Fatalf("run: err %v, outcome %+v", err, out)
	}
	if len(out.ToolCalls) != 2 {
		t.Fatalf("tool calls %+v", out.ToolCalls)
	}
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// runToEnd runs one run through the Go API: Start, Wait, Close.
func runToEnd(ctx context.Context, o app.RunOptions) (app.Outcome, error) {
	r, err := app.Start(ctx, o)
	if err != nil {
		return app.Outcome{}, err
	}
	defer r.Close()
	return r.Wait()
}
