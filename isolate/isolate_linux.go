package isolate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// candidates are the modes this process may try, best first.
func candidates() []Mode {
	if os.Geteuid() == 0 {
		return []Mode{Namespaces, UserNamespace}
	}
	return []Mode{UserNamespace}
}

// Attr adds mode m's namespaces to a (nil: a new one): mount and PID, and
// for UserNamespace a user namespace mapping the caller's ids to
// themselves.
func Attr(a *syscall.SysProcAttr, m Mode) *syscall.SysProcAttr {
	if a == nil {
		a = &syscall.SysProcAttr{}
	}
	switch m {
	case Namespaces:
		a.Cloneflags |= syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
	case UserNamespace:
		a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
		uid, gid := os.Getuid(), os.Getgid()
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
		// A user who is not root in the namespace loses its capabilities
		// at exec; the ambient ones survive into jazz's re-executed
		// binary, which needs them to mount, and which Enter then drops.
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	}
	return a
}

// watchParent has the kernel kill this first process of the namespaces,
// and so everything in them, when jazz dies.
func watchParent() error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("arm the parent-death signal: %w", err)
	}
	return nil
}

// initProgram starts the program as this process's child with every
// descriptor jazz passed (those without close-on-exec: the Go runtime
// marks its own), passes on every signal sent here, and returns the
// program's status once it is gone. Orphans of the namespace are reaped
// on the way; the kernel ends the rest when this process exits.
func initProgram(path string, argv []string) (int, error) {
	files, err := inherited()
	if err != nil {
		return 0, err
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs)
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: os.Environ(), Files: files})
	if err != nil {
		return 0, err
	}
	exited := make(chan int, 1)
	go func() { exited <- reapUntil(pid) }()
	for {
		select {
		case code := <-exited:
			return code, nil
		case s := <-sigs:
			if sig, ok := s.(syscall.Signal); ok && sig != syscall.SIGCHLD && sig != syscall.SIGURG {
				_ = syscall.Kill(pid, sig)
			}
		}
	}
}

// reapUntil reaps every child until pid exits and returns its status.
func reapUntil(pid int) int {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 127
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		if ws.Exited() {
			return ws.ExitStatus()
		}
	}
}

// inherited are the descriptors 0..n jazz passed to this process, in
// place (a gap is closed in the program).
func inherited() ([]uintptr, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return nil, fmt.Errorf("list inherited descriptors: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("list inherited descriptors: %w", err)
	}
	var fds []int
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			fds = append(fds, fd)
		}
	}
	if len(fds) == 0 {
		return nil, nil
	}
	files := make([]uintptr, slices.Max(fds)+1)
	for i := range files {
		files[i] = ^uintptr(0) // closed
	}
	for _, fd := range fds {
		files[fd] = uintptr(fd)
	}
	return files, nil
}

// keptCaps are the capabilities a root child keeps: Docker's default set
// without CAP_MKNOD. Everything else goes from every set, the bounding
// set included, so no program regains it: CAP_SYS_ADMIN (unmount, setns,
// mount another view of the disk), CAP_DAC_READ_SEARCH
// (open_by_handle_at reaches files under a mount), CAP_SYS_PTRACE,
// CAP_SYS_RAWIO (/dev/mem, /proc/kcore), CAP_SYS_MODULE, CAP_BPF,
// CAP_SYS_RESOURCE (raising the limits set on the command), and whatever
// a later kernel adds.
var keptCaps = []int{
	unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_FSETID, unix.CAP_KILL,
	unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_SETPCAP, unix.CAP_NET_BIND_SERVICE, unix.CAP_NET_RAW,
	unix.CAP_SYS_CHROOT, unix.CAP_AUDIT_WRITE, unix.CAP_SETFCAP,
}

// devKept are the device files the new /dev holds, bound from the old.
var devKept = []string{"null", "zero", "full", "random", "urandom", "tty", "ptmx"}

