// Command scale measures worker pools (issue 16): a 3-node NATS cluster
// (JetStream replicated) and a Chat Completions server whose sub-agent
// answers take a fixed latency run in this process, with 1, 2, 4 and 8
// `jazz worker` processes of a built binary on the cluster. For each
// worker count a driver submits M runs at once, each fanning out K
// sub-agents, and reports children per second and the p50/p99 latency of
// a child as its parent sees it (spawn_subagent start to end). The same
// runs with local children, and a light load (one run of few children at
// a time, on workers and locally), give what going remote costs a child.
//
//	go run ./bench/scale -bin bin/jazz -out docs
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/store/agents"
)

type options struct {
	bin      string
	out      string
	workers  []int
	capacity int
	runs     int
	children int
	light    int
	lightK   int
	latency  time.Duration
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run() error {
	var o options
	var workers string
	flag.StringVar(&o.bin, "bin", "bin/jazz", "the jazz binary the workers run")
	flag.StringVar(&o.out, "out", "", "directory for bench-scale.md and bench-scale.png (empty: print only)")
	flag.StringVar(&workers, "workers", "1,2,4,8", "worker process counts to measure")
	flag.IntVar(&o.capacity, "capacity", 4, "tasks each worker runs at once")
	flag.IntVar(&o.runs, "runs", 24, "M: runs submitted at once per measurement")
	flag.IntVar(&o.children, "children", 10, "K: sub-agents each run fans out (a run starts at most 10 calls at once)")
	flag.IntVar(&o.light, "light-runs", 15, "runs, one at a time, of the light-load measurement")
	flag.IntVar(&o.lightK, "light-children", 4, "sub-agents per light-load run (at most one worker's capacity)")
	flag.DurationVar(&o.latency, "latency", 50*time.Millisecond, "the fake model's latency for a sub-agent's answer")
	flag.Parse()
	for _, s := range strings.Split(workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-workers: %q is not a worker count", s)
		}
		o.workers = append(o.workers, n)
	}
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("the jazz binary: %w (run make build)", err)
	}
	o.bin = bin
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Minute)
	defer stop()
	w, err := newWorld(ctx, o)
	if err != nil {
		return err
	}
	defer w.close()
	rep := report{o: o, started: time.Now()}
	load := func() string {
		data, _ := os.ReadFile("/proc/loadavg")
		return strings.Join(strings.Fields(string(data))[:min(3, len(strings.Fields(string(data))))], " ")
	}
	rep.loadBefore = load()

	fmt.Fprintln(os.Stderr, "local children")
	local, err := w.measure(ctx, "", o)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	rep.rows = append(rep.rows, local)
	for _, n := range o.workers {
		fmt.Fprintf(os.Stderr, "%d worker process(es)\n", n)
		if err := w.scaleTo(ctx, n); err != nil {
			return err
		}
		// A pool that just formed settles first (the cluster moves its
		// consumer's leader to the task stream leader's node within its
		// 1 s watch): what is measured is a pool's steady state.
		time.Sleep(1500 * time.Millisecond)
		r, err := w.measure(ctx, "default", o)
		if err != nil {
			return fmt.Errorf("%d workers: %w", n, err)
		}
		r.workers = n
		rep.rows = append(rep.rows, r)
	}
	rep.loadAfter = load()
	md := rep.markdown()
	fmt.Print(md)
	if o.out == "" {
		return nil
	}
	if err := os.WriteFile(filepath.Join(o.out, "bench-scale.md"), []byte(md), 0o644); err != nil {
		return err
	}
	png, err := rep.plot()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.out, "bench-scale.png"), png, 0o644)
}

// world is the cluster, the model server, the runners' config and the
// worker processes running now.
type world struct {
	o       options
	home    string
	cwd     string
	cluster *busserver.Cluster
	chat    *chatserver.Server
	local   *config.Config
	pooled  *config.Config
	procs   []*exec.Cmd
	seq     int
}

const preamble = "[SUB-AGENT TASK]"

