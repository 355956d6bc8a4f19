package childproc

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/jazz-run/jazz/isolate"
	"github.com/jazz-run/jazz/proctree"
)

// procAttr starts the reaper in a session of its own (its own process
// group, no controlling terminal), and in cg when there is one.
func procAttr(cg *proctree.Cgroup) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true}
	if cg != nil {
		a.UseCgroupFD = true
		a.CgroupFD = cg.FD()
	}
	return a
}

func newCgroup() (*proctree.Cgroup, error) { return proctree.NewCgroup() }

// prepareReaper makes the reaper the subreaper of the program's tree and
// has the kernel send it SIGTERM when jazz dies, so the tree is swept
// even then.
func prepareReaper() error {
	if err := proctree.BecomeSubreaper(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
		return fmt.Errorf("arm the parent-death signal: %w", err)
	}
	if os.Getppid() == 1 && !isolate.UnderInit() {
		// Reparented to init: jazz is gone. (Under the first process of
		// isolate's namespaces, pid 1 is that process, which dies with
		// jazz and takes the namespace with it.)
		return errOrphan
	}
	return nil
}

// releaseStdio points the reaper's own fds 0-2 at /dev/null.
func releaseStdio() {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		_ = os.Stdin.Close()
		_ = os.Stdout.Close()
		_ = os.Stderr.Close()
		return
	}
	for fd := 0; fd <= 2; fd++ {
		_ = unix.Dup3(int(null.Fd()), fd, 0)
	}
	_ = null.Close()
}
