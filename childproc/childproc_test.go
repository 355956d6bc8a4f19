package childproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/jazz-run/jazz/internal/testutil/syncbuf"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a process that starts a daemonizing
// program under a reaper, prints the reaper's pid and waits to be killed.
const helperEnv = "CHILDPROC_TEST_HELPER"

func TestMain(m *testing.M) {
	if link := os.Getenv(helperEnv); link != "" {
		p, err := Start(Spec{Argv: []string{"sh", "-c", daemonScript(link)}, Env: []string{"PATH=/usr/bin:/bin"}})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Println(p.Pid())
		select {}
	}
	os.Exit(m.Run())
}

// daemonScript leaves three sleepers behind (one in the group, one in a
// session of its own, one double-forked), says ready, then waits on stdin.
func daemonScript(link string) string {
	return fmt.Sprintf("%[1]q 60 & setsid %[1]q 60 & ( %[1]q 60 & ) ; echo ready; cat >/dev/null", link)
}

// marker links sleep under a unique name, to find its processes in /proc.
func marker(t *testing.T) (link, name string) {
	t.Helper()
	bin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid binary")
	}
	// Short enough to be the whole comm field (15 bytes) of /proc/<pid>/stat.
	name = fmt.Sprintf("jzc%09d", time.Now().UnixNano()%1e9)
	link = filepath.Join(t.TempDir(), name)
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	return link, name
}

// alive counts live processes running the marker name (the shells whose
// command lines merely mention it do not count).
func alive(t *testing.T, name string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || end < open || len(stat) < end+3 || stat[end+2] == 'Z' || stat[end+2] == 'X' {
			continue
		}
		if string(stat[open+1:end]) == name {
			n++
		}
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func startDaemons(t *testing.T, noCgroup bool) (*Proc, string) {
	t.Helper()
	link, name := marker(t)
	p, err := Start(Spec{Argv: []string{"sh", "-c", daemonScript(link)}, Env: []string{"PATH=/usr/bin:/bin"}, NoCgroup: noCgroup})
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("read ready: %q, %v", line, err)
	}
	waitFor(t, "three sleepers", func() bool { return alive(t, name) == 3 })
	return p, name
}

// Whatever the program started, in its group or not, is gone when Stop
// returns: with the cgroup, and with the reaper's sweep alone.
func TestStopEndsTheWholeTree(t *testing.T) {
	for _, noCgroup := range []bool{false, true} {
		t.Run(fmt.Sprintf("noCgroup=%v", noCgroup), func(t *testing.T) {
			p, name := startDaemons(t, noCgroup)
			t.Logf("tracking: %s", p.Tracking())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			// cat ends on stdin's close: the polite path, no signal needed.
			if err := p.Stop(ctx, 2*time.Second); err != nil {
				t.Fatal(err)
			}
			if n := alive(t, name); n != 0 {
				t.Fatalf("%d processes left after Stop", n)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("a polite stop took %v", took)
			}
			if e := p.Exit(); e != "" {
				t.Errorf("Exit = %q, want a clean exit", e)
			}
		})
	}
}

// A program that ignores its closed stdin and SIGTERM is killed.
func TestStopKillsAStubbornProgram(t *testing.T) {
	link, name := marker(t)
	p, err := Start(Spec{Argv: []string{"sh", "-c", fmt.Sprintf("trap '' TERM; %q 60 & echo ready; while :; do sleep 1; done", link)}, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(p.Stdout()).ReadString('\n'); line != "ready\n" {
		t.Fatalf("read ready: %q", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := p.Stop(ctx, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if n := alive(t, name); n != 0 {
		t.Fatalf("%d processes left", n)
	}
	if !strings.HasPrefix(p.Exit(), "killed by") {
		t.Errorf("Exit = %q, want a kill", p.Exit())
	}
}

func TestKillIsImmediate(t *testing.T) {
	p, name := startDaemons(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if n := alive(t, name); n != 0 {
		t.Fatalf("%d processes left after Kill", n)
	}
	if p.ExitCode() != 128+int(syscall.SIGKILL) {
		t.Errorf("ExitCode = %d, want 137", p.ExitCode())
	}
}

// A program that exits by itself leaves nothing behind either.
func TestExitedProgramLeavesNothing(t *testing.T) {
	link, name := marker(t)
	var stderr syncbuf.Buffer
	p, err := Start(Spec{Argv: []string{"sh", "-c", fmt.Sprintf("setsid %q 60 & echo oops >&2; exit 3", link)}, Env: []string{"PATH=/usr/bin:/bin"}, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the reaper did not exit after its program")
	}
	if n := alive(t, name); n != 0 {
		t.Fatalf("%d processes left", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.Stop(ctx, time.Second)
	if p.Exit() != "exit status 3" || p.ExitCode() != 3 {
		t.Errorf("Exit = %q (%d)", p.Exit(), p.ExitCode())
	}
	if got := stderr.String(); got != "oops\n" {
		t.Errorf("stderr = %q", got)
	}
}

// When jazz dies without stopping anything, the reaper is told and
// sweeps the tree anyway.
func TestJazzDeathSweepsTheTree(t *testing.T) {
	link, name := marker(t)
	helper := exec.Command(os.Args[0])
	helper.Env = append(os.Environ(), helperEnv+"="+link)
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if _, perr := strconv.Atoi(strings.TrimSpace(line)); err != nil || perr != nil {
		_ = helper.Process.Kill()
		t.Fatalf("helper said %q (%v)", line, err)
	}
	waitFor(t, "three sleepers", func() bool { return alive(t, name) == 3 })
	_ = helper.Process.Kill()
	_ = helper.Wait()
	waitFor(t, "the sleepers to go", func() bool { return alive(t, name) == 0 })
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "tool")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := LookPath("tool", "/nonexistent:"+dir, ""); err != nil || got != exe {
		t.Errorf("LookPath(tool) = %q, %v", got, err)
	}
	// An empty entry (the working directory) is never searched.
	if _, err := LookPath("tool", ":/nonexistent", dir); !errors.Is(err, ErrNotFound) {
		t.Errorf("empty PATH entry searched: %v", err)
	}
	if _, err := LookPath("plain", dir, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("non-executable found: %v", err)
	}
	if got, err := LookPath("./tool", "", dir); err != nil || got != exe {
		t.Errorf("LookPath(./tool) = %q, %v", got, err)
	}
	if _, err := Start(Spec{Argv: []string{"no-such-program-jz"}, Env: []string{"PATH=" + dir}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Start of a missing program: %v", err)
	}
}
