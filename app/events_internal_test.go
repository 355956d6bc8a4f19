package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"github.com/jazz-run/jazz/internal/testutil/syncbuf"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/internal/testutil"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/store/agents"
)

// eventTypes is the type of each event line in stderr.
func eventTypes(t *testing.T, stderr *syncbuf.Buffer) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(stderr.Bytes()))
	for sc.Scan() {
		var ev messages.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("stderr line is not an event: %q", sc.Text())
		}
		out = append(out, ev.Type)
	}
	return out
}

func eventsRun(t *testing.T, model *chatserver.Server, natsURL, runID string, stderr *syncbuf.Buffer) *Run {
	t.Helper()
	home := t.TempDir()
	env := map[string]string{"OPENAI_API_KEY": "sk-local", "OPENAI_BASE_URL": model.URL(), "JAZZ_OFFLINE": "1"}
	agent := agents.Agent{ID: "ev", Name: "ev", Config: agents.Config{LLMProvider: "openai", LLMModel: "gpt-4o-mini"}}
	r, err := Start(context.Background(), RunOptions{Agent: agent, Config: &config.Config{Home: home}, Prompt: "hi",
		Events: []string{messages.CategoryAll}, Stderr: stderr, NATSURL: natsURL, RunID: runID, Cwd: home,
		Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestEventsNeedNoServer: a run with --events all renders its whole
// stream (run_start first, run_end last) without ever starting the
// embedded NATS server: nothing else in it needs the bus.
func TestEventsNeedNoServer(t *testing.T) {
	model := chatserver.New(chatserver.Turn{Text: "4"})
	defer model.Close()
	var stderr syncbuf.Buffer
	r := eventsRun(t, model, "", "", &stderr)
	out, err := r.Wait()
	r.Close()
	if err != nil || !out.OK {
		t.Fatalf("run: %v %+v", err, out)
	}
	if r.bus.Conn() != nil {
		t.Error("the run started the embedded NATS server for its own event stream")
	}
	got := eventTypes(t, &stderr)
	if len(got) < 2 || got[0] != messages.EventRunStart || got[len(got)-1] != messages.EventRunEnd {
		t.Errorf("stream %v: want run_start … run_end", got)
	}
}

// TestEventsOnASharedBus: with --nats-url the run's events are still
// published on jazz.run.<run>.event.* for whoever watches, but the stream
// on stderr is the run's own: an event someone else publishes on the
// run's subjects never appears in it.
func TestEventsOnASharedBus(t *testing.T) {
	const forgedText = "forged by a bus peer"
	srv := testutil.StartNATS(t, testutil.NATSOptions{Listen: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	watcher, err := bus.Start(ctx, bus.Options{URL: srv.URL, Name: "watcher"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watcher.Close(context.Background()) }()
	const runID = "run-ev-shared"
	var mu sync.Mutex
	var watched []string
	ended := make(chan struct{})
	sub, err := bus.Subscribe(ctx, watcher, messages.EventsWildcard(runID), func(m bus.Msg[messages.Event]) {
		if m.Value.Message == forgedText {
			// Its own publication: NATS orders messages per connection
			// only, so it may come back before the run's first event.
			return
		}
		mu.Lock()
		watched = append(watched, m.Value.Type)
		mu.Unlock()
		if m.Value.Type == messages.EventRunEnd {
			close(ended)
		}
	}, bus.Registered())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	// The model answers only once the forged event is on the bus, so it
	// is published while the run still goes.
	model := chatserver.NewFunc(func(int, chatserver.Request) chatserver.Turn {
		forged := messages.Event{Type: messages.EventWarning, Place: messages.Place{RunID: runID}, Message: forgedText}
		if err := watcher.Publish(messages.EventSubject(runID, messages.EventWarning), forged, nil); err != nil {
			t.Error(err)
		}
		if err := watcher.Flush(ctx); err != nil {
			t.Error(err)
		}
		return chatserver.Turn{Text: "4"}
	})
	defer model.Close()
	var stderr syncbuf.Buffer
	r := eventsRun(t, model, srv.URL, runID, &stderr)
	out, err := r.Wait()
	r.Close()
	if err != nil || !out.OK {
		t.Fatalf("run: %v %+v", err, out)
	}
	got := eventTypes(t, &stderr)
	if len(got) < 2 || got[0] != messages.EventRunStart || got[len(got)-1] != messages.EventRunEnd {
		t.Errorf("stream %v: want run_start … run_end", got)
	}
	if strings.Contains(stderr.String(), "forged") {
		t.Error("an event published by another bus client reached the run's stream")
	}
	// The watcher sees the run's own events, run_end included.
	select {
	case <-ended:
	case <-ctx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	if len(watched) < 2 || watched[0] != messages.EventRunStart || watched[len(watched)-1] != messages.EventRunEnd {
		t.Errorf("the watcher saw %v on the shared bus, want run_start … run_end", watched)
	}
}
