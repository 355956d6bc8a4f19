package shellguard

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestOracleEndsEveryDescendant: when the oracle's namespace child dies
// (go test kills a fuzz worker, whose death kills the child through
// Pdeathsig), every process a command started dies with it, also one that
// left the child's process group and session and was orphaned (`setsid
// -f`): a program of a fuzzed command must not outlive the test (a `grep
// -r a /` was seen running after CI).
func TestOracleEndsEveryDescendant(t *testing.T) {
	o := startOracle(t)
	// A sleep no other process runs, found by its command line.
	marker := fmt.Sprintf("%d.%d", 7000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	t.Cleanup(func() {
		for _, pid := range processesRunning("sleep", marker) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	r, err := o.run("setsid -f sleep " + marker)
	if err != nil || r.Err != "" {
		t.Fatalf("run: %v %s", err, r.Err)
	}
	waitFor(t, 10*time.Second, "the detached sleep to start", func() bool { return len(processesRunning("sleep", marker)) > 0 })
	if err := o.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the detached sleep to end with the oracle's child", func() bool { return len(processesRunning("sleep", marker)) == 0 })
}

// processesRunning are the pids of this machine's processes that run
// program (by any path: the oracle's shims exec it by its full path) with
// the arguments args.
func processesRunning(program string, args ...string) []int {
	want := []byte{}
	for _, a := range args {
		want = append(append(want, 0), a...)
	}
	want = append(want, 0)
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if name, rest, ok := bytes.Cut(b, []byte{0}); err == nil && ok && filepath.Base(string(name)) == program && bytes.Equal(append([]byte{0}, rest...), want) {
			out = append(out, pid)
		}
	}
	return out
}

// waitFor polls cond every 20 ms and fails the test if it does not hold
// within limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
