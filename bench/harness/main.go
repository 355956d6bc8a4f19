// Command harness measures cold `jazz run --json` invocations of a built
// binary against an instant in-process Chat Completions server on
// 127.0.0.1: wall time (median, p90) and the child's peak RSS, for a
// one-turn answer and a turn of 10 parallel file tools, and the runtime's
// own cost per tool call from a 100-call turn, minus the same 100
// read_file handler calls measured in-process.
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
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/readtools"
)

// Targets (issue 2).
const (
	targetOneTurn    = 30 * time.Millisecond
	targetOneTurnRSS = 30 << 20
	targetTenCalls   = 40 * time.Millisecond
	targetPerCall    = 50 * time.Microsecond
)

// Prompts select the scripted conversation.
const (
	promptOne     = "bench: one turn"
	promptTen     = "bench: ten calls"
	promptHundred = "bench: hundred calls"
	smallFiles    = 100
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(1)
	}
}

type options struct {
	bin    string
	n      int
	warmup int
	strict bool
}

func run() error {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/jazz", "the jazz binary to measure")
	flag.IntVar(&o.n, "n", 30, "measured runs per scenario")
	flag.IntVar(&o.warmup, "warmup", 3, "unmeasured runs per scenario first (page cache, CPU frequency)")
	flag.BoolVar(&o.strict, "strict", false, "exit 1 when a target is missed")
	flag.Parse()
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("no binary at %s (run `make build` first): %w", bin, err)
	}

	srv := chatserver.NewFunc(respond)
	defer srv.Close()

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
	if _, err := j.exec("agent", "create", "--name", "bench", "--model", "openai/gpt-4o-mini", "--tools", "read_file,ls"); err != nil {
		return fmt.Errorf("create agent: %w", err)
	}

	one, err := j.measure(o, promptOne)
	if err != nil {
		return err
	}
	ten, err := j.measure(o, promptTen)
	if err != nil {
		return err
	}
	hundred, err := j.measure(o, promptHundred)
	if err != nil {
		return err
	}
	handlers, err := handlerCost(o.n, cwd)
	if err != nil {
		return err
	}
	perCall := (hundred.median - one.median - handlers) / 100

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
	row("(b) 10 parallel read_file/ls", ten, "≤ 40 ms median", ten.median <= targetTenCalls)
	row("    100 read_file calls", hundred, "(input to c)", true)
	fmt.Printf("%-34s %10s\n", "    100 handler calls in-process", us(handlers))
	mark := "ok"
	if perCall > targetPerCall {
		mark = "MISSED"
		missed++
	}
	fmt.Printf("%-34s %10s %10s %10s   ≤ 50 µs %s\n", "(c) runtime overhead per call", us(perCall), "", "", mark)
	fmt.Println("\n(c) = (median 100-call run − median one-turn run − 100 handler calls in-process) / 100;")
	fmt.Println("    it includes the second model round trip that carries the 100 results.")
	if missed > 0 && o.strict {
		return fmt.Errorf("%d target(s) missed", missed)
	}
	return nil
}

// respond scripts the model: the prompt picks how many file calls the
// first turn asks for; a request that holds tool results gets the answer.
func respond(_ int, req chatserver.Request) chatserver.Turn {
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

type jazz struct {
	bin, cwd string
	env      []string
}

type sample struct {
	wall time.Duration
	rss  int64 // bytes
}

func (j jazz) exec(args ...string) (sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, j.bin, args...)
	cmd.Dir, cmd.Env = j.cwd, j.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return sample{}, fmt.Errorf("jazz %s: %w\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	var s sample
	s.wall = wall
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.rss = int64(ru.Maxrss) * 1024 // Linux reports KiB
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
	median, p90 time.Duration
	rss         int64
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
	return stats{median: pick(0.5), p90: pick(0.9), rss: rss}
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
	env := &tools.Env{Dir: tools.NewWorkDir(cwd)}
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

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1000) }
