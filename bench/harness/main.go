// Command harness measures cold `jazz run --json` invocations of a built
// binary against an instant in-process Chat Completions server on
// 127.0.0.1: wall time (median, p90) and the child's peak RSS, for a
// one-turn answer and a turn of 10 parallel file tools, and the runtime's
// own cost per tool call from a 100-call turn, minus the same 100
// read_file handler calls measured in-process; and what a run loads from
// an oversized conversation history (peak RSS, bytes sent to the model).
// The one-turn run is also measured with --events all (median and max:
// the event stream must never stall the exit) and both are given as
// ratios to a Go program that makes the same single loopback POST
// (bench/harness/postbase, built by the harness).
//
//	go run ./bench/harness -bin bin/jazz
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/mcpclient/mcptest"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/readtools"
)

// Targets (issue 2).
const (
	targetOneTurn    = 30 * time.Millisecond
	targetOneTurnRSS = 30 << 20
	targetTenCalls   = 40 * time.Millisecond
	targetPerCall    = 20 * time.Microsecond // issue 11 (issue 2 asked 50)
	// Issue 11: a one-turn run costs at most 1.5x a bare Go program's
	// POST; --events all adds at most a millisecond at the median.
	targetRatio     = 1.5
	targetEventsAdd = time.Millisecond
)

// Prompts select the scripted conversation.
const (
	promptOne     = "bench: one turn"
	promptTen     = "bench: ten calls"
	promptHundred = "bench: hundred calls"
	smallFiles    = 100
)

func main() {
	// The MCP scenario starts this binary as its stdio server.
	if mcptest.Main() {
		return
	}
	if os.Getenv(spawnEnv) != "" {
		os.Exit(spawn())
	}
	if url := os.Getenv(postEnv); url != "" {
		os.Exit(post(url))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(1)
	}
}

type options struct {
	bin         string
	n           int
	warmup      int
	strict      bool
	historyRuns int
	quick       bool
	// base is a second binary measured in the same loop (the one-turn
	// and 100-call scenarios), for a before/after that one load change
	// cannot skew.
	base string
	// postbase is the built bench/harness/postbase program.
	postbase string
}

