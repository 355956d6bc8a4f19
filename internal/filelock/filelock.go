// Package filelock serializes read-modify-write updates of a small file
// (the bus's identity lists) between processes: two `jazz bus
// add-approver` / `remove-approver` runs at once must not lose either
// change, and a lost removal would silently undo a revocation.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// retry is how often a held lock is tried again while waiting.
const retry = 10 * time.Millisecond

// errBusy is what tryLock returns while another holder has the lock.
var errBusy = errors.New("held by another process")

// Lock takes an exclusive lock on path+".lock" (created 0600 if absent),
// waiting until ctx ends, and returns its release. The lock is the
// operating system's (flock, LockFileEx): it goes with the process, so
// a killed holder leaves nothing stale behind.
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for {
		err := tryLock(f)
		if err == nil {
			return func() {
				_ = unlockFile(f)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, errBusy) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: another jazz command is changing it: %w", path, context.Cause(ctx))
		case <-t.C:
		}
	}
}
