package workerpool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/store/agents"
	"github.com/jazz-run/jazz/workerpool"
	"github.com/jazz-run/jazz/workstore"
)

// fixture is one JAZZ_HOME with a local 3-node cluster and a scripted
// Chat Completions server that runners and workers both call.
type fixture struct {
	t       testing.TB
	home    string
	cwd     string
	cluster *busserver.Cluster
	chat    *chatserver.Server
	// workerConfig is the config of the workers started after it is set.
	workerConfig string
	// wrap, when set, stands between the workers started after it is
	// set and their runtime.
	wrap func(workerpool.Runtime) workerpool.Runtime
	// workerKey, when set, is the provider key of the workers started
	// after it is set (the runner's stays sk-test-worker).
	workerKey string
}

func newFixture(t testing.TB, nodes int, respond chatserver.Responder) *fixture {
	t.Helper()
	f := &fixture{t: t, home: t.TempDir(), cwd: t.TempDir(), chat: chatserver.NewFunc(respond)}
	t.Cleanup(f.chat.Close)
	if err := os.Chmod(f.home, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := busserver.StartCluster(ctx, busserver.ClusterOptions{Home: f.home, Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	f.cluster = c
	return f
}

func (f *fixture) getenv(k string) string {
	switch k {
	case "OPENAI_BASE_URL":
		return f.chat.URL()
	case "OPENAI_API_KEY":
		return "sk-test-worker"
	case "HOME":
		return f.home
	}
	return ""
}

// worker starts an in-process worker with an identity of its own.
func (f *fixture) worker(name string, capacity int, lease time.Duration) *workerpool.Worker {
	f.t.Helper()
	w, err := busserver.AddWorker(f.home, name, busserver.Pool{Name: workerpool.DefaultPool, LeaseMs: lease.Milliseconds()})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.cluster.Reload(); err != nil {
		f.t.Fatal(err)
	}
	return f.workerAs(busserver.WorkerSeedPath(f.home, name), w.PublicKey, name, capacity, lease)
}

func (f *fixture) workerAs(seed, key, name string, capacity int, lease time.Duration) *workerpool.Worker {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := busclient.Connect(ctx, busclient.Options{URL: f.cluster.URL(), Nkey: seed, Name: "worker-" + name,
		InboxPrefix: busserver.WorkerInboxPrefix(key)})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(nc.CloseNow)
	doc := f.workerConfig
	if doc == "" {
		doc = `{"maxRetries": 0}`
	}
	cfg := f.config(doc)
	getenv := f.getenv
	if key := f.workerKey; key != "" {
		getenv = func(k string) string {
			if k == "OPENAI_API_KEY" {
				return key
			}
			return f.getenv(k)
		}
	}
	rt, err := app.NewWorkerRuntime(ctx, app.WorkerOptions{Config: cfg, Getenv: getenv, WorkDir: f.cwd})
	if err != nil {
		f.t.Fatal(err)
	}
	var run workerpool.Runtime = rt
	if f.wrap != nil {
		run = f.wrap(rt)
	}
	w, err := workerpool.StartWorker(ctx, workerpool.WorkerOptions{Conn: nc, Key: key, Name: name, Capacity: capacity,
		Lease: lease, Version: "v0.0.0-test", Runtime: run})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		sctx, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		w.Stop(sctx)
	})
	return w
}

func (f *fixture) config(doc string) *config.Config {
	f.t.Helper()
	dir := f.t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(doc), 0o600); err != nil {
		f.t.Fatal(err)
	}
	cfg, _, err := config.Load(context.Background(), config.LoadOptions{Home: f.home, ConfigFlag: filepath.Join(dir, "config.json"),
		Getenv: f.getenv, Cwd: f.cwd})
	if err != nil {
		f.t.Fatal(err)
	}
	return cfg
}

// runOptions is a run whose subagents go to the pool.
func (f *fixture) runOptions(prompt string, tools ...string) app.RunOptions {
	f.t.Helper()
	opts := busclient.Options{Nkey: busserver.RoleSeedPath(f.home, busserver.RoleRunner), Name: "runner"}.Client()
	return app.RunOptions{
		Agent: agents.Agent{ID: "ag1", Name: "parent", Config: agents.Config{LLMProvider: "openai", LLMModel: "gpt-4o-mini",
			Tools: tools}},
		Prompt: prompt, Config: f.config(`{"maxRetries": 0, "workerPool": "default"}`), Policy: messages.PolicyLowRisk,
		NATSURL: f.cluster.URL(), NATS: opts, Getenv: f.getenv, Cwd: f.cwd, Timeout: 60 * time.Second, MaxIterations: 10,
	}
}