func run() error {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/jazz", "the jazz binary to measure")
	flag.IntVar(&o.n, "n", 30, "measured runs per scenario")
	flag.IntVar(&o.warmup, "warmup", 3, "unmeasured runs per scenario first (page cache, CPU frequency)")
	flag.BoolVar(&o.strict, "strict", false, "exit 1 when a target is missed")
	flag.IntVar(&o.historyRuns, "history-runs", 3, "runs per oversized-history scenario")
	flag.BoolVar(&o.quick, "quick", false, "only the one-turn scenarios, the POST baseline and the per-call cost")
	flag.StringVar(&o.base, "base", "", "a binary to compare with: its one-turn and 100-call runs are interleaved with -bin's")
	flag.Parse()
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	if o.base != "" {
		if o.base, err = filepath.Abs(o.base); err != nil {
			return err
		}
		if _, err := os.Stat(o.base); err != nil {
			return fmt.Errorf("no base binary at %s: %w", o.base, err)
		}
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("no binary at %s (run `make build` first): %w", bin, err)
	}

	srv := chatserver.NewFunc(respond)
	defer srv.Close()

	scratch, err := os.MkdirTemp("", "jazz-bench-postbase-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	o.postbase = filepath.Join(scratch, "postbase")
	build := exec.Command("go", "build", "-o", o.postbase, "github.com/jazz-run/jazz/bench/harness/postbase")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the baseline program (run the harness from the jazz checkout): %w\n%s", err, out)
	}

	home, err := os.MkdirTemp("", "jazz-bench-home-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	cwd, err := os.MkdirTemp("", "jazz-bench-cwd-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cwd)
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"maxRetries":0}`), 0o600); err != nil {
		return err
	}
	for i := range smallFiles {
		body := strings.Repeat(fmt.Sprintf("line %d of a small file\n", i), 20)
		if err := os.WriteFile(filepath.Join(cwd, fmt.Sprintf("f%03d.txt", i)), []byte(body), 0o644); err != nil {
			return err
		}
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "JAZZ_HOME=" + home,
		"OPENAI_BASE_URL=" + srv.URL(), "OPENAI_API_KEY=bench", "NO_COLOR=1"}
	j := jazz{bin: bin, cwd: cwd, env: env}
	created, err := j.exec("agent", "create", "--name", "bench", "--model", "openai/gpt-4o-mini", "--tools", "read_file,ls")
	if err != nil {
		return fmt.Errorf("create agent: %w", err)
	}
	agentID := strings.TrimSpace(created.stdout)

	// Interleaved, so a change of the machine's load hits all alike; (c)
	// subtracts the one-turn run from the 100-call run, so those two
	// especially must be measured side by side.
	turn, err := j.measureOneTurn(o, srv)
	if err != nil {
		return err
	}
	one, evAll, base, hundred := turn.plain, turn.events, turn.minimal, turn.hundred
	ten := stats{}
	if !o.quick {
		if ten, err = j.measure(o, promptTen); err != nil {
			return err
		}
	}
	handlers, err := handlerCost(o.n, cwd)
	if err != nil {
		return err
	}
	perCall := overheadPerCall(hundred.median, one.median, handlers)
	var mcpRes mcpResults
	if !o.quick {
		if mcpRes, err = j.measureMCP(o, home); err != nil {
			return err
		}
	}
	var histories []historyRun
	sizes := []int{100 << 20, 12 << 20}
	if o.quick {
		sizes = nil
	}
	for _, size := range sizes {
		h, err := j.history(srv, home, agentID, size, o.historyRuns)
		if err != nil {
			return err
		}
		histories = append(histories, h)
	}

	fmt.Printf("jazz run --json, cold process, %d runs each (after %d warm-up), instant provider on 127.0.0.1\n\n", o.n, o.warmup)
	fmt.Printf("%-34s %10s %10s %10s   %s\n", "scenario", "median", "p90", "peak RSS", "target")
	missed := 0
	row := func(name string, s stats, target string, ok bool) {
		mark := "ok"
		if !ok {
			mark = "MISSED"
			missed++
		}
		fmt.Printf("%-34s %10s %10s %9.1fM   %s %s\n", name, ms(s.median), ms(s.p90), float64(s.rss)/(1<<20), target, mark)
	}
	row("(a) one-turn answer", one, "≤ 30 ms median, ≤ 30 MB RSS", one.median <= targetOneTurn && one.rss <= targetOneTurnRSS)
	row("    same, --events all", evAll, fmt.Sprintf("≤ +%s median", targetEventsAdd), evAll.median-one.median <= targetEventsAdd)
	row("    Go program, one loopback POST", base, "(baseline: bench/harness/postbase)", true)
	row("    same POST from the harness binary", turn.post, "(the baseline of reports before 2026-12-02)", true)
	fmt.Printf("%-34s %10s %10s %10s   max %s plain, %s --events all (%d runs)\n", "", "", "", "", ms(one.max), ms(evAll.max), o.n)
	fmt.Printf("%-34s %10s %10s %10s   p50 difference; max difference %s\n", "    --events all − plain", signedMs(evAll.median-one.median), "", "", signedMs(evAll.max-one.max))
	ratio := func(s stats) float64 { return float64(s.median) / float64(base.median) }
	for _, r := range []struct {
		name string
		s    stats
	}{{"    ratio to the POST, plain", one}, {"    ratio to the POST, --events all", evAll}} {
		mark := "ok"
		if ratio(r.s) > targetRatio {
			mark = "MISSED"
			missed++
		}
		fmt.Printf("%-34s %9.2fx %10s %10s   ≤ %.1fx %s (to the harness binary's POST: %.2fx)\n", r.name, ratio(r.s), "", "", targetRatio, mark,
			float64(r.s.median)/float64(turn.post.median))
	}
	if o.base != "" {
		fmt.Printf("%-34s %10s %10s %9.1fM   max %s, ratio %.2fx\n", "    -base, one-turn", ms(turn.basePlain.median), ms(turn.basePlain.p90),
			float64(turn.basePlain.rss)/(1<<20), ms(turn.basePlain.max), ratio(turn.basePlain))
		fmt.Printf("%-34s %10s %10s %9.1fM   max %s, ratio %.2fx\n", "    -base, --events all", ms(turn.baseEvents.median), ms(turn.baseEvents.p90),
			float64(turn.baseEvents.rss)/(1<<20), ms(turn.baseEvents.max), ratio(turn.baseEvents))
		fmt.Printf("%-34s %10s %10s %10s   p50 difference, --events all %s\n", "    -bin − -base, plain", signedMs(one.median-turn.basePlain.median), "", "",
			signedMs(evAll.median-turn.baseEvents.median))
	}
	if !o.quick {
		row("(b) 10 parallel read_file/ls", ten, "≤ 40 ms median", ten.median <= targetTenCalls)
	}
	row("    100 read_file calls", hundred, "(input to c)", true)
	fmt.Printf("%-34s %10s\n", "    100 handler calls in-process", us(handlers))
	mark := "ok"
	if perCall > targetPerCall {
		mark = "MISSED"
		missed++
	}
	fmt.Printf("%-34s %10s %10s %10s   ≤ %s %s\n", "(c) runtime overhead per call", us(perCall), "", "", us(targetPerCall), mark)
	fmt.Printf("%-34s %10s %10s %10s   (not a target: CPU, which load skews less than wall)\n", "    same from the child's CPU time",
		us(overheadPerCall(hundred.cpu, one.cpu, handlers)), "", "")
	if o.base != "" {
		bh := turn.baseHundred
		fmt.Printf("%-34s %10s %10s %9.1fM\n", "    -base, 100 read_file calls", ms(bh.median), ms(bh.p90), float64(bh.rss)/(1<<20))
		fmt.Printf("%-34s %10s %10s %10s   CPU %s; -bin − -base %s (CPU %s)\n", "    -base, (c)", us(overheadPerCall(bh.median, turn.basePlain.median, handlers)), "", "",
			us(overheadPerCall(bh.cpu, turn.basePlain.cpu, handlers)),
			signedUs(overheadPerCall(hundred.median, one.median, handlers)-overheadPerCall(bh.median, turn.basePlain.median, handlers)),
			signedUs(overheadPerCall(hundred.cpu, one.cpu, handlers)-overheadPerCall(bh.cpu, turn.basePlain.cpu, handlers)))
	}
	fmt.Println("\n(c) = (median 100-call run − median one-turn run − 100 handler calls in-process) / 100;")
	fmt.Println("    it includes the second model round trip that carries the 100 results. The two runs")
	fmt.Println("    alternate in one loop. The CPU line uses the child's user+sys time for both runs.")
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("\nload average while measured (1, 5, 15 min): %s\n", strings.Join(strings.Fields(string(load))[:3], " "))
	}
	if o.quick {
		return nil
	}
	mcpRes.print(one)
	fmt.Printf("\n--conversation with one stored conversation, %d runs each (history rewritten before each)\n", o.historyRuns)
	fmt.Printf("%-34s %10s %10s %14s\n", "history file", "median", "peak RSS", "sent to model")
	for _, h := range histories {
		fmt.Printf("%-34s %10s %9.1fM %13.1fM\n", fmt.Sprintf("%d MiB", h.size>>20), ms(h.median), float64(h.rss)/(1<<20), float64(h.sent)/(1<<20))
	}
	if missed > 0 && o.strict {
		return fmt.Errorf("%d target(s) missed", missed)
	}
	return nil
}

// respond scripts the model: the prompt picks how many file calls the
// first turn asks for; a request that holds tool results gets the answer.
func respond(_ int, req chatserver.Request) chatserver.Turn {
	if req.Messages != nil && firstUser(req) == promptMCP {
		return respondMCP(req)
	}
	if len(req.ToolMessages()) > 0 {
		return chatserver.Turn{Text: "done"}
	}
	var n int
	switch req.LastUser() {
	case promptTen:
		n = 10
	case promptHundred:
		n = 100
	default:
		return chatserver.Turn{Text: "4"}
	}
	calls := make([]chatserver.Call, n)
	for i := range calls {
		name := "read_file"
		args := chatserver.JSONArgs(map[string]string{"path": fmt.Sprintf("f%03d.txt", i%smallFiles)})
		if n == 10 && i%2 == 1 {
			name, args = "ls", `{"path":"."}`
		}
		calls[i] = chatserver.Call{ID: fmt.Sprintf("call_%03d", i), Name: name, Arguments: args}
	}
	return chatserver.Turn{Calls: calls}
}

// spawnEnv switches the harness binary into a wrapper that runs the
// command in its arguments and writes the child's peak RSS (KiB) to the
// file the variable names. Linux counts the memory of the process that
// starts a child in the child's peak RSS (the exec happens inside the
// parent's address space), so a child the harness starts after holding a
// 100 MB history would look 100 MB bigger; this small fresh process
// starts it instead.
const spawnEnv = "JAZZ_BENCH_SPAWN_RSS"

func spawn() int {
	out := os.Getenv(spawnEnv)
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, spawnEnv+"=") })
	err := cmd.Run()
	if kib, ok := maxRSSKiB(cmd.ProcessState); ok {
		_ = os.WriteFile(out, []byte(fmt.Sprint(kib)), 0o600)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return 1
	}
	return 0
}

type jazz struct {
	bin, cwd string
	env      []string
}

type sample struct {
	wall   time.Duration
	cpu    time.Duration // the child's user + system time
	rss    int64         // bytes
	stdout string
}

// exec runs the binary; its peak RSS is exact only while the harness
// itself is small (see spawnEnv, which execWrapped uses).
func (j jazz) exec(args ...string) (sample, error) { return j.run(false, args) }

// execWrapped runs the binary through a fresh wrapper process, so its
// peak RSS is its own whatever the harness holds; the wall time includes
// the wrapper's start.
func (j jazz) execWrapped(args ...string) (sample, error) { return j.run(true, args) }

func (j jazz) run(wrapped bool, args []string) (sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, j.bin, args...)
	cmd.Dir, cmd.Env = j.cwd, j.env
	var rssFile string
	if wrapped {
		self, err := os.Executable()
		if err != nil {
			return sample{}, err
		}
		f, err := os.CreateTemp("", "jazz-bench-rss-")
		if err != nil {
			return sample{}, err
		}
		f.Close()
		rssFile = f.Name()
		defer os.Remove(rssFile)
		cmd = exec.CommandContext(ctx, self, append([]string{j.bin}, args...)...)
		cmd.Dir, cmd.Env = j.cwd, append(slices.Clone(j.env), spawnEnv+"="+rssFile)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return sample{}, fmt.Errorf("jazz %s: %w\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	s := sample{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), stdout: out.String()}
	if kib, ok := maxRSSKiB(cmd.ProcessState); ok && !wrapped {
		s.rss = kib * 1024
	}
	if kib, err := os.ReadFile(rssFile); wrapped && err == nil {
		n, _ := strconv.ParseInt(string(kib), 10, 64)
		s.rss = n * 1024
	}
	if len(args) > 0 && args[0] == "run" {
		var env struct {
			OK        bool              `json:"ok"`
			Error     string            `json:"error"`
			ToolCalls []json.RawMessage `json:"toolCalls"`
		}
		if err := json.Unmarshal(out.Bytes(), &env); err != nil || !env.OK {
			return s, fmt.Errorf("jazz run did not succeed (%v): %s", err, out.String())
		}
	}
	return s, nil
}

type stats struct {
	median, p90, max time.Duration
	cpu              time.Duration // median of the child's CPU time, when known
	rss              int64
}

// oneTurn is what measureOneTurn measured; the base fields are zero
// without -base.
type oneTurn struct {
	plain, events, post, hundred stats
	// minimal is bench/harness/postbase: the same POST from a program
	// that links net/http and nothing else; post is the harness binary
	// itself making it, the yardstick of earlier reports.
	minimal                            stats
	basePlain, baseEvents, baseHundred stats
}

// measureOneTurn measures the one-turn run plain, with --events all, the
// baseline POST and the 100-call run, one of each in turn (and the -base
// binary's runs beside them).
func (j jazz) measureOneTurn(o options, srv *chatserver.Server) (oneTurn, error) {
	url := srv.URL()
	self, err := os.Executable()
	if err != nil {
		return oneTurn{}, err
	}
	plainArgs := []string{"run", "--agent", "bench", "--json", "--no-stream", promptOne}
	eventArgs := []string{"run", "--agent", "bench", "--json", "--no-stream", "--events", "all", promptOne}
	hundredArgs := []string{"run", "--agent", "bench", "--json", "--no-stream", promptHundred}
	bj := j
	bj.bin = o.base
	var sp, se, sh, sbp, sbe, sbh []sample
	var wb, wm []time.Duration
	for i := range o.warmup + o.n {
		// A child's peak RSS counts the harness's own memory at the fork
		// (see spawnEnv): the 100-call runs' requests, kept by the server,
		// would grow it run by run, so they are dropped and freed first.
		srv.Forget()
		debug.FreeOSMemory()
		p, err := j.exec(plainArgs...)
		if err != nil {
			return oneTurn{}, err
		}
		e, err := j.exec(eventArgs...)
		if err != nil {
			return oneTurn{}, err
		}
		var bp, be, bh sample
		if o.base != "" {
			if bp, err = bj.exec(plainArgs...); err != nil {
				return oneTurn{}, fmt.Errorf("base: %w", err)
			}
			if be, err = bj.exec(eventArgs...); err != nil {
				return oneTurn{}, fmt.Errorf("base: %w", err)
			}
		}
		b, err := timeCmd(self, append(slices.Clone(j.env), postEnv+"="+url))
		if err != nil {
			return oneTurn{}, err
		}
		m, err := timeCmd(o.postbase, append(slices.Clone(j.env), postEnv+"="+url))
		if err != nil {
			return oneTurn{}, err
		}
		h, err := j.exec(hundredArgs...)
		if err != nil {
			return oneTurn{}, err
		}
		if o.base != "" {
			if bh, err = bj.exec(hundredArgs...); err != nil {
				return oneTurn{}, fmt.Errorf("base: %w", err)
			}
		}
		if i < o.warmup {
			continue
		}
		sp, se, sh, wb = append(sp, p), append(se, e), append(sh, h), append(wb, b)
		wm = append(wm, m)
		sbp, sbe, sbh = append(sbp, bp), append(sbe, be), append(sbh, bh)
	}
	r := oneTurn{plain: summarizeRuns(sp), events: summarizeRuns(se), hundred: summarizeRuns(sh), post: summarize(wb, 0), minimal: summarize(wm, 0)}
	if o.base != "" {
		r.basePlain, r.baseEvents, r.baseHundred = summarizeRuns(sbp), summarizeRuns(sbe), summarizeRuns(sbh)
	}
	return r, nil
}

// summarizeRuns is summarize for the binary's runs: wall times, the
// median CPU time and the peak RSS.
func summarizeRuns(ss []sample) stats {
	var walls, cpus []time.Duration
	var rss int64
	for _, s := range ss {
		walls, cpus = append(walls, s.wall), append(cpus, s.cpu)
		rss = max(rss, s.rss)
	}
	st := summarize(walls, rss)
	st.cpu = summarize(cpus, 0).median
	return st
}

// overheadPerCall is (c): what a 100-call run costs beyond a one-turn run
// and the 100 handler calls themselves, per call.
func overheadPerCall(hundred, one, handlers time.Duration) time.Duration {
	return (hundred - one - handlers) / 100
}

// postEnv switches the harness binary into the baseline: a Go program
// that makes the one POST a one-turn run makes, to the URL it names, and
// reads the answer.
const postEnv = "JAZZ_BENCH_POST"

func post(url string) int {
	body := chatserver.JSONArgs(map[string]any{"model": "gpt-4o-mini",
		"messages": []map[string]string{{"role": "user", "content": promptOne}}})
	req, err := http.NewRequest(http.MethodPost, url+"/chat/completions", strings.NewReader(body))
	if err != nil {
		return 1
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer bench")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"4"`)) {
		fmt.Fprintf(os.Stderr, "baseline POST: %d %v %s\n", resp.StatusCode, err, b)
		return 1
	}
	return 0
}

