package shellrun

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/jazz-run/jazz/proctree"
)

// ProtectSelf keeps the calling process's (jazz's) secrets from the
// commands it runs. It blanks the environment block the kernel shows as
// /proc/<pid>/environ (the Go runtime copied it at start, so os.Getenv is
// unaffected), and makes the process non-dumpable: its /proc/<pid>
// entries (environ, mem, fd) become root's, and a process of the same
// user can neither read them nor attach a debugger. A root command could
// still read jazz's memory with CAP_SYS_PTRACE, which the runner drops
// (dropPtrace). It also turns off jazz's core dumps. Calling it again
// does nothing.
func ProtectSelf() error {
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err == nil && d == 0 {
		return nil // done already (or set up so by whoever started jazz)
	}
	// First, while /proc/self/mem is still ours to open.
	blankErr := blankEnviron()
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the process non-dumpable: %w", err)
	}
	return blankErr
}

// blankEnviron overwrites the process's original environment strings
// (env_start to env_end of /proc/self/stat) with zero bytes.
func blankEnviron() error {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return fmt.Errorf("blank the environment block: %w", err)
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return errors.New("blank the environment block: malformed /proc/self/stat")
	}
	// Fields after the command name start at field 3; env_start and
	// env_end are fields 50 and 51.
	f := bytes.Fields(b[end+1:])
	if len(f) < 49 {
		return errors.New("blank the environment block: /proc/self/stat has no env_start/env_end")
	}
	start, err1 := strconv.ParseUint(string(f[47]), 10, 64)
	stop, err2 := strconv.ParseUint(string(f[48]), 10, 64)
	if err1 != nil || err2 != nil || stop <= start || stop-start > 1<<30 {
		return errors.New("blank the environment block: implausible env_start/env_end")
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("blank the environment block: %w", err)
	}
	defer mem.Close()
	if _, err := mem.WriteAt(make([]byte, stop-start), int64(start)); err != nil {
		return fmt.Errorf("blank the environment block: %w", err)
	}
	return nil
}

// dropPtrace removes CAP_SYS_PTRACE from a root runner's bounding,
// ambient, permitted, effective and inheritable sets, so neither it nor
// any program it starts can read a non-dumpable jazz's memory or
// environment. Without root the capability is absent already.
func dropPtrace() error {
	if os.Geteuid() != 0 {
		return nil
	}
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("drop it from the bounding set: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	bit := uint32(1) << (unix.CAP_SYS_PTRACE % 32)
	i := unix.CAP_SYS_PTRACE / 32
	data[i].Effective &^= bit
	data[i].Permitted &^= bit
	data[i].Inheritable &^= bit
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("set capabilities: %w", err)
	}
	return nil
}

// residentBytes is the runner's resident set size, from /proc/self/statm.
func residentBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}

// runnerAttr starts the runner in a session of its own (its own process
// group, and no controlling terminal, so no program of the command can
// read the user's keystrokes or paint the approver's screen through
// /dev/tty), and in cg when there is one.
func runnerAttr(cg *proctree.Cgroup) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true}
	if cg != nil {
		a.UseCgroupFD = true
		a.CgroupFD = cg.FD()
	}
	return a
}

// newCgroup is proctree.NewCgroup; other systems have none.
func newCgroup() (*proctree.Cgroup, error) { return proctree.NewCgroup() }

// dirIdentity names the directory at p, without following a link there:
// device, inode and birth time (when the file system has one, so a new
// directory that reuses a removed one's inode still differs).
func dirIdentity(p string) (string, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_BTIME, &st); err != nil {
		return "", fmt.Errorf("stat %s: %w", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return "", fmt.Errorf("%s is no longer a directory", p)
	}
	id := fmt.Sprintf("%d:%d:%d", st.Dev_major, st.Dev_minor, st.Ino)
	if st.Mask&unix.STATX_BTIME != 0 {
		id += fmt.Sprintf(":%d.%d", st.Btime.Sec, st.Btime.Nsec)
	}
	return id, nil
}

// inheritedIgnored are the signals whose disposition a command expects to
// find at the default. A signal ignored by whoever started jazz (nohup, a
// CI runner, a service manager) stays ignored across exec, in the runner
// and in every program it starts, so `kill -HUP $$` would do nothing under
// nohup and report a clean exit. The runner is a fresh environment, so it
// puts them back.
var inheritedIgnored = [...]syscall.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
	syscall.SIGALRM, syscall.SIGUSR1, syscall.SIGUSR2,
	syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGXFSZ,
}

// restoreIgnoredSignals sets each of inheritedIgnored that is ignored back
// to the default action. Only an ignored one is touched: the Go runtime
// handles the others, and its handler already ends the process with the
// default action when nothing asked to be notified.
func restoreIgnoredSignals() error {
	// The kernel's struct sigaction, with room for the largest layout
	// (handler, flags, restorer, mask); all zero is SIG_DFL with no flags.
	type kernelSigaction struct{ handler, flags, restorer, mask uint64 }
	const sigIgn = 1
	for _, sig := range inheritedIgnored {
		var old kernelSigaction
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
			return fmt.Errorf("read the disposition of %v: %w", sig, e)
		}
		if old.handler != sigIgn {
			continue
		}
		var dfl kernelSigaction
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0); e != 0 {
			return fmt.Errorf("restore the default action of %v: %w", sig, e)
		}
	}
	return nil
}
