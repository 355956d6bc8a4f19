//go:build unix

package history

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// ownerGone reports whether the lock's owner is a process of this host
// that no longer exists. Anything uncertain (no owner file yet, another
// host, a permission error) says no, and the age rule applies instead.
func ownerGone(lockDir string) bool {
	pid, ok := ownerPID(lockDir)
	return ok && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// flockWait takes an exclusive flock on the directory dir, trying
// attempts times interval apart, and returns its release.
func flockWait(ctx context.Context, dir string, attempts int, interval time.Duration) (func(), error) {
	path := dir
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for attempt := 1; ; attempt++ {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if attempt >= attempts {
			_ = f.Close()
			return nil, fmt.Errorf("%w: %s still held after %d attempts %v apart", ErrLocked, path, attempts, interval)
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			_ = f.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
