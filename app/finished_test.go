package app_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/internal/faults"
	"github.com/jazz-run/jazz/internal/testutil"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/store/agents"
)

// TestFinishedSubjectSeesEveryRunEnd: a watcher subscribed to
// jazz.run.*.finished on a shared NATS server sees one RunFinished for
// every run, however it ended: an answer, a failing model, a crash, a
// timeout, a cancel.
func TestFinishedSubjectSeesEveryRunEnd(t *testing.T) {
	srv := testutil.StartNATS(t, testutil.NATSOptions{Listen: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watcher, err := bus.Start(ctx, bus.Options{URL: srv.URL, Name: "watcher"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watcher.Close(context.Background()) }()
	var mu sync.Mutex
	seen := map[string][]messages.RunFinished{}
	arrived := make(chan struct{}, 16)
	sub, err := bus.Subscribe(ctx, watcher, messages.FinishedWildcard, func(m bus.Msg[messages.RunFinished]) {
		mu.Lock()
		seen[m.Value.Place.RunID] = append(seen[m.Value.Place.RunID], m.Value)
		mu.Unlock()
		arrived <- struct{}{}
	}, bus.Registered())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()

	model := chatserver.NewFunc(func(_ int, req chatserver.Request) chatserver.Turn {
		switch req.LastUser() {
		case "fail":
			return chatserver.Turn{Status: http.StatusBadRequest, ErrorMessage: "no such model"}
		case "stall":
			return chatserver.Turn{Stall: true}
		}
		return chatserver.Turn{Text: "hi"}
	})
	defer model.Close()
	home := t.TempDir()
	env := map[string]string{"OPENAI_API_KEY": "sk-local", "OPENAI_BASE_URL": model.URL()}
	agent := agents.Agent{ID: "w", Name: "w", Config: agents.Config{LLMProvider: "openai", LLMModel: "gpt-4o-mini"}}
	runs := []struct {
		id, prompt string
		ok         bool
		timeout    time.Duration
		plan       *faults.Plan
		cancel     bool
	}{
		{id: "run-ok", prompt: "hello", ok: true},
		{id: "run-model-fails", prompt: "fail"},
		{id: "run-crashes", prompt: "hello", plan: &faults.Plan{Agent: true}},
		{id: "run-times-out", prompt: "stall", timeout: 300 * time.Millisecond},
		{id: "run-cancelled", prompt: "stall", cancel: true},
	}
	for _, r := range runs {
		runCtx, stop := context.WithCancel(ctx)
		run, err := app.Start(runCtx, app.RunOptions{Agent: agent, Config: &config.Config{Home: home, MaxRetries: 0}, Prompt: r.prompt,
			NATSURL: srv.URL, RunID: r.id, Timeout: r.timeout, Faults: r.plan, Cwd: home, Stream: true,
			Getenv: func(k string) string { return env[k] }})
		if err != nil {
			stop()
			t.Fatalf("%s: %v", r.id, err)
		}
		if r.cancel {
			time.AfterFunc(200*time.Millisecond, stop)
		}
		out, err := run.Wait()
		run.Close()
		stop()
		if out.OK != r.ok {
			t.Errorf("%s: ok=%v (%v), want %v", r.id, out.OK, err, r.ok)
		}
	}
	deadline := time.After(5 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n >= len(runs) {
			break
		}
		select {
		case <-arrived:
		case <-deadline:
			t.Fatalf("the watcher saw %d of %d run ends: %v", n, len(runs), seen)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range runs {
		got := seen[r.id]
		if len(got) != 1 || got[0].OK != r.ok {
			t.Errorf("%s: the watcher saw %+v, want one with ok=%v", r.id, got, r.ok)
		}
	}
}
