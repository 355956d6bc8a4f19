package proctree

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	cases := []struct {
		line string
		want proc
		ok   bool
	}{
		{"42 (sleep) S 7 42 42 0 -1", proc{pid: 42, ppid: 7, pgrp: 42}, true},
		// A command name with spaces and parentheses.
		{"43 (a) b (c) Z 1 9 9 0", proc{pid: 43, ppid: 1, pgrp: 9, zombie: true}, true},
		{"44 (x) X 2 3", proc{pid: 44, ppid: 2, pgrp: 3, zombie: true}, true},
		{"garbage", proc{}, false},
		{"45 (x) S", proc{}, false},
		{"x (y) S 1 2", proc{}, false},
	}
	for _, tc := range cases {
		got, err := parseStat([]byte(tc.line))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseStat(%q) = %+v, %v", tc.line, got, err)
		}
	}
}

func TestDescendantsOf(t *testing.T) {
	all := []proc{
		{pid: 10, ppid: 1}, {pid: 11, ppid: 10}, {pid: 12, ppid: 11},
		{pid: 13, ppid: 10, zombie: true}, {pid: 14, ppid: 13}, {pid: 20, ppid: 1},
	}
	got := descendantsOf(10, all)
	slices.Sort(got)
	if !slices.Equal(got, []int{11, 12, 14}) {
		t.Fatalf("descendants = %v", got)
	}
}

// marker links sleep under a unique name, to find its processes in /proc.
func marker(t *testing.T) (link, name string) {
	t.Helper()
	bin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	name = fmt.Sprintf("jzproctree%d", time.Now().UnixNano())
	link = filepath.Join(t.TempDir(), name)
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	return link, name
}

func alive(t *testing.T, name string) int {
	t.Helper()
	all, err := snapshot()
	if err != nil {
		t.Skip("no /proc")
	}
	n := 0
	for _, p := range all {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid))
		if !p.zombie && strings.Contains(string(b), name) {
			n++
		}
	}
	return n
}

// waitFor polls until cond holds or five seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// daemonize runs a shell that leaves three sleepers behind: one in its
// process group, one in a session of its own, one double-forked.
func daemonize(t *testing.T, attr *syscall.SysProcAttr) string {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid binary")
	}
	link, name := marker(t)
	cmd := exec.Command("sh", "-c", fmt.Sprintf("%[1]q 60 & setsid %[1]q 60 & ( %[1]q 60 & ) ; exit 0", link))
	cmd.SysProcAttr = attr
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three sleepers", func() bool { return alive(t, name) == 3 })
	return name
}

func TestCgroupKillsWhatLeftTheGroup(t *testing.T) {
	cg, err := NewCgroup()
	if err != nil {
		t.Skipf("no cgroup v2 to write here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	defer cg.Remove(ctx)
	name := daemonize(t, &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: cg.FD()})
	procs, err := cg.Procs()
	if err != nil || len(procs) != 3 {
		t.Fatalf("cgroup holds %v (%v), want the three sleepers", procs, err)
	}
	n, err := cg.Kill(ctx)
	if err != nil || n != 3 {
		t.Fatalf("Kill = %d, %v", n, err)
	}
	waitFor(t, "the sleepers to go", func() bool { return alive(t, name) == 0 })
	if err := cg.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cg.Dir()); !os.IsNotExist(err) {
		t.Fatalf("cgroup left behind: %v", err)
	}
	if n, err := cg.Kill(ctx); n != 0 || err == nil {
		// Its files are gone with it.
		t.Fatalf("Kill after Remove = %d, %v", n, err)
	}
}

// TestSweep makes this test process a subreaper (its own test binary, no
// other children) and sweeps what a daemonizing shell left.
func TestSweep(t *testing.T) {
	if err := BecomeSubreaper(); err != nil {
		t.Skip(err)
	}
	name := daemonize(t, &syscall.SysProcAttr{Setpgid: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := Sweep(ctx)
	if err != nil || n != 3 {
		t.Fatalf("Sweep = %d, %v; want 3 killed", n, err)
	}
	if left := alive(t, name); left != 0 {
		t.Fatalf("%d sleepers left", left)
	}
	// Nothing left: the next sweep returns at once.
	if n, err := Sweep(ctx); n != 0 || err != nil {
		t.Fatalf("second Sweep = %d, %v", n, err)
	}
}

func TestGroupMembers(t *testing.T) {
	link, name := marker(t)
	cmd := exec.Command("sh", "-c", fmt.Sprintf("%[1]q 60 & %[1]q 60 & wait", link))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }()
	// sh's own command line names the marker too.
	waitFor(t, "sh and two sleepers", func() bool { return alive(t, name) == 3 })
	if n := GroupMembers(cmd.Process.Pid); n != 3 {
		t.Fatalf("GroupMembers = %d, want 3 (sh and two sleepers)", n)
	}
}

func TestOwnCgroupParsing(t *testing.T) {
	cases := []struct {
		line, root, mount string
		ok                bool
	}{
		{"35 24 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate", "/", "/sys/fs/cgroup", true},
		{"35 24 0:30 /sub /mnt/cg\\040x rw - cgroup2 none rw", "/sub", "/mnt/cg x", true},
		{"36 24 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory", "", "", false},
		{"broken", "", "", false},
	}
	for _, tc := range cases {
		root, mount, ok := cgroup2Mount(tc.line)
		if ok != tc.ok || root != tc.root || mount != tc.mount {
			t.Errorf("cgroup2Mount(%q) = %q %q %v", tc.line, root, mount, ok)
		}
	}
}

// TestStaleCgroupsRemoved: an empty cgroup a finished jazz left is removed
// when the next one is made; a live process's, or one in use, is kept.
func TestStaleCgroupsRemoved(t *testing.T) {
	cg, err := NewCgroup()
	if err != nil {
		t.Skipf("no cgroup v2 to write here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	parent := filepath.Dir(cg.Dir())
	_ = cg.Remove(ctx)
	// A pid that is not running: a finished child's.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(parent, fmt.Sprintf("%s%d-abc", namePrefix, gone.Process.Pid))
	mine := filepath.Join(parent, fmt.Sprintf("%s%d-def", namePrefix, os.Getpid()))
	for _, d := range []string{stale, mine} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	defer os.Remove(mine)
	defer os.Remove(stale)
	next, err := NewCgroup()
	if err != nil {
		t.Fatal(err)
	}
	defer next.Remove(ctx)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale cgroup kept: %v", err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Fatalf("a live process's cgroup was removed: %v", err)
	}
}
