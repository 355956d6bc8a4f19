// Package proctree ends every process a command started, including those
// that left its process group (setsid, a double fork, `nohup … &`). Two
// mechanisms, used together where both exist:
//
//   - a cgroup v2 of the command's own (Cgroup), made by the parent below
//     its own cgroup when the hierarchy lets it: every descendant stays in
//     it whatever it does with sessions or groups, and cgroup.kill ends
//     them all at once, even when the command's shell died first;
//   - a child subreaper (BecomeSubreaper, Sweep): orphaned descendants are
//     reparented to the command's shell process instead of init, so the
//     shell can find every one of them by walking /proc and kill them
//     before it exits.
//
// Linux only: on other systems Descendants and Sweep find nothing and
// NewCgroup fails, so the caller's process-group kills are all there is.
package proctree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// proc is one line of /proc/<pid>/stat, the fields this package needs.
type proc struct {
	pid, ppid, pgrp int
	zombie          bool
}

// readStat parses /proc/<pid>/stat. The command name is parenthesised and
// may itself hold spaces and parentheses, so the fields after it are found
// from the last ')'.
func readStat(pid int) (proc, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, err
	}
	return parseStat(b)
}

func parseStat(b []byte) (proc, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return proc{}, errors.New("malformed /proc stat line")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return proc{}, fmt.Errorf("malformed /proc stat pid: %w", err)
	}
	f := bytes.Fields(b[end+1:])
	if len(f) < 3 {
		return proc{}, errors.New("malformed /proc stat line")
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return proc{}, errors.New("malformed /proc stat fields")
	}
	return proc{pid: pid, ppid: ppid, pgrp: pgrp, zombie: f[0][0] == 'Z' || f[0][0] == 'X'}, nil
}

// snapshot reads every process in /proc. Processes that end while it
// reads are skipped.
func snapshot() ([]proc, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	out := make([]proc, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		if p, err := readStat(pid); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// Descendants lists the live (not yet exited) descendants of pid, from
// one reading of /proc.
func Descendants(pid int) ([]int, error) {
	all, err := snapshot()
	if err != nil {
		return nil, err
	}
	return descendantsOf(pid, all), nil
}

func descendantsOf(pid int, all []proc) []int {
	kids := map[int][]proc{}
	for _, p := range all {
		kids[p.ppid] = append(kids[p.ppid], p)
	}
	var out []int
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, k := range kids[cur] {
			if seen[k.pid] {
				continue
			}
			seen[k.pid] = true
			queue = append(queue, k.pid)
			if !k.zombie {
				out = append(out, k.pid)
			}
		}
	}
	return out
}

// GroupMembers counts the live processes of process group pgid.
func GroupMembers(pgid int) int {
	all, err := snapshot()
	if err != nil {
		return 0
	}
	n := 0
	for _, p := range all {
		if p.pgrp == pgid && !p.zombie {
			n++
		}
	}
	return n
}

// Sweep kills every descendant of the calling process with SIGKILL and
// reaps them, and says how many live processes it had to kill. The caller
// must be a subreaper (BecomeSubreaper), so that descendants whose parents
// died are its children and can be found and reaped, and must have no
// other wait in progress (Sweep reaps any child). Each round kills
// everything alive at its reading of /proc, so a tree that forks while it
// is killed shrinks to nothing; Sweep returns when the caller has no
// children left, or with an error when ctx ends first.
func Sweep(ctx context.Context) (int, error) {
	self := os.Getpid()
	killed := map[int]bool{}
	for {
		if reapAll() {
			return len(killed), nil
		}
		pids, err := Descendants(self)
		if err != nil {
			return len(killed), err
		}
		for _, p := range pids {
			if kill(p) == nil {
				killed[p] = true
			}
		}
		// Give the kills (and processes between fork and /proc) a moment.
		if err := pause(ctx, time.Millisecond); err != nil {
			return len(killed), err
		}
	}
}

func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Running says whether pid is a live process: not gone, and not a zombie
// whose parent has yet to reap it.
func Running(pid int) bool {
	p, err := readStat(pid)
	if err == nil {
		return !p.zombie
	}
	if _, perr := os.Stat("/proc/self/stat"); perr != nil {
		return processAlive(pid) // no /proc here: signal 0 is all there is
	}
	return false
}

// Matching describes ("pid: command line") every live process whose
// command line contains substr: how tests find what a command left, by a
// marker in a program's name or arguments.
func Matching(substr string) ([]string, error) {
	all, err := snapshot()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range all {
		if p.zombie {
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(substr)) {
			out = append(out, strconv.Itoa(p.pid)+": "+string(bytes.ReplaceAll(b, []byte{0}, []byte(" "))))
		}
	}
	return out, nil
}
