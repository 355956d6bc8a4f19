package history

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The lock directory holds an "owner" file naming the host and process
// that took it, so a lock left by a killed process can be recognised at
// once instead of waiting for it to go stale.
const ownerFile = "owner"

func writeOwner(lockDir string) {
	host, _ := os.Hostname()
	_ = os.WriteFile(filepath.Join(lockDir, ownerFile), []byte(fmt.Sprintf("%s %d\n", host, os.Getpid())), 0o600)
}

// ownerGone reports whether the lock's owner is a process of this host
// that no longer exists. Anything uncertain (no owner file yet, another
// host, a permission error) says no, and the age rule applies instead.
func ownerGone(lockDir string) bool {
	data, err := os.ReadFile(filepath.Join(lockDir, ownerFile))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return false
	}
	if host, _ := os.Hostname(); host != fields[0] {
		return false
	}
	pid, err := strconv.Atoi(fields[1])
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
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
