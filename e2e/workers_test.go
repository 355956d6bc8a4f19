package e2e

// Worker pools across processes (issue 16): a 3-node NATS cluster in the
// test process (JetStream replicated), worker processes of the built
// binary with identities of their own and model keys of their own, and a
// parent `jazz run` whose config names the pool.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/internal/testutil/sleeper"
	"github.com/jazz-run/jazz/telemetry/otlptest"
	"github.com/jazz-run/jazz/workstore"
)

// poolWorld is a parent JAZZ_HOME that also hosts the cluster (so the
// parent finds it as its local bus), one scripted model server per
// process, and the workers started so far.
type poolWorld struct {
	t       *testing.T
	parent  *hlEnv
	cluster *busserver.Cluster
	secret  string

	mu      sync.Mutex
	respond func(who string, req chatserver.Request) chatserver.Turn
	chats   map[string]*chatserver.Server
}

// poolWorker is one `jazz worker` process.
type poolWorker struct {
	name string
	key  string
	env  *hlEnv
	proc *hlProc
}

func newPoolWorld(t *testing.T) *poolWorld {
	t.Helper()
	w := &poolWorld{t: t, parent: hlNewEnv(t), chats: map[string]*chatserver.Server{},
		secret: fmt.Sprintf("sk-parent-secret-%d", time.Now().UnixNano())}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := busserver.StartCluster(ctx, busserver.ClusterOptions{Home: w.parent.home, Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	w.cluster = c
	w.parent.writeConfig(map[string]any{
		"llm":        map[string]any{"openai": map[string]any{"base_url": w.chat("parent").URL(), "api_key": w.secret}},
		"maxRetries": 0,
		"workerPool": "default",
		"pricing":    map[string]any{"openai/test-model": map[string]any{"input": 1.0, "output": 2.0}},
	})
	return w
}

// chat is the model server process who talks to.
func (w *poolWorld) chat(who string) *chatserver.Server {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s, ok := w.chats[who]; ok {
		return s
	}
	s := chatserver.NewFunc(func(_ int, req chatserver.Request) chatserver.Turn {
		w.mu.Lock()
		respond := w.respond
		w.mu.Unlock()
		return respond(who, req)
	})
	w.t.Cleanup(s.Close)
	w.chats[who] = s
	return s
}

func (w *poolWorld) script(respond func(who string, req chatserver.Request) chatserver.Turn) {
	w.mu.Lock()
	w.respond = respond
	w.mu.Unlock()
}

// worker starts `jazz worker` with an identity of its own, a JAZZ_HOME
// of its own (its own model key) and its own working directory.
func (w *poolWorld) worker(t *testing.T, name string, capacity int, extra ...string) *poolWorker {
	t.Helper()
	return w.workerEnv(t, name, capacity, nil, extra...)
}

// workerLeaseMs is the lease the world's workers are added with (the
// pool's lease is the longest its workers list).
const workerLeaseMs = 1500

func (w *poolWorld) workerEnv(t *testing.T, name string, capacity int, environ []string, extra ...string) *poolWorker {
	t.Helper()
	return w.workerLease(t, name, capacity, workerLeaseMs, environ, extra...)
}

// workerLease adds a worker whose pool lease is leaseMs (the bus server
// sets it on the pool's consumer) and starts it expecting that lease.
func (w *poolWorld) workerLease(t *testing.T, name string, capacity int, leaseMs int64, environ []string, extra ...string) *poolWorker {
	t.Helper()
	id, err := busserver.AddWorker(w.parent.home, name, busserver.Pool{Name: "default", LeaseMs: leaseMs})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cluster.Reload(); err != nil {
		t.Fatal(err)
	}
	env := hlNewEnv(t)
	env.writeConfig(map[string]any{
		"llm":        map[string]any{"openai": map[string]any{"base_url": w.chat(name).URL(), "api_key": "sk-worker-" + name}},
		"maxRetries": 0,
	})
	args := append([]string{"worker", "--nats-url", w.cluster.URL(), "--nkey", busserver.WorkerSeedPath(w.parent.home, name),
		"--name", name, "--capacity", fmt.Sprint(capacity), "--lease", fmt.Sprint(leaseMs), "--json"}, extra...)
	joined := make(chan struct{})
	var once sync.Once
	pw := &poolWorker{name: name, key: id.PublicKey, env: env}
	pw.proc = env.start(hlRunOpts{args: args, env: environ, onStderr: func(line string) {
		if strings.Contains(line, "joined pool") {
			once.Do(func() { close(joined) })
		}
	}})
	t.Cleanup(func() {
		if pw.proc.cmd.ProcessState == nil {
			_ = pw.proc.cmd.Process.Signal(syscall.SIGTERM)
			pw.proc.wait(20 * time.Second)
		}
	})
	// Longer than the worker's own bounds (15 s to connect, 30 s to
	// join): a worker that cannot join says why before the test gives up.
	select {
	case <-joined:
	case <-time.After(60 * time.Second):
		_ = pw.proc.cmd.Process.Kill()
		r := pw.proc.wait(5 * time.Second)
		t.Fatalf("worker %s did not join: %s", name, r.stderr)
	}
	return pw
}

// stop ends a worker as an operator would: its tasks go back.
func (p *poolWorker) stop(t *testing.T) hlResult {
	t.Helper()
	_ = p.proc.cmd.Process.Signal(syscall.SIGTERM)
	return p.proc.wait(20 * time.Second)
}

// kill ends a worker as a crash would.
func (p *poolWorker) kill(t *testing.T) {
	t.Helper()
	_ = p.proc.cmd.Process.Kill()
	p.proc.wait(10 * time.Second)
}

// run is the parent `jazz run --json`.
func (w *poolWorld) run(t *testing.T, args ...string) hlResult {
	t.Helper()
	return w.parent.run(hlRunOpts{args: append([]string{"run", "--agent", "parent", "--json"}, args...), timeout: 120 * time.Second})
}

func (w *poolWorld) start(t *testing.T, args ...string) *hlProc {
	t.Helper()
	return w.parent.start(hlRunOpts{args: append([]string{"run", "--agent", "parent", "--json"}, args...)})
}

const subPreamble = "[SUB-AGENT TASK]"

func subTask(req chatserver.Request) (string, bool) {
	for _, m := range req.Messages {
		if m.Role == "user" && m.Content != nil && strings.HasPrefix(*m.Content, subPreamble) {
			c := *m.Content
			return c[strings.LastIndex(c, "\n\n")+2:], true
		}
	}
	return "", false
}

func spawnCalls(n int, task func(i int) string) []chatserver.Call {
	var calls []chatserver.Call
	for i := 0; i < n; i++ {
		calls = append(calls, chatserver.Call{ID: fmt.Sprintf("spawn_%d", i), Name: "spawn_subagent",
			Arguments: chatserver.JSONArgs(map[string]string{"task": task(i)})})
	}
	return calls
}

// parentAnswer joins the tool results the parent got.
func parentAnswer(req chatserver.Request) string {
	var parts []string
	for _, m := range req.ToolMessages() {
		if m.Content != nil {
			parts = append(parts, *m.Content)
		}
	}
	return strings.Join(parts, "\n")
}

func (w *poolWorld) workersList(t *testing.T) []map[string]any {
	t.Helper()
	r := w.parent.run(hlRunOpts{args: []string{"workers", "--json", "--wait", "1500"}})
	if r.code != 0 {
		t.Fatalf("jazz workers: %+v", r)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("jazz workers: %v\n%s", err, r.stdout)
	}
	return list
}

func TestWorkerPoolsAcrossProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process cluster test")
	}
	w := newPoolWorld(t)
	w.parent.agent("parent", "openai/test-model", "spawn_subagent", "read_file", "write_file", "execute_command")

	// Two workers, twenty children: each runs once, on a worker, with the
	// worker's own key; `jazz workers` shows both and what they did.
	t.Run("fan out 20 over 2 workers", func(t *testing.T) {
		var mu sync.Mutex
		ran := map[string][]string{}
		// A child's answer waits (10 s at most) until both workers have
		// asked for one: a worker holds at most its capacity of children,
		// so the other must take the rest, however late a loaded machine
		// lets it pull. Without the wait one worker could drain all
		// twenty first, and the spread would say nothing.
		workersSeen := map[string]bool{}
		bothSeen := make(chan struct{})
		w.script(func(who string, req chatserver.Request) chatserver.Turn {
			if task, ok := subTask(req); ok {
				task, _, _ = strings.Cut(task, ",")
				mu.Lock()
				ran[task] = append(ran[task], who+" "+req.Auth)
				if !workersSeen[who] {
					if workersSeen[who] = true; len(workersSeen) == 2 {
						close(bothSeen)
					}
				}
				mu.Unlock()
				select {
				case <-bothSeen:
				case <-time.After(10 * time.Second):
				}
				return chatserver.Turn{Text: "answer to " + task, Delay: 30 * time.Millisecond}
			}
			if len(req.ToolMessages()) == 0 {
				return chatserver.Turn{Calls: spawnCalls(20, func(i int) string {
					if i == 7 {
						return fmt.Sprintf("job-%02d, whose key is %s", i, w.secret)
					}
					return fmt.Sprintf("job-%02d", i)
				})}
			}
			return chatserver.Turn{Text: parentAnswer(req)}
		})
		a := w.worker(t, "fan-a", 4)
		b := w.worker(t, "fan-b", 4)
		snoop := w.snoop(t)
		r := w.run(t, "--approval-policy", "low-risk", "--events", "subagent", "fan out")
		env := r.envelope(t)
		if !*env.OK {
			t.Fatalf("run failed: %s\n%s", env.Error, r.stderr)
		}
		for i := 0; i < 20; i++ {
			task := fmt.Sprintf("job-%02d", i)
			if !strings.Contains(env.Answer, "answer to "+task) {
				t.Fatalf("answer lacks %s:\n%s", task, env.Answer)
			}
			if got := ran[task]; len(got) != 1 || strings.HasPrefix(got[0], "parent") || !strings.HasSuffix(got[0], "Bearer sk-worker-"+strings.Fields(got[0])[0]) {
				t.Fatalf("%s ran as %v, want once on a worker with its own key", task, got)
			}
		}
		if n := len(hlOfType(r.events(t), "subagent_complete")); n != 20 {
			t.Fatalf("%d subagent_complete events", n)
		}
		// 22 responses: the parent's two and one per child, all priced.
		if env.TokenUsage.PromptTokens != 22*20 || !*env.CostKnown {
			t.Fatalf("usage %+v costKnown %v", env.TokenUsage, *env.CostKnown)
		}
		// A worker counts a task done after it has sent the result the run
		// already holds, so the listing may lag the run's end by a moment;
		// and a delivery handled again (a lease that lapsed under load) is
		// counted too, though its child never runs twice (checked above).
		var done map[string]float64
		for deadline := time.Now().Add(10 * time.Second); ; {
			done = map[string]float64{}
			for _, l := range w.workersList(t) {
				done[l["name"].(string)] = l["done"].(float64)
			}
			if done["fan-a"]+done["fan-b"] >= 20 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if sum := done["fan-a"] + done["fan-b"]; sum < 20 || sum > 20*workstore.MaxAttempts || done["fan-a"] == 0 || done["fan-b"] == 0 {
			t.Fatalf("jazz workers: %v, want both workers to have done some of the 20 children (redeliveries counted)", done)
		}
		a.stop(t)
		b.stop(t)
		// What crossed the bus (tasks, results, events) never held the
		// parent's key, though its model wrote it into a task.
		if got := snoop.String(); !strings.Contains(got, "job-07") || strings.Contains(got, w.secret) {
			t.Fatalf("bus traffic: contains task %v, contains the parent's key %v", strings.Contains(got, "job-07"), strings.Contains(got, w.secret))
		}
	})

	// A worker dies (SIGKILL) with children running that had not started
	// a gated action: after its lease they run on the other worker, and
	// the run finishes with every answer.
	t.Run("worker killed mid-task is retried elsewhere", func(t *testing.T) {
		var mu sync.Mutex
		ran := map[string][]string{}
		w.script(func(who string, req chatserver.Request) chatserver.Turn {
			if task, ok := subTask(req); ok {
				mu.Lock()
				ran[task] = append(ran[task], who)
				mu.Unlock()
				return chatserver.Turn{Text: "answer to " + task, Delay: 2500 * time.Millisecond}
			}
			if len(req.ToolMessages()) == 0 {
				return chatserver.Turn{Calls: spawnCalls(4, func(i int) string { return fmt.Sprintf("long-%d", i) })}
			}
			return chatserver.Turn{Text: parentAnswer(req)}
		})
		a := w.worker(t, "kill-a", 2)
		b := w.worker(t, "kill-b", 2)
		p := w.start(t, "--approval-policy", "low-risk", "fan out")
		waitFor(t, 20*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, who := range ran {
				if who[0] == "kill-a" {
					n++
				}
			}
			return n > 0
		})
		killed := time.Now()
		a.kill(t)
		r := p.wait(90 * time.Second)
		env := r.envelope(t)
		if !*env.OK {
			t.Fatalf("run failed: %s\n%s", env.Error, r.stderr)
		}
		retried := 0
		for i := 0; i < 4; i++ {
			task := fmt.Sprintf("long-%d", i)
			if !strings.Contains(env.Answer, "answer to "+task) {
				t.Fatalf("answer lacks %s:\n%s", task, env.Answer)
			}
			if got := ran[task]; got[len(got)-1] != "kill-b" || len(got) > 2 {
				t.Fatalf("%s ran on %v", task, got)
			} else if len(got) == 2 {
				retried++
			}
		}
		if retried == 0 || !strings.Contains(r.stderr, "retried on another worker") {
			t.Fatalf("nothing was retried (%v)\n%s", ran, r.stderr)
		}
		t.Logf("run finished %s after the kill; %d children retried", time.Since(killed).Round(time.Millisecond), retried)
		b.stop(t)
	})

	// A worker dies after its child's gated action ran: the child is not
	// run again anywhere (the action would repeat); the parent is told it
	// failed and why, and the run finishes.
	t.Run("worker killed after a gated action is not retried", func(t *testing.T) {
		var mu sync.Mutex
		ran := map[string][]string{}
		secondTurn := make(chan struct{})
		var once sync.Once
		w.script(func(who string, req chatserver.Request) chatserver.Turn {
			if task, ok := subTask(req); ok {
				mu.Lock()
				ran[task] = append(ran[task], who)
				mu.Unlock()
				if len(req.ToolMessages()) == 0 {
					return chatserver.Turn{Calls: []chatserver.Call{{ID: "w1", Name: "write_file",
						Arguments: chatserver.JSONArgs(map[string]string{"path": "gated.txt", "content": "written once\n"})}}}
				}
				once.Do(func() { close(secondTurn) })
				return chatserver.Turn{Text: "too late", Delay: time.Minute}
			}
			if len(req.ToolMessages()) == 0 {
				return chatserver.Turn{Calls: spawnCalls(1, func(int) string { return "write it" })}
			}
			return chatserver.Turn{Text: parentAnswer(req)}
		})
		a := w.worker(t, "gated-a", 1)
		p := w.start(t, "--approval-policy", "high-risk", "delegate a write")
		select {
		case <-secondTurn:
		case <-time.After(30 * time.Second):
			t.Fatal("the child never got its write's result")
		}
		// The other worker exists only now: the task can only go there.
		b := w.worker(t, "gated-b", 1)
		a.kill(t)
		r := p.wait(90 * time.Second)
		env := r.envelope(t)
		if !strings.Contains(env.Answer, "not run again") {
			t.Fatalf("the parent was not told the child failed for good:\n%s\n%s", env.Answer, r.stderr)
		}
		if got, _ := os.ReadFile(filepath.Join(a.env.cwd, "gated.txt")); string(got) != "written once\n" {
			t.Fatalf("worker a's write: %q", got)
		}
		if _, err := os.Stat(filepath.Join(b.env.cwd, "gated.txt")); err == nil {
			t.Fatal("the gated action ran a second time, on worker b")
		}
		if got := ran["write it"]; len(got) != 2 || got[1] != "gated-a" {
			t.Fatalf("the child's model calls: %v (want two, both on gated-a)", got)
		}
		b.stop(t)
	})

	// The parent is interrupted while its children run commands on two
	// workers: every child is cancelled on its worker and no process of
	// theirs is left, as /proc shows.
	t.Run("parent cancelled mid fan-out leaves no process", func(t *testing.T) {
		link, marker := sleeper.Link(t)
		w.script(func(who string, req chatserver.Request) chatserver.Turn {
			if _, ok := subTask(req); ok {
				if len(req.ToolMessages()) == 0 {
					return chatserver.Turn{Calls: []chatserver.Call{{ID: "c1", Name: "execute_command",
						Arguments: chatserver.JSONArgs(map[string]string{"command": link + " 300", "description": "sleep"})}}}
				}
				return chatserver.Turn{Text: "slept: " + parentAnswer(req)}
			}
			if len(req.ToolMessages()) == 0 {
				return chatserver.Turn{Calls: spawnCalls(4, func(i int) string { return fmt.Sprintf("sleeper-%d", i) })}
			}
			return chatserver.Turn{Text: parentAnswer(req)}
		})
		a := w.worker(t, "cancel-a", 2)
		b := w.worker(t, "cancel-b", 2)
		p := w.start(t, "--approval-policy", "high-risk", "sleep a lot")
		if left, ok := sleeper.Await(marker, 4, 30*time.Second); !ok {
			_ = p.cmd.Process.Kill()
			r := p.wait(10 * time.Second)
			t.Fatalf("%d sleepers running: %s\n%s\nworker a: %s", len(left), r.stdout, r.stderr, a.proc.stderr.String())
		}
		stopped := time.Now()
		_ = p.cmd.Process.Signal(syscall.SIGINT)
		left, ok := sleeper.Await(marker, 0, 10*time.Second)
		gone := time.Since(stopped)
		r := p.wait(30 * time.Second)
		if !ok {
			t.Fatalf("left: %q\nparent: %s\nworker a: %s\nworker b: %s", left, r.stderr, a.proc.stderr.String(), b.proc.stderr.String())
		}
		if r.code == 0 {
			t.Fatalf("an interrupted run exited 0: %s", r.stdout)
		}
		t.Logf("every child's processes gone %s after SIGINT", gone.Round(time.Millisecond))
		if gone > 3*time.Second {
			t.Fatalf("the children's processes outlived the cancel by %s", gone)
		}
		waitFor(t, 10*time.Second, func() bool {
			for _, l := range w.workersList(t) {
				if l["running"].(float64) != 0 {
					return false
				}
			}
			return true
		})
		a.stop(t)
		b.stop(t)
	})

	// A remote child's gated call is put to the root run's bridge and
	// runs only on its answer; a tool outside the parent's ceiling, and
	// one the worker caps, are Unknown tool to the remote child.
	t.Run("bridge answers a remote child; ceiling holds on the worker", func(t *testing.T) {
		w.script(func(who string, req chatserver.Request) chatserver.Turn {
			if _, ok := subTask(req); ok {
				if len(req.ToolMessages()) == 0 {
					return chatserver.Turn{Calls: []chatserver.Call{
						{ID: "wr", Name: "write_file", Arguments: chatserver.JSONArgs(map[string]string{"path": "note.txt", "content": "from the child\n"})},
						{ID: "gr", Name: "grep", Arguments: chatserver.JSONArgs(map[string]string{"pattern": "x"})},
						{ID: "ex", Name: "execute_command", Arguments: chatserver.JSONArgs(map[string]string{"command": "id", "description": "who"})},
					}}
				}
				return chatserver.Turn{Text: parentAnswer(req)}
			}
			if len(req.ToolMessages()) == 0 {
				return chatserver.Turn{Calls: spawnCalls(1, func(int) string { return "write a note" })}
			}
			return chatserver.Turn{Text: parentAnswer(req)}
		})
		a := w.worker(t, "bridge-a", 1, "--tools", "read_file,write_file")
		var asked []map[string]any
		r, _ := driveBridge(t, w.parent, []string{"run", "--agent", "parent", "--json", "--interactive-stdin", "delegate"}, nil,
			func(req map[string]any) []string {
				if req["type"] != "approval_required" {
					return nil
				}
				asked = append(asked, req)
				return []string{decision(req, true)}
			})
		env := r.envelope(t)
		if !*env.OK {
			t.Fatalf("run failed: %s\n%s", env.Error, r.stderr)
		}
		if len(asked) != 1 || asked[0]["toolName"] != "write_file" || asked[0]["depth"] != float64(1) ||
			!strings.HasPrefix(fmt.Sprint(asked[0]["agentName"]), "Sub-Agent") {
			t.Fatalf("bridge was asked %v", asked)
		}
		if got, _ := os.ReadFile(filepath.Join(a.env.cwd, "note.txt")); string(got) != "from the child\n" {
			t.Fatalf("the approved write on the worker: %q\n%s", got, env.Answer)
		}
		for _, name := range []string{"grep", "execute_command"} {
			if !strings.Contains(env.Answer, "Unknown tool: "+name) {
				t.Fatalf("%s was not Unknown tool to the remote child:\n%s", name, env.Answer)
			}
		}
		a.stop(t)
	})

	// `jazz run --remote`: the whole agent runs on a worker, the caller
	// keeps its contract (one envelope on stdout, events on stderr) and
	// its gate.
	t.Run("jazz run --remote", func(t *testing.T) {
		w.script(func(who string, req chatserver.Request) chatserver.Turn {
			if who == "parent" {
				return chatserver.Turn{Status: 500, ErrorMessage: "the caller must not call the model"}
			}
			if len(req.ToolMessages()) == 0 {
				return chatserver.Turn{Calls: []chatserver.Call{{ID: "w", Name: "write_file",
					Arguments: chatserver.JSONArgs(map[string]string{"path": "remote.txt", "content": "ran on " + who + "\n"})}}}
			}
			return chatserver.Turn{Text: "wrote it on " + who}
		})
		a := w.worker(t, "remote-a", 1)
		r := w.run(t, "--remote", "--approval-policy", "high-risk", "--events", "tools", "write remote.txt")
		env := r.envelope(t)
		if !*env.OK || env.Answer != "wrote it on remote-a" {
			t.Fatalf("remote run: %+v\n%s", env, r.stderr)
		}
		if got, _ := os.ReadFile(filepath.Join(a.env.cwd, "remote.txt")); string(got) != "ran on remote-a\n" {
			t.Fatalf("remote write: %q", got)
		}
		if len(env.ToolCalls) != 1 || env.ToolCalls[0].Name != "write_file" || env.TokenUsage.PromptTokens != 40 {
			t.Fatalf("envelope: %+v", env)
		}
		if len(hlOfType(r.events(t), "tool_execution_complete")) != 1 {
			t.Fatalf("events did not stream back:\n%s", r.stderr)
		}
		a.stop(t)
	})

	// A task's tools cannot read the worker's own credentials (its
	// --nkey seed lies outside the worker's JAZZ_HOME here).
	t.Run("a task cannot read the worker's seed", func(t *testing.T) {
		seedPath := busserver.WorkerSeedPath(w.parent.home, "keys-a")
		var mu sync.Mutex
		var results []string
		w.script(func(who string, req chatserver.Request) chatserver.Turn {
			if who == "parent" {
				return chatserver.Turn{Status: 500, ErrorMessage: "the caller must not call the model"}
			}
			if tm := req.ToolMessages(); len(tm) > 0 {
				mu.Lock()
				for _, m := range tm {
					if m.Content != nil {
						results = append(results, *m.Content)
					}
				}
				mu.Unlock()
				return chatserver.Turn{Text: "read it"}
			}
			return chatserver.Turn{Calls: []chatserver.Call{{ID: "r", Name: "read_file",
				Arguments: chatserver.JSONArgs(map[string]string{"path": seedPath})}}}
		})
		a := w.worker(t, "keys-a", 1)
		seed, err := os.ReadFile(seedPath)
		if err != nil {
			t.Fatal(err)
		}
		r := w.run(t, "--remote", "read the seed")
		if env := r.envelope(t); !*env.OK {
			t.Fatalf("remote run: %+v\n%s", env, r.stderr)
		}
		mu.Lock()
		defer mu.Unlock()
		secret := strings.TrimSpace(string(seed))
		if len(results) != 1 || strings.Contains(results[0], secret) || strings.Contains(results[0], secret[:20]) || !strings.Contains(results[0], "Refused") {
			t.Fatalf("the task read the worker's seed: %q", results)
		}
		a.stop(t)
	})

	// One run tree is one trace across three processes: the parent's
	// spawn_subagent spans hold the subagent spans, and under those the
	// workers' own spans, each exported by its own process.
	t.Run("one trace across three processes", func(t *testing.T) {
		rcv := otlptest.Start(t)
		otel := func(svc string) []string {
			return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.HTTPURL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_SERVICE_NAME=" + svc}
		}
		w.script(func(who string, req chatserver.Request) chatserver.Turn {
			if task, ok := subTask(req); ok {
				return chatserver.Turn{Text: "traced " + task, Delay: 300 * time.Millisecond}
			}
			if len(req.ToolMessages()) == 0 {
				return chatserver.Turn{Calls: spawnCalls(2, func(i int) string { return fmt.Sprintf("t%d", i) })}
			}
			return chatserver.Turn{Text: parentAnswer(req)}
		})
		a := w.workerEnv(t, "trace-a", 1, otel("jazz-trace-a"))
		b := w.workerEnv(t, "trace-b", 1, otel("jazz-trace-b"))
		r := w.parent.run(hlRunOpts{args: []string{"run", "--agent", "parent", "--json", "--approval-policy", "low-risk", "trace it"},
			env: otel("jazz-parent"), timeout: 60 * time.Second})
		if env := r.envelope(t); !*env.OK {
			t.Fatalf("run: %s\n%s", env.Error, r.stderr)
		}
		a.stop(t) // a worker flushes its spans when it stops
		b.stop(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		spans, err := rcv.WaitSpans(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		traces, services := map[string]bool{}, map[string]int{}
		byID := map[string]otlptest.Span{}
		for _, sp := range spans {
			traces[sp.TraceID] = true
			services[fmt.Sprint(sp.Resource["service.name"])]++
			byID[sp.SpanID] = sp
		}
		if len(traces) != 1 || services["jazz-parent"] == 0 || services["jazz-trace-a"] == 0 || services["jazz-trace-b"] == 0 {
			t.Fatalf("traces %v, spans per service %v", traces, services)
		}
		// Every worker span hangs, through its ancestors, under a
		// parent-process subagent span under tool spawn_subagent.
		roots := 0
		for _, sp := range spans {
			if sp.Resource["service.name"] == "jazz-parent" {
				continue
			}
			up, ok := byID[sp.ParentSpanID]
			for ok && up.Resource["service.name"] != "jazz-parent" {
				up, ok = byID[up.ParentSpanID]
			}
			if !ok || up.Name != "subagent" {
				t.Fatalf("worker span %q (%v) is not under a parent's subagent span", sp.Name, sp.Resource["service.name"])
			}
			if spawn, ok := byID[up.ParentSpanID]; !ok || spawn.Name != "tool spawn_subagent" {
				t.Fatalf("subagent span is under %q, not tool spawn_subagent", spawn.Name)
			}
			if byID[sp.ParentSpanID].Resource["service.name"] == "jazz-parent" {
				roots++
			}
		}
		if roots < 2 {
			t.Fatalf("%d worker spans hang directly under the parent's", roots)
		}
	})

	// The node a worker is connected to goes down mid-task: the worker
	// fails over to another node, its children finish, and so does the
	// run (the streams have three copies).
	t.Run("the worker's NATS node goes down", func(t *testing.T) {
		var mu sync.Mutex
		started := 0
		w.script(func(who string, req chatserver.Request) chatserver.Turn {
			if task, ok := subTask(req); ok {
				mu.Lock()
				started++
				mu.Unlock()
				return chatserver.Turn{Text: "survived " + task, Delay: 2 * time.Second}
			}
			if len(req.ToolMessages()) == 0 {
				return chatserver.Turn{Calls: spawnCalls(2, func(i int) string { return fmt.Sprintf("f%d", i) })}
			}
			return chatserver.Turn{Text: parentAnswer(req)}
		})
		a := w.workerLease(t, "failover-a", 2, 4000, nil)
		p := w.start(t, "--approval-policy", "low-risk", "survive")
		waitFor(t, 20*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return started == 2
		})
		node := w.cluster.NodeOf("jazz-worker-failover-a")
		if node < 0 {
			t.Fatal("the worker's connection is on no node")
		}
		w.cluster.Stop(node)
		t.Cleanup(func() { _ = w.cluster.Restart(node) })
		r := p.wait(60 * time.Second)
		env := r.envelope(t)
		if !*env.OK || !strings.Contains(env.Answer, "survived f0") || !strings.Contains(env.Answer, "survived f1") {
			t.Fatalf("run after the node went down: %+v\n%s", env, r.stderr)
		}
		waitFor(t, 10*time.Second, func() bool { return w.cluster.NodeOf("jazz-worker-failover-a") >= 0 })
		if got := w.cluster.NodeOf("jazz-worker-failover-a"); got == node {
			t.Fatalf("the worker is back on the stopped node %d", node)
		}
		if res := a.stop(t); !strings.Contains(res.stderr, "reconnected") {
			t.Fatalf("worker log: %s", res.stderr)
		}
	})
}

// waitFor polls cond until it holds or d has passed.
func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	if !poll(d, cond) {
		t.Fatalf("condition not met within %s", d)
	}
}

// poll reports whether cond came to hold within d.
func poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// readLines is every line of a file.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// snoop records everything published under jazz.work.> while the test
// runs, as a server administrator would see it.
func (w *poolWorld) snoop(t *testing.T) *hlBuffer {
	t.Helper()
	b, err := w.cluster.AdminBus(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.CloseNow)
	nc := b.Conn()
	buf := &hlBuffer{}
	if _, err := nc.Subscribe("jazz.work.>", func(m *nats.Msg) { _, _ = buf.Write(append(m.Data, '\n')) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf
}