// Enter builds mode m's view in the calling process, which must have been
// started with Attr(m) (it checks that it is the first process of a PID
// namespace of its own, so a mistake can never mount over the host's
// files): mount propagation private, a fresh /proc, a small /dev, every
// path of hide (and every other name a mount gives the same file) covered
// by an empty read-only mount, any other procfs or devtmpfs covered, then
// capabilities dropped. It re-enters the working directory by its path,
// so a directory inside a hidden one is seen empty too. With None it does
// nothing. Any failure is returned: the caller must not run anything.
func Enter(m Mode, hide []string) error {
	if m == None {
		return nil
	}
	if m != Namespaces && m != UserNamespace {
		return fmt.Errorf("unknown isolation mode %q", m)
	}
	if os.Getpid() != 1 {
		return errors.New("isolate: not the first process of a PID namespace of its own; started without its namespaces")
	}
	cwd, _ := os.Getwd()
	targets, err := resolveTargets(hide)
	if err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("isolate: make mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("isolate: mount a new /proc: %w", err)
	}
	mounts, err := readMounts()
	if err != nil {
		return err
	}
	// Names other mounts give the same files, found before anything is
	// covered (covering changes what the targets' paths show).
	targets = append(targets, aliases(targets, mounts)...)
	if err := newDev(); err != nil {
		return err
	}
	for _, t := range targets {
		// A file or directory inside a directory covered too (config.json
		// in JAZZ_HOME) is hidden with it, and once that directory is
		// covered its path no longer exists.
		if slices.ContainsFunc(targets, func(u target) bool { return u.dir && u.path != t.path && within(t.path, u.path) }) {
			continue
		}
		if err := cover(t); err != nil {
			return err
		}
	}
	for _, mp := range foreign(mounts) {
		if err := coverDir(mp); err != nil {
			return err
		}
	}
	if err := dropCaps(); err != nil {
		return err
	}
	if cwd != "" {
		if err := os.Chdir(cwd); err != nil {
			return fmt.Errorf("isolate: re-enter the working directory: %w", err)
		}
	}
	return nil
}

// target is one thing to cover: its canonical path and identity.
type target struct {
	path     string
	dir      bool
	dev, ino uint64
}

// resolveTargets resolves each path (symlinks followed); a path that does
// not exist has nothing to cover.
func resolveTargets(hide []string) ([]target, error) {
	var out []target
	for _, p := range hide {
		if p == "" {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("isolate: resolve %s: %w", p, err)
		}
		if real == "/" {
			return nil, fmt.Errorf("isolate: will not hide / (from %s)", p)
		}
		var st unix.Stat_t
		if err := unix.Stat(real, &st); err != nil {
			return nil, fmt.Errorf("isolate: stat %s: %w", real, err)
		}
		t := target{path: real, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, dev: st.Dev, ino: st.Ino}
		if !slices.ContainsFunc(out, func(o target) bool { return o.path == t.path }) {
			out = append(out, t)
		}
	}
	return out, nil
}

// cover puts an empty read-only mount over t: a tmpfs over a directory,
// the null device over anything else.
func cover(t target) error {
	if t.dir {
		return coverDir(t.path)
	}
	if err := unix.Mount("/dev/null", t.path, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("isolate: cover %s: %w", t.path, err)
	}
	return remountReadOnly(t.path)
}

func coverDir(p string) error {
	if err := unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555"); err != nil {
		return fmt.Errorf("isolate: cover %s: %w", p, err)
	}
	return nil
}

// remountReadOnly makes the bind mount at p read-only, keeping the flags
// it has (an unprivileged user namespace may not clear locked ones).
func remountReadOnly(p string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return fmt.Errorf("isolate: statfs %s: %w", p, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	if err := unix.Mount("", p, "", flags, ""); err != nil {
		return fmt.Errorf("isolate: make %s read-only: %w", p, err)
	}
	return nil
}

// newDev replaces /dev with a tmpfs holding only devKept (bound from the
// old /dev before it is covered), the pts instance, a fresh shm, and the
// usual links: no disk, no memory device, no device a later kernel adds.
func newDev() error {
	type kept struct {
		name string
		fd   int
	}
	var keep []kept
	defer func() {
		for _, k := range keep {
			unix.Close(k.fd)
		}
	}()
	for _, n := range devKept {
		fd, err := unix.OpenTree(unix.AT_FDCWD, "/dev/"+n, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("isolate: keep /dev/%s: %w", n, err)
		}
		keep = append(keep, kept{n, fd})
	}
	pts, ptsErr := unix.OpenTree(unix.AT_FDCWD, "/dev/pts", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if ptsErr == nil {
		keep = append(keep, kept{"pts", pts})
	}
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=64k,mode=0755"); err != nil {
		return fmt.Errorf("isolate: mount a new /dev: %w", err)
	}
	for _, k := range keep {
		p := "/dev/" + k.name
		var err error
		if k.name == "pts" {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, nil, 0o666)
		}
		if err != nil {
			return fmt.Errorf("isolate: new /dev: %w", err)
		}
		if err := unix.MoveMount(k.fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("isolate: new /dev: attach %s: %w", k.name, err)
		}
	}
	if err := os.Mkdir("/dev/shm", 0o1777); err != nil {
		return fmt.Errorf("isolate: new /dev: %w", err)
	}
	if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("isolate: new /dev/shm: %w", err)
	}
	for name, to := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(to, "/dev/"+name); err != nil {
			return fmt.Errorf("isolate: new /dev: %w", err)
		}
	}
	return remountReadOnly("/dev")
}