func newWorld(ctx context.Context, o options) (*world, error) {
	tmp, err := os.MkdirTemp("", "jazz-bench-scale-")
	if err != nil {
		return nil, err
	}
	w := &world{o: o, home: filepath.Join(tmp, "home"), cwd: filepath.Join(tmp, "cwd")}
	for _, d := range []string{w.home, w.cwd} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	w.chat = chatserver.NewFunc(func(_ int, r chatserver.Request) chatserver.Turn { return respond(o, r) })
	w.cluster, err = busserver.StartCluster(ctx, busserver.ClusterOptions{Home: w.home, Nodes: 3})
	if err != nil {
		w.close()
		return nil, err
	}
	if w.local, err = w.config(tmp, "local", `{"maxRetries": 0}`); err != nil {
		w.close()
		return nil, err
	}
	if w.pooled, err = w.config(tmp, "pooled", `{"maxRetries": 0, "workerPool": "default"}`); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// respond is the fake model: a parent fans out the children its prompt
// asks for, then joins their answers; a child answers after the latency.
func respond(o options, r chatserver.Request) chatserver.Turn {
	for _, m := range r.Messages {
		if m.Role == "user" && m.Content != nil && strings.HasPrefix(*m.Content, preamble) {
			return chatserver.Turn{Text: "done", Delay: o.latency}
		}
	}
	if len(r.ToolMessages()) > 0 {
		return chatserver.Turn{Text: fmt.Sprintf("%d answers", len(r.ToolMessages()))}
	}
	k, _ := strconv.Atoi(strings.TrimPrefix(r.LastUser(), "fan out "))
	calls := make([]chatserver.Call, k)
	for i := range calls {
		args, _ := json.Marshal(map[string]string{"task": fmt.Sprintf("child %d", i)})
		calls[i] = chatserver.Call{ID: fmt.Sprintf("call_%d", i), Name: "spawn_subagent", Arguments: string(args)}
	}
	return chatserver.Turn{Calls: calls}
}

func (w *world) getenv(k string) string {
	switch k {
	case "OPENAI_BASE_URL":
		return w.chat.URL()
	case "OPENAI_API_KEY":
		return "sk-bench-runner"
	case "HOME":
		return w.home
	}
	return ""
}

func (w *world) config(dir, name, doc string) (*config.Config, error) {
	path := filepath.Join(dir, name+".json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		return nil, err
	}
	cfg, _, err := config.Load(context.Background(), config.LoadOptions{Home: w.home, ConfigFlag: path, Getenv: w.getenv, Cwd: w.cwd})
	return cfg, err
}

// scaleTo starts or stops worker processes until n run, and waits for
// every one to have joined.
func (w *world) scaleTo(ctx context.Context, n int) error {
	for len(w.procs) > n {
		last := w.procs[len(w.procs)-1]
		w.procs = w.procs[:len(w.procs)-1]
		stopProc(last)
	}
	for len(w.procs) < n {
		w.seq++
		cmd, err := w.startWorker(ctx, fmt.Sprintf("bench-%d", w.seq))
		if err != nil {
			return err
		}
		w.procs = append(w.procs, cmd)
	}
	return nil
}

func (w *world) startWorker(ctx context.Context, name string) (*exec.Cmd, error) {
	if _, err := busserver.AddWorker(w.home, name); err != nil {
		return nil, err
	}
	if err := w.cluster.Reload(); err != nil {
		return nil, err
	}
	home := filepath.Join(filepath.Dir(w.home), name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	cfg, _ := json.Marshal(map[string]any{"maxRetries": 0,
		"llm": map[string]any{"openai": map[string]any{"base_url": w.chat.URL(), "api_key": "sk-bench-" + name}}})
	if err := os.WriteFile(filepath.Join(home, "config.json"), cfg, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(w.o.bin, "worker", "--nats-url", w.cluster.URL(), "--nkey", busserver.WorkerSeedPath(w.home, name),
		"--name", name, "--capacity", strconv.Itoa(w.o.capacity), "--dir", w.cwd)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "JAZZ_HOME=" + home, "JAZZ_OFFLINE=1"}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	joined := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		var seen strings.Builder
		for {
			n, err := stderr.Read(buf)
			seen.Write(buf[:n])
			if strings.Contains(seen.String(), "joined pool") {
				joined <- nil
				_, _ = copyDiscard(stderr)
				return
			}
			if err != nil {
				joined <- fmt.Errorf("worker %s exited before joining: %s", name, seen.String())
				return
			}
		}
	}()
	select {
	case err := <-joined:
		if err != nil {
			stopProc(cmd)
			return nil, err
		}
	case <-time.After(60 * time.Second):
		stopProc(cmd)
		return nil, fmt.Errorf("worker %s did not join within a minute", name)
	case <-ctx.Done():
		stopProc(cmd)
		return nil, ctx.Err()
	}
	return cmd, nil
}

func copyDiscard(r interface{ Read([]byte) (int, error) }) (int, error) {
	buf := make([]byte, 4096)
	total := 0
	for {
		n, err := r.Read(buf)
		total += n
		if err != nil {
			return total, err
		}
	}
}

// stopProc ends a worker as an operator would (SIGTERM), then for sure.
func stopProc(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (w *world) close() {
	for _, p := range w.procs {
		stopProc(p)
	}
	w.procs = nil
	if w.cluster != nil {
		w.cluster.Close()
	}
	if w.chat != nil {
		w.chat.Close()
	}
	_ = os.RemoveAll(filepath.Dir(w.home))
}

// row is one configuration's measurements.
type row struct {
	workers int // 0: local children
	// light: one run at a time of few children.
	lightP50, lightP99 time.Duration
	// loaded: M runs at once.
	wall             time.Duration
	children         int
	perSec           float64
	loadP50, loadP99 time.Duration
	// failed counts runs that did not end well (they are still timed).
	failed int
	// cpuDriver and cpuWorkers are the CPU time per child of the light
	// phase, in this process (runs, cluster, model) and in the worker
	// processes; negative where /proc cannot say.
	cpuDriver, cpuWorkers time.Duration
}

// measure runs the light and the loaded phases with children sent to
// pool ("" keeps them local).
func (w *world) measure(ctx context.Context, pool string, o options) (row, error) {
	var r row
	// One unmeasured run first: connections, the pool consumer, caches.
	if _, err := w.fanOut(ctx, pool, o.lightK); err != nil {
		return r, err
	}
	var light []time.Duration
	driver0, workers0 := w.cpu()
	for i := 0; i < o.light; i++ {
		lat, err := w.fanOut(ctx, pool, o.lightK)
		if err != nil {
			r.failed++
			fmt.Fprintln(os.Stderr, "light run failed:", err)
		}
		light = append(light, lat...)
	}
	r.lightP50, r.lightP99 = pct(light, 50), pct(light, 99)
	r.cpuDriver, r.cpuWorkers = -1, -1
	if driver1, workers1 := w.cpu(); driver0 >= 0 && driver1 >= 0 && workers0 >= 0 && workers1 >= 0 && len(light) > 0 {
		r.cpuDriver, r.cpuWorkers = (driver1-driver0)/time.Duration(len(light)), (workers1-workers0)/time.Duration(len(light))
	}

	start := time.Now()
	var mu sync.Mutex
	var all []time.Duration
	var errs []error
	var wg sync.WaitGroup
	for i := 0; i < o.runs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat, err := w.fanOut(ctx, pool, o.children)
			mu.Lock()
			defer mu.Unlock()
			all = append(all, lat...)
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	r.wall = time.Since(start)
	for _, err := range errs {
		r.failed++
		fmt.Fprintln(os.Stderr, "loaded run failed:", err)
	}
	r.children = len(all)
	r.perSec = float64(len(all)) / r.wall.Seconds()
	r.loadP50, r.loadP99 = pct(all, 50), pct(all, 99)
	return r, nil
}

// fanOut is one run of k children; it returns each child's latency as
// the parent saw it (subagent_start to subagent_complete).
func (w *world) fanOut(ctx context.Context, pool string, k int) ([]time.Duration, error) {
	cfg := w.local
	if pool != "" {
		cfg = w.pooled
	}
	opts := busclient.Options{Nkey: busserver.RoleSeedPath(w.home, busserver.RoleRunner), Name: "bench-runner"}.Client()
	ro := app.RunOptions{
		Agent: agents.Agent{ID: "bench", Name: "bench", Config: agents.Config{LLMProvider: "openai", LLMModel: "bench-model",
			Tools: []string{"spawn_subagent"}}},
		Prompt: fmt.Sprintf("fan out %d", k), Config: cfg, Policy: messages.PolicyLowRisk, Events: []string{"subagent"},
		Getenv: w.getenv, Cwd: w.cwd, Timeout: 60 * time.Second, MaxIterations: 5, RunID: app.NewRunID("bench") + "-" + randToken(),
	}
	if pool != "" {
		ro.NATSURL, ro.NATS = w.cluster.URL(), opts
	}
	// A loaded machine may be slow to start a run's own bus: that is
	// not what is measured, so a run that did not start starts again.
	var run *app.Run
	var err error
	for try := 1; ; try++ {
		if run, err = app.Start(ctx, ro); err == nil {
			break
		}
		if try == 3 {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "a run did not start (%v); starting it again\n", err)
	}
	defer run.Close()
	started := map[string]time.Time{}
	var lat []time.Duration
	failed := 0
	for ev := range run.Events() {
		switch ev.Type {
		case messages.EventSubagentStart:
			started[ev.AgentID] = time.Now()
		case messages.EventSubagentComplete:
			if t0, ok := started[ev.AgentID]; ok {
				lat = append(lat, time.Since(t0))
			}
			if ev.Success == nil || !*ev.Success {
				failed++
			}
		}
	}
	out, err := run.Wait()
	if err != nil {
		return lat, err
	}
	if !out.OK || failed > 0 || len(lat) != k {
		return lat, fmt.Errorf("run %s: ok %v, %d of %d children finished, %d failed: %s", run.ID(), out.OK, len(lat), k, failed, out.Error)
	}
	return lat, nil
}

// cpu is the CPU time used so far by this process and by the worker
// processes running now (negative: unknown, as off Linux).
func (w *world) cpu() (driver, workers time.Duration) {
	driver = procCPU(os.Getpid())
	for _, p := range w.procs {
		d := procCPU(p.Process.Pid)
		if d < 0 || workers < 0 {
			workers = -1
			continue
		}
		workers += d
	}
	return driver, workers
}

// procCPU reads a process's user and system time from /proc (in clock
// ticks of 10 ms, the kernel's USER_HZ on every Linux Go runs on).
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	// After the command's ")": state is field 3 of stat(5), utime 14
	// and stime 15.
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(u+st) * 10 * time.Millisecond
}

func randToken() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// pct is the p-th percentile (nearest rank).
func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(0, min(i, len(s)-1))]
}