const preamble = "[SUB-AGENT TASK]"

// isChild says whether a request is a sub-agent's.
func isChild(r chatserver.Request) bool {
	for _, m := range r.Messages {
		if m.Role == "user" && m.Content != nil && strings.HasPrefix(*m.Content, preamble) {
			return true
		}
	}
	return false
}

func childTask(r chatserver.Request) string {
	for _, m := range r.Messages {
		if m.Role == "user" && m.Content != nil && strings.HasPrefix(*m.Content, preamble) {
			c := *m.Content
			return c[strings.LastIndex(c, "\n\n")+2:]
		}
	}
	return ""
}

func spawn(id, task string) chatserver.Call {
	args, _ := json.Marshal(map[string]string{"task": task})
	return chatserver.Call{ID: id, Name: "spawn_subagent", Arguments: string(args)}
}

// fanOut is a parent that spawns n children at once and then answers
// with what they said; each child answers its task.
func fanOut(n int, child func(r chatserver.Request) chatserver.Turn) chatserver.Responder {
	return func(_ int, r chatserver.Request) chatserver.Turn {
		if isChild(r) {
			return child(r)
		}
		if len(r.ToolMessages()) == 0 {
			var calls []chatserver.Call
			for i := 0; i < n; i++ {
				calls = append(calls, spawn(fmt.Sprintf("call_%d", i), fmt.Sprintf("task %d", i)))
			}
			return chatserver.Turn{Calls: calls}
		}
		var parts []string
		for _, m := range r.ToolMessages() {
			if m.Content != nil {
				parts = append(parts, *m.Content)
			}
		}
		return chatserver.Turn{Text: strings.Join(parts, "|")}
	}
}

// Twenty children over two workers: every child runs on a worker, once,
// and the parent sees every answer; the run tree's ledger holds their
// usage and calls.
func TestFanOutOverTwoWorkers(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	f := newFixture(t, 3, fanOut(20, func(r chatserver.Request) chatserver.Turn {
		task := childTask(r)
		mu.Lock()
		seen[task]++
		mu.Unlock()
		return chatserver.Turn{Text: "done " + task, Delay: 20 * time.Millisecond}
	}))
	w1 := f.worker("w1", 4, 2*time.Second)
	w2 := f.worker("w2", 4, 2*time.Second)
	out, err := app.RunAndWait(context.Background(), f.runOptions("fan out", "spawn_subagent"))
	if err != nil || !out.OK {
		t.Fatalf("run: %v %+v", err, out)
	}
	for i := 0; i < 20; i++ {
		if !strings.Contains(out.Answer, fmt.Sprintf("done task %d", i)) {
			dumpRequests(t, f)
			t.Fatalf("answer lacks child %d: %.400q", i, out.Answer)
		}
		if seen[fmt.Sprintf("task %d", i)] != 1 {
			t.Fatalf("child %d ran %d times", i, seen[fmt.Sprintf("task %d", i)])
		}
	}
	// A worker counts a task done when its handling ends, after the
	// result it sent (the parent may hear the last results first).
	d1, d2 := w1.Status().Done, w2.Status().Done
	for end := time.Now().Add(10 * time.Second); d1+d2 < 20 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
		d1, d2 = w1.Status().Done, w2.Status().Done
	}
	if d1+d2 != 20 || d1 == 0 || d2 == 0 {
		t.Fatalf("tasks per worker: %d + %d", d1, d2)
	}
	// 21 responses: the parent's two and one per child.
	if out.Usage.PromptTokens != 20*22 {
		t.Fatalf("usage %+v", out.Usage)
	}
}

func dumpRequests(t *testing.T, f *fixture) {
	for i, r := range f.chat.Requests() {
		for _, m := range r.ToolMessages() {
			if m.Content != nil {
				t.Logf("req %d tool: %.200s", i, *m.Content)
			}
		}
		t.Logf("req %d child=%v last=%.100q", i, isChild(r), r.LastUser())
	}
}

