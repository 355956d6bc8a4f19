package proctree

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Cgroup is a cgroup v2 made for one command, below the caller's own.
// Start the command's first process in it (FD, for clone3's
// CLONE_INTO_CGROUP); every process it starts then stays in it, and Kill
// ends them all however they detached.
type Cgroup struct {
	dir string
	f   *os.File
}

// NewCgroup makes a fresh cgroup below the calling process's own, on the
// cgroup v2 (unified) hierarchy. It fails, and the caller should fall back
// to sweeping, when there is no v2 hierarchy, when it is not writable by
// this user (not root and not delegated), or when the kernel lacks
// cgroup.kill (before Linux 5.14).
func NewCgroup() (*Cgroup, error) {
	parent, err := ownCgroupDir()
	if err != nil {
		return nil, err
	}
	removeStale(parent)
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	dir := filepath.Join(parent, fmt.Sprintf("%s%d-%s", namePrefix, os.Getpid(), hex.EncodeToString(suffix[:])))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("cgroup %s has no cgroup.kill (Linux 5.14 or later is needed): %w", dir, err)
	}
	f, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("open cgroup: %w", err)
	}
	return &Cgroup{dir: dir, f: f}, nil
}

// namePrefix starts the name of every cgroup NewCgroup makes; the jazz
// process's id follows.
const namePrefix = "jazz-cmd-"

// removeStale removes the empty cgroups that jazz processes no longer
// running left below parent: a runner started ahead of its command that
// exited with its jazz leaves one. rmdir fails on a cgroup that still
// holds processes, so nothing in use is touched.
func removeStale(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), namePrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		_ = os.Remove(filepath.Join(parent, e.Name()))
	}
}

// Dir is the cgroup's directory in the mounted hierarchy.
func (c *Cgroup) Dir() string { return c.dir }

// FD is the open directory, for SysProcAttr.CgroupFD.
func (c *Cgroup) FD() int { return int(c.f.Fd()) }

// Procs lists the processes in the cgroup now.
func (c *Cgroup) Procs() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("read cgroup processes: %w", err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// Kill SIGKILLs every process in the cgroup at once (cgroup.kill, which no
// fork can race) and waits until the cgroup is empty or ctx ends. It
// returns how many processes were in it.
func (c *Cgroup) Kill(ctx context.Context) (int, error) {
	procs, err := c.Procs()
	if err != nil {
		return 0, err
	}
	if len(procs) == 0 && !c.populated() {
		return 0, nil
	}
	if err := os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		return len(procs), fmt.Errorf("kill cgroup: %w", err)
	}
	for c.populated() {
		if err := pause(ctx, time.Millisecond); err != nil {
			return len(procs), fmt.Errorf("wait for cgroup %s to empty: %w", c.dir, err)
		}
	}
	return len(procs), nil
}

// populated reads cgroup.events; an unreadable file counts as populated,
// so Kill keeps waiting (bounded by its ctx) rather than assume.
func (c *Cgroup) populated() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("populated ")); ok {
			return string(v) != "0"
		}
	}
	return true
}

// Remove closes the cgroup and deletes its directory; the cgroup must be
// empty (Kill first). An exiting process can keep it busy for a moment.
func (c *Cgroup) Remove(ctx context.Context) error {
	_ = c.f.Close()
	for {
		err := os.Remove(c.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if perr := pause(ctx, time.Millisecond); perr != nil {
			return fmt.Errorf("remove cgroup: %w", err)
		}
	}
}

// ownCgroupDir is where the caller's cgroup v2 lives in the mounted
// hierarchy: its path from /proc/self/cgroup ("0::/path"), under the
// cgroup2 mount of /proc/self/mountinfo (whose root may be a subtree, in
// a container's cgroup namespace or a bind mount).
func ownCgroupDir() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("read own cgroup: %w", err)
	}
	path := ""
	for line := range strings.Lines(string(b)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			path = p
		}
	}
	if path == "" {
		return "", errors.New("no cgroup v2 membership in /proc/self/cgroup")
	}
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("read mounts: %w", err)
	}
	defer mi.Close()
	sc := bufio.NewScanner(mi)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		root, mount, ok := cgroup2Mount(sc.Text())
		if !ok {
			continue
		}
		rel, ok := strings.CutPrefix(path, root)
		if !ok || (rel != "" && !strings.HasPrefix(rel, "/") && root != "/") {
			continue
		}
		dir := filepath.Join(mount, rel)
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir, nil
		}
	}
	return "", errors.New("no cgroup2 mount holds this process's cgroup")
}

// cgroup2Mount reads one mountinfo line: "id parent maj:min root mountpoint
// options [optional...] - fstype source superoptions".
func cgroup2Mount(line string) (root, mount string, ok bool) {
	pre, post, found := strings.Cut(line, " - ")
	if !found {
		return "", "", false
	}
	if f := strings.Fields(post); len(f) == 0 || f[0] != "cgroup2" {
		return "", "", false
	}
	f := strings.Fields(pre)
	if len(f) < 5 {
		return "", "", false
	}
	return unescapeMount(f[3]), unescapeMount(f[4]), true
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// LeaveOwnCgroup is for a process in a cgroup NewCgroup made, that has
// started nothing and is about to exit: it moves itself to the parent
// cgroup and removes its own, which would otherwise stay behind, empty,
// once it is gone (a runner started ahead whose jazz exited). A process in
// any other cgroup is left where it is.
func LeaveOwnCgroup() error {
	dir, err := ownCgroupDir()
	if err != nil {
		return err
	}
	if !strings.HasPrefix(filepath.Base(dir), namePrefix) {
		return nil
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(dir), "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		return fmt.Errorf("leave cgroup: %w", err)
	}
	if err := os.Remove(dir); err != nil {
		return fmt.Errorf("remove cgroup: %w", err)
	}
	return nil
}
