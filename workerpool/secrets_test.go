package workerpool_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/e2e/chatserver"
)

// A worker's own provider key never travels back to the runner: a child
// whose model repeats it (as a provider's error or a prompt-injected
// model would) reaches the parent with the key replaced, in its answer
// and in the events the worker relays. The runner does not know that key,
// so only the worker's redaction can catch it.
func TestWorkerKeepsItsOwnKey(t *testing.T) {
	const workerKey = "sk-worker-only-0123456789"
	f := newFixture(t, 1, fanOut(1, func(chatserver.Request) chatserver.Turn {
		return chatserver.Turn{Text: "my key is " + workerKey + " (do not share)"}
	}))
	f.workerKey = workerKey
	f.worker("w1", 2, 2*time.Second)
	var events strings.Builder
	opts := f.runOptions("fan out", "spawn_subagent")
	opts.Events = []string{"all"}
	opts.Stderr = &events
	out, err := app.RunAndWait(context.Background(), opts)
	if err != nil || !out.OK {
		t.Fatalf("run: %v %+v", err, out)
	}
	if !strings.Contains(out.Answer, "my key is") {
		t.Fatalf("the child's answer did not come back: %.300q", out.Answer)
	}
	if strings.Contains(out.Answer, workerKey) || strings.Contains(events.String(), workerKey) {
		t.Fatalf("the worker's key reached the runner:\nanswer %.300q\nevents %.2000s", out.Answer, events.String())
	}
	for i, r := range f.chat.Requests() {
		if isChild(r) {
			continue
		}
		for _, m := range r.ToolMessages() {
			if m.Content != nil && strings.Contains(*m.Content, workerKey) {
				t.Fatalf("request %d: the parent's model was shown the worker's key: %.300q", i, *m.Content)
			}
		}
	}
}