type report struct {
	o                     options
	started               time.Time
	loadBefore, loadAfter string
	rows                  []row
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

func (r report) markdown() string {
	var b strings.Builder
	o := r.o
	fmt.Fprintf(&b, "# Worker pools: scale-out benchmark\n\n")
	fmt.Fprintf(&b, "`make bench-scale` (`go run ./bench/scale -bin bin/jazz -out docs`), %s, %d CPUs (%s), load average %s before and %s after.\n\n",
		r.started.UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), runtime.GOARCH, r.loadBefore, r.loadAfter)
	fmt.Fprintf(&b, "A 3-node NATS cluster (JetStream, streams replicated 3 times) and a fake Chat Completions server whose sub-agent answers take %s run in the driver's process, with N `jazz worker` processes of capacity %d. "+
		"Loaded: %d runs submitted at once, each fanning out %d sub-agents. Light: %d runs one after another, each of %d sub-agents (within one worker's capacity). "+
		"Latency is a child's as its parent sees it, from subagent_start to subagent_complete (the %s of the model included).\n\n",
		o.latency, o.capacity, o.runs, o.children, o.light, o.lightK, o.latency)
	fmt.Fprintf(&b, "| children run | children/s (loaded) | p50 ms (loaded) | p99 ms (loaded) | p50 ms (light) | p99 ms (light) | CPU ms per child (light): driver / workers | wall s (loaded) | runs failed |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var local row
	for _, x := range r.rows {
		where := "in the parent's process"
		if x.workers == 0 {
			local = x
		} else {
			where = fmt.Sprintf("on %d worker process(es)", x.workers)
		}
		cpu := "-"
		if x.cpuDriver >= 0 && x.cpuWorkers >= 0 {
			cpu = ms(x.cpuDriver) + " / " + ms(x.cpuWorkers)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %s | %s | %s | %.2f | %d |\n", where, x.perSec, ms(x.loadP50), ms(x.loadP99), ms(x.lightP50), ms(x.lightP99), cpu, x.wall.Seconds(), x.failed)
	}
	b.WriteString("\n")
	var one row
	for _, x := range r.rows {
		if x.workers == 1 {
			one = x
		}
	}
	if one.workers == 1 {
		fmt.Fprintf(&b, "Going remote costs a child %s ms at p50 under light load (%s ms on one worker against %s ms in the parent's process); goal: at most 2 ms.\n",
			ms(one.lightP50-local.lightP50), ms(one.lightP50), ms(local.lightP50))
		for _, x := range r.rows {
			if x.workers > 1 {
				fmt.Fprintf(&b, "%d workers: %.2fx the children per second of one (linear: %dx).\n", x.workers, x.perSec/one.perSec, x.workers)
			}
		}
	}
	b.WriteString("\n![children per second and latency by worker count](bench-scale.png)\n")
	return b.String()
}
