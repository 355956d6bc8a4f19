package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// stallReplay is a replayed model that makes a run write far more to
// stderr than a pipe holds: calls many tools at once, then answers.
func stallReplay(t *testing.T, dir string, calls int) string {
	t.Helper()
	var tc []map[string]any
	for i := range calls {
		tc = append(tc, map[string]any{"name": "ls", "arguments": map[string]any{"path": fmt.Sprintf("./%s", strings.Repeat("d", i%50))}})
	}
	script := map[string]any{"turns": []any{
		map[string]any{"text": strings.Repeat("thinking aloud ", 200), "toolCalls": tc},
		map[string]any{"text": "the payload answer"},
	}}
	b, _ := json.Marshal(script)
	p := filepath.Join(dir, "replay.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runStalled runs jazz with its stderr a pipe nobody reads (held open
// for the whole run, like a parent that stopped reading), and returns
// its stdout and exit code; it fails the test when jazz does not exit
// within bound.
func (w *jazzWorld) runStalled(t *testing.T, bound time.Duration, args ...string) (string, int, time.Duration) {
	t.Helper()
	path, err := exec.LookPath("jazz")
	if err != nil {
		t.Fatalf("no jazz on PATH: %v", err)
	}
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The smallest pipe the kernel makes (a page): what a run writes to
	// stderr in any mode fills it.
	if _, err := unix.FcntlInt(wr.Fd(), unix.F_SETPIPE_SZ, os.Getpagesize()); err != nil {
		t.Fatalf("shrink the pipe: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir, cmd.Env = w.wd, w.env
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, wr
	start := time.Now()
	err = cmd.Start()
	wr.Close() // the child holds the only write end
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("jazz %s, its stderr never read, did not exit within %v (stdout so far: %.200q)", strings.Join(args, " "), bound, stdout.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), code, took
}

// TestRunFinishesOnAStderrNobodyReads: `jazz run` whose stderr is a pipe
// nobody reads, writing more there than the pipe holds (events, the
// debug log, notices), still prints its payload on stdout and exits 0,
// within a bound, in every stderr mode: the JSON event stream, the text
// log, and both with --json's envelope.
func TestRunFinishesOnAStderrNobodyReads(t *testing.T) {
	linuxOnly(t)
	w := newJazzWorld(t)
	replay := stallReplay(t, w.out, 150)
	if _, stderr, code := w.jazz(30*time.Second, "agent", "create", "--name", "stall", "--model", "replay/"+replay, "--tools", "ls"); code != 0 {
		t.Fatalf("agent create: exit %d: %s", code, stderr)
	}
	const bound = 30 * time.Second
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"events", []string{"--events", "all", "--debug"}, "the payload answer\n"},
		{"text log", []string{"--debug"}, "the payload answer\n"},
		{"json events", []string{"--json", "--events", "all", "-v"}, `"answer":"the payload answer"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"run", "--agent", "stall", "--approval-policy", "read-only"}, c.args...)
			args = append(args, "list things")
			stdout, code, took := w.runStalled(t, bound, args...)
			if code != 0 {
				t.Errorf("exit %d, want 0; stdout %q", code, stdout)
			}
			if !strings.Contains(stdout, c.want) {
				t.Errorf("stdout %q lacks the payload %q", stdout, c.want)
			}
			t.Logf("exited %d in %v", code, took)
		})
	}
}

// TestRunStderrLinesAreWhole: with the event stream, the debug log (the
// actor engine's records among them) and the run's notices all writing
// to stderr at once, every line of it is one whole JSON object.
func TestRunStderrLinesAreWhole(t *testing.T) {
	w := newJazzWorld(t)
	replay := stallReplay(t, w.out, 150)
	if _, stderr, code := w.jazz(30*time.Second, "agent", "create", "--name", "whole", "--model", "replay/"+replay, "--tools", "ls"); code != 0 {
		t.Fatalf("agent create: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := w.jazz(60*time.Second, "run", "--agent", "whole", "--approval-policy", "read-only", "--events", "all", "--debug", "list things")
	if code != 0 || stdout != "the payload answer\n" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	types := map[string]int{}
	for _, l := range lines {
		var ev struct{ Type string }
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Type == "" {
			t.Fatalf("a stderr line is not one JSON event: %.200q", l)
		}
		types[ev.Type]++
	}
	// The check means something only if several writers wrote.
	if types["warning"] == 0 || types["tool_execution_complete"] < 150 {
		t.Errorf("too few writers to prove anything: %v", types)
	}
}