// mount is one line of /proc/self/mountinfo.
type mount struct {
	dev        string // major:minor
	root       string // the path inside its file system it shows
	mountpoint string
	fstype     string
}

func readMounts() ([]mount, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("isolate: read the mount table: %w", err)
	}
	return parseMounts(b), nil
}

func parseMounts(b []byte) []mount {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := slices.Index(f, "-")
		if len(f) < 5 || sep < 6 || sep+1 >= len(f) {
			continue
		}
		out = append(out, mount{dev: f[2], root: unescape(f[3]), mountpoint: unescape(f[4]), fstype: f[sep+1]})
	}
	return out
}

// unescape decodes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
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

// aliases are the other names mounts give the targets: a bind mount of
// JAZZ_HOME's file system elsewhere shows the same files under another
// path. Each candidate is checked by identity (device and inode).
func aliases(targets []target, mounts []mount) []target {
	var out []target
	for _, t := range targets {
		host := containing(t.path, mounts)
		if host < 0 {
			continue
		}
		m := mounts[host]
		inFS := filepath.Join(m.root, rel(t.path, m.mountpoint))
		for i, n := range mounts {
			if i == host || n.dev != m.dev || !within(inFS, n.root) {
				continue
			}
			alias := filepath.Join(n.mountpoint, rel(inFS, n.root))
			if alias == t.path {
				continue
			}
			var st unix.Stat_t
			if unix.Stat(alias, &st) != nil || st.Dev != t.dev || st.Ino != t.ino {
				continue
			}
			out = append(out, target{path: alias, dir: t.dir, dev: t.dev, ino: t.ino})
		}
	}
	return out
}

// containing is the index of the mount p lies on: the longest mount
// point, the last one mounted there.
func containing(p string, mounts []mount) int {
	best := -1
	for i, m := range mounts {
		if within(p, m.mountpoint) && (best < 0 || len(m.mountpoint) >= len(mounts[best].mountpoint)) {
			best = i
		}
	}
	return best
}

func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

func rel(p, dir string) string {
	r, err := filepath.Rel(dir, p)
	if err != nil {
		return "."
	}
	return r
}

// foreign are the mount points of process and device file systems other
// than the ones at /proc and /dev (which the new ones cover): another
// procfs shows processes outside the namespace, another devtmpfs the
// disks.
func foreign(mounts []mount) []string {
	var out []string
	for _, m := range mounts {
		var home string
		switch m.fstype {
		case "proc":
			home = "/proc"
		case "devtmpfs":
			home = "/dev"
		default:
			continue
		}
		if within(m.mountpoint, home) || slices.Contains(out, m.mountpoint) {
			continue
		}
		out = append(out, m.mountpoint)
	}
	return out
}

// dropCaps keeps keptCaps at most, in every set (bounding and ambient
// included), so neither this process nor any program it starts can undo
// the view. In a user namespace the kept ones are capabilities over that
// namespace only, and a non-root user's programs lose them at exec.
func dropCaps() error {
	last := unix.CAP_LAST_CAP
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > last && n < 64 {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if slices.Contains(keptCaps, c) {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("isolate: drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("isolate: clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("isolate: read capabilities: %w", err)
	}
	var keep [2]uint32
	for _, c := range keptCaps {
		keep[c/32] |= 1 << (c % 32)
	}
	for i := range data {
		data[i].Effective &= keep[i]
		data[i].Permitted &= keep[i]
		data[i].Inheritable &= keep[i]
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("isolate: set capabilities: %w", err)
	}
	return nil
}
