//go:build unix

package workstate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockDir takes an exclusive flock on the conversation's directory, so
// the read-modify-writes of two runs of one conversation (a task-state
// patch, a journal prune) follow one another instead of the later one
// writing over what the earlier saved. The kernel drops it when its
// holder dies: a killed run never blocks the next. The returned func
// releases it.
func lockDir(ctx context.Context, dir string) (func(), error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("lock work state %s: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), dir)
	giveUp := time.Now().Add(lockWait)
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { _ = unix.Flock(fd, unix.LOCK_UN); _ = f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(giveUp) {
			_ = f.Close()
			return nil, fmt.Errorf("lock work state %s: %w", dir, err)
		}
		t := time.NewTimer(lockInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			_ = f.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
