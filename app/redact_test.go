package app_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/internal/testutil"
	"github.com/jazz-run/jazz/internal/testutil/syncbuf"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/store/agents"
)

// TestProviderErrorEchoingTheKeyIsRedacted: a provider that answers 401
// (or 500, retried) with the API key in its error body, as OpenAI's
// "Incorrect API key provided: sk-…" does, never gets the key into what
// the run writes: the outcome the CLI prints as the envelope, the event
// stream and the plain notices on stderr, and the RunFinished a watcher
// of a shared bus reads. One key has a known shape, the other is known
// only because it is the environment's OPENAI_API_KEY.
func TestProviderErrorEchoingTheKeyIsRedacted(t *testing.T) {
	srv := testutil.StartNATS(t, testutil.NATSOptions{Listen: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	watcher, err := bus.Start(ctx, bus.Options{URL: srv.URL, Name: "watcher"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watcher.Close(context.Background()) }()
	var mu sync.Mutex
	var watched []string
	sub, err := bus.Subscribe(ctx, watcher, messages.FinishedWildcard, func(m bus.Msg[messages.RunFinished]) {
		mu.Lock()
		watched = append(watched, m.Value.Error)
		mu.Unlock()
	}, bus.Registered())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()

	for _, key := range []string{"sk-proj-Q7wE9rT1yU3iO5pA2sD4fG6h", "plainkey-88a1c4e7f20b9d63"} {
		for _, status := range []int{http.StatusUnauthorized, http.StatusInternalServerError} {
			for _, evs := range [][]string{{messages.CategoryAll}, nil} {
				name := key[:8] + "/" + http.StatusText(status) + "/events=" + strings.Join(evs, ",")
				t.Run(name, func(t *testing.T) {
					t.Setenv("OPENAI_API_KEY", key)
					model := chatserver.NewFunc(func(int, chatserver.Request) chatserver.Turn {
						return chatserver.Turn{Status: status, ErrorMessage: "Incorrect API key provided: " + key + " (Authorization: Bearer " + key + ")"}
					})
					defer model.Close()
					home := t.TempDir()
					env := map[string]string{"OPENAI_API_KEY": key, "OPENAI_BASE_URL": model.URL(), "JAZZ_OFFLINE": "1"}
					agent := agents.Agent{ID: "k", Name: "k", Config: agents.Config{LLMProvider: "openai", LLMModel: "gpt-4o-mini"}}
					var stderr syncbuf.Buffer
					run, err := app.Start(ctx, app.RunOptions{Agent: agent, Config: &config.Config{Home: home, MaxRetries: 1},
						Prompt: "hi", Events: evs, Stderr: &stderr, NATSURL: srv.URL, Cwd: home,
						Getenv: func(k string) string { return env[k] }})
					if err != nil {
						t.Fatal(err)
					}
					out, _ := run.Wait()
					run.Close()
					if out.OK {
						t.Fatal("the run succeeded against a failing model")
					}
					if !strings.Contains(out.Error, "Incorrect API key provided") {
						t.Fatalf("the outcome lost the provider's message: %q", out.Error)
					}
					for what, text := range map[string]string{"outcome error": out.Error, "answer": out.Answer, "stderr": stderr.String()} {
						if strings.Contains(text, key) {
							t.Errorf("%s holds the API key: %q", what, text)
						}
					}
				})
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(watched)
		mu.Unlock()
		if n >= 8 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(watched) < 8 {
		t.Errorf("the watcher saw %d of 8 run ends", len(watched))
	}
	for _, e := range watched {
		if strings.Contains(e, "Q7wE9rT1yU3iO5pA2sD4fG6h") || strings.Contains(e, "88a1c4e7f20b9d63") {
			t.Errorf("a bus watcher read the API key: %q", e)
		}
	}
}

// TestKeyFromGetenvIsRedacted: a caller that gives the run its own
// environment (RunOptions.Getenv: a bridge, a worker, a test) has the
// provider key it holds known to the run as well, though the process
// environment does not hold it.
func TestKeyFromGetenvIsRedacted(t *testing.T) {
	const key = "getenvonly-5e1f0a9c3b7d2486"
	model := chatserver.NewFunc(func(int, chatserver.Request) chatserver.Turn {
		return chatserver.Turn{Status: http.StatusUnauthorized, ErrorMessage: "Incorrect API key provided: " + key}
	})
	defer model.Close()
	home := t.TempDir()
	env := map[string]string{"OPENAI_API_KEY": key, "OPENAI_BASE_URL": model.URL(), "JAZZ_OFFLINE": "1"}
	agent := agents.Agent{ID: "g", Name: "g", Config: agents.Config{LLMProvider: "openai", LLMModel: "gpt-4o-mini"}}
	var stderr syncbuf.Buffer
	out, err := app.RunAndWait(context.Background(), app.RunOptions{Agent: agent, Config: &config.Config{Home: home},
		Prompt: "hi", Events: []string{messages.CategoryAll}, Stderr: &stderr, Cwd: home, Timeout: 20 * time.Second,
		Getenv: func(k string) string { return env[k] }})
	if out.OK || !strings.Contains(out.Error, "Incorrect API key provided") {
		t.Fatalf("run: ok=%v %q %v", out.OK, out.Error, err)
	}
	if strings.Contains(out.Error, key) || strings.Contains(stderr.String(), key) {
		t.Errorf("the key given through Getenv leaked: %q", out.Error)
	}
}

// TestSavedConversationHoldsNoSecret: what a conversation keeps is
// redacted as the envelope is, its title included. A prompt that quotes
// the provider key (a user pasting it, a bridge echoing its env) and an
// answer that repeats it leave the key in neither the history file nor
// what the next run loads.
func TestSavedConversationHoldsNoSecret(t *testing.T) {
	const key = "convkey-7c2e9a14b3f05d68"
	model := chatserver.NewFunc(func(int, chatserver.Request) chatserver.Turn {
		return chatserver.Turn{Text: "noted: " + key}
	})
	defer model.Close()
	home := t.TempDir()
	env := map[string]string{"OPENAI_API_KEY": key, "OPENAI_BASE_URL": model.URL(), "JAZZ_OFFLINE": "1"}
	agent := agents.Agent{ID: "s", Name: "s", Config: agents.Config{LLMProvider: "openai", LLMModel: "gpt-4o-mini"}}
	out, err := app.RunAndWait(context.Background(), app.RunOptions{Agent: agent, Config: &config.Config{Home: home},
		Prompt: key + " is my key", Conversation: "c1", Cwd: home, Timeout: 20 * time.Second,
		Getenv: func(k string) string { return env[k] }})
	if err != nil || !out.OK || out.SaveErr != nil {
		t.Fatalf("run: ok=%v %q %v save %v", out.OK, out.Error, err, out.SaveErr)
	}
	data, err := os.ReadFile(filepath.Join(home, "history", "s.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "is my key") {
		t.Fatalf("the turn was not saved: %s", data)
	}
	if strings.Contains(string(data), key) {
		t.Errorf("the history file holds the key: %s", data)
	}
}

// TestRunWithoutConversationKeepsNoWorkState: a run without a
// conversation key (--ephemeral is one) that keeps todos and task state
// leaves none of it in JAZZ_HOME once it ends: no later run could
// resume it, and --ephemeral promises to keep nothing. A run with a key
// keeps its own.
func TestRunWithoutConversationKeepsNoWorkState(t *testing.T) {
	for _, conv := range []string{"", "keep-me"} {
		t.Run("conversation="+conv, func(t *testing.T) {
			model := chatserver.NewFunc(func(i int, _ chatserver.Request) chatserver.Turn {
				if i == 0 {
					return chatserver.Turn{Calls: []chatserver.Call{
						{ID: "t1", Name: "manage_todos", Arguments: `{"todos":[{"content":"private plan","status":"pending"}]}`},
						{ID: "t2", Name: "update_task_state", Arguments: `{"goal":"private goal"}`},
					}}
				}
				return chatserver.Turn{Text: "done"}
			})
			defer model.Close()
			home := t.TempDir()
			env := map[string]string{"OPENAI_API_KEY": "k-0123456789abcdef", "OPENAI_BASE_URL": model.URL(), "JAZZ_OFFLINE": "1"}
			agent := agents.Agent{ID: "w", Name: "w", Config: agents.Config{LLMProvider: "openai", LLMModel: "gpt-4o-mini", Tools: []string{"manage_todos", "update_task_state"}}}
			out, err := app.RunAndWait(context.Background(), app.RunOptions{Agent: agent, Config: &config.Config{Home: home},
				Prompt: "plan", Conversation: conv, Cwd: home, Timeout: 20 * time.Second,
				AutoApprove: []string{"manage_todos", "update_task_state"},
				Getenv:      func(k string) string { return env[k] }})
			if err != nil || !out.OK {
				t.Fatalf("run: ok=%v %q %v", out.OK, out.Error, err)
			}
			var files []string
			_ = filepath.WalkDir(filepath.Join(home, "work"), func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					files = append(files, p)
				}
				return nil
			})
			if conv == "" && len(files) > 0 {
				t.Errorf("a run without a conversation left work state: %v", files)
			}
			if conv != "" && len(files) != 2 {
				t.Errorf("a conversation's work state: %v; transcript %+v", files, out.Transcript)
			}
		})
	}
}