// A worker speaks only for itself: the server refuses it every subject
// that would let it report on another worker's task, read another's
// decisions, forge a runner's decision or cancel record, or watch the
// pool's traffic; what it may do (report under its own key, read its own
// inbox) goes through, so the refusals are the permissions' doing.
func TestWorkerMaySpeakOnlyForItself(t *testing.T) {
	f := newFixture(t, 1, fanOut(0, nil))
	a, err := busserver.AddWorker(f.home, "perm-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := busserver.AddWorker(f.home, "perm-b")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cluster.Reload(); err != nil {
		t.Fatal(err)
	}
	seed, err := nats.NkeyOptionFromSeed(busserver.WorkerSeedPath(f.home, "perm-a"))
	if err != nil {
		t.Fatal(err)
	}
	violations := make(chan string, 64)
	nc, err := nats.Connect(f.cluster.URL(), seed, nats.CustomInboxPrefix(busserver.WorkerInboxPrefix(a.PublicKey)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err.Error() }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// expect waits for the server's verdict on one action: a violation
	// naming subject, or (allowed) none by the time a round trip is done.
	expect := func(what, subject string, refused bool, act func() error) {
		t.Helper()
		if err := act(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		_ = nc.Flush()
		deadline := time.After(2 * time.Second)
		if !refused {
			deadline = time.After(300 * time.Millisecond)
		}
		for {
			select {
			case v := <-violations:
				if strings.Contains(v, subject) {
					if !refused {
						t.Fatalf("%s was refused: %s", what, v)
					}
					return
				}
			case <-deadline:
				if refused {
					t.Fatalf("%s (%s) was allowed", what, subject)
				}
				return
			}
		}
	}
	pub := func(subject string) func() error { return func() error { return nc.Publish(subject, []byte("{}")) } }
	sub := func(subject string) func() error {
		return func() error { _, err := nc.SubscribeSync(subject); return err }
	}
	own := messages.WorkerSubject("default", a.PublicKey, "run-x", "t1", messages.WorkKindResult)
	other := messages.WorkerSubject("default", b.PublicKey, "run-x", "t1", messages.WorkKindResult)
	expect("a report under its own key", own, false, pub(own))
	expect("its own inbox", messages.WorkerInbox("default", a.PublicKey), false, sub(messages.WorkerInbox("default", a.PublicKey)))
	expect("a report under another worker's key", other, true, pub(other))
	expect("another worker's decisions", messages.WorkerInbox("default", b.PublicKey), true, sub(messages.WorkerInbox("default", b.PublicKey)))
	forged := messages.WorkDecisionSubject("default", a.PublicKey, "t1")
	expect("a decision for itself", forged, true, pub(forged))
	cancel := workstore.KeySubject(workstore.CancelKey("t1"))
	expect("a cancel record", cancel, true, pub(cancel))
	expect("the pool's traffic", "jazz.work.>", true, sub("jazz.work.>"))
	task := messages.WorkTaskSubject("default")
	expect("queueing a task", task, true, pub(task))
}

// A remote child's model step is bounded by the run's step ceiling, as a
// local child's is: the task carries it, and the worker (whose own config
// would retry a failing model for minutes) gives up when it is spent.
func TestRemoteChildStepCeiling(t *testing.T) {
	var mu sync.Mutex
	childCalls := 0
	f := newFixture(t, 1, fanOut(1, func(chatserver.Request) chatserver.Turn {
		mu.Lock()
		childCalls++
		mu.Unlock()
		return chatserver.Turn{Status: 503, ErrorMessage: "overloaded"}
	}))
	f.workerConfig = `{"maxRetries": 8}`
	f.worker("w1", 2, 2*time.Second)
	o := f.runOptions("fan out", "spawn_subagent")
	o.Config = f.config(`{"maxRetries": 0, "workerPool": "default", "modelCall": {"stepTimeoutMs": 1500}}`)
	start := time.Now()
	out, err := app.RunAndWait(context.Background(), o)
	took := time.Since(start)
	if err != nil || !out.OK {
		t.Fatalf("run: %v %+v", err, out)
	}
	// Without the ceiling the worker's eight retries wait 1+2+4+…+30 s
	// and the run's 60 s timer ends the child first.
	if !strings.Contains(out.Answer, "step ceiling") || took > 30*time.Second {
		t.Fatalf("after %s the parent heard: %.400q", took, out.Answer)
	}
	mu.Lock()
	defer mu.Unlock()
	if childCalls > 2 {
		t.Fatalf("the child's model was called %d times within a 1.5 s ceiling", childCalls)
	}
}