func timeCmd(bin string, env []string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("baseline: %w: %s", err, errb.String())
	}
	return time.Since(start), nil
}

func (j jazz) measure(o options, prompt string) (stats, error) {
	var walls []time.Duration
	var rss int64
	for i := range o.warmup + o.n {
		s, err := j.exec("run", "--agent", "bench", "--json", "--no-stream", prompt)
		if err != nil {
			return stats{}, err
		}
		if i < o.warmup {
			continue
		}
		walls = append(walls, s.wall)
		rss = max(rss, s.rss)
	}
	return summarize(walls, rss), nil
}

func summarize(walls []time.Duration, rss int64) stats {
	slices.Sort(walls)
	if len(walls) == 0 {
		return stats{}
	}
	pick := func(q float64) time.Duration {
		i := int(q*float64(len(walls)-1) + 0.5)
		return walls[i]
	}
	return stats{median: pick(0.5), p90: pick(0.9), max: walls[len(walls)-1], rss: rss}
}

// historyRun is the oversized-history scenario's result.
type historyRun struct {
	size   int
	median time.Duration
	rss    int64
	sent   int // bytes of the model request
}

// history stores one conversation of about size bytes (user and assistant
// messages of 512 KiB) as the agent's history file and runs one turn of it
// runs times, writing the file afresh before each (a save may move or
// rewrite it): what the run holds in memory and sends to the model.
func (j jazz) history(srv *chatserver.Server, home, agentID string, size, runs int) (historyRun, error) {
	filler := strings.Repeat("x", 512<<10)
	var msgs []map[string]string
	for i := 0; len(msgs)*(len(filler)+64) < size; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]string{"role": role, "content": filler})
	}
	doc := map[string]any{"agentId": agentID, "conversations": []map[string]any{{
		"conversationId": "big", "title": "big", "agentId": agentID, "startedAt": "2025-01-01T00:00:00.000Z",
		"messageCount": len(msgs), "messages": msgs}}}
	data, err := json.Marshal(doc)
	if err != nil {
		return historyRun{}, err
	}
	dir := filepath.Join(home, "history")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return historyRun{}, err
	}
	h := historyRun{size: len(data)}
	var walls []time.Duration
	for range runs {
		leftovers, _ := filepath.Glob(filepath.Join(dir, agentID+".json*"))
		for _, f := range leftovers {
			_ = os.Remove(f)
		}
		if err := os.WriteFile(filepath.Join(dir, agentID+".json"), data, 0o600); err != nil {
			return historyRun{}, err
		}
		before := len(srv.Requests())
		s, err := j.execWrapped("run", "--agent", "bench", "--json", "--no-stream", "--conversation", "big", promptOne)
		if err != nil {
			return historyRun{}, err
		}
		walls = append(walls, s.wall)
		h.rss = max(h.rss, s.rss)
		if reqs := srv.Requests(); len(reqs) > before {
			h.sent = max(h.sent, len(reqs[len(reqs)-1].Raw))
		}
	}
	h.median = summarize(walls, 0).median
	return h, nil
}

// handlerCost is the median time of the same 100 read_file handler calls
// the 100-call scenario makes, run directly in this process.
func handlerCost(runs int, cwd string) (time.Duration, error) {
	var read *tools.Tool
	for _, t := range readtools.Tools() {
		if t.Name == "read_file" {
			read = &t
			break
		}
	}
	if read == nil {
		return 0, errors.New("readtools has no read_file")
	}
	env := &tools.Env{WorkDir: cwd}
	args := make([]json.RawMessage, smallFiles)
	for i := range args {
		args[i] = json.RawMessage(chatserver.JSONArgs(map[string]string{"path": fmt.Sprintf("f%03d.txt", i)}))
	}
	var walls []time.Duration
	for range runs + 3 {
		start := time.Now()
		for _, a := range args {
			if r := read.Handler(context.Background(), env, a); !r.Success {
				return 0, fmt.Errorf("read_file %s: %s", a, r.Error)
			}
		}
		walls = append(walls, time.Since(start))
	}
	return summarize(walls[3:], 0).median, nil
}

func signedUs(d time.Duration) string {
	if d >= 0 {
		return "+" + us(d)
	}
	return us(d)
}

func signedMs(d time.Duration) string {
	if d >= 0 {
		return "+" + ms(d)
	}
	return ms(d)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1000) }
