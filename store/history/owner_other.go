//go:build !unix

package history

import (
	"context"
	"time"
)

// ownerGone cannot tell here whether a process is alive, so a lock left
// by a killed process waits for the age rule (StaleAfter).
func ownerGone(string) bool { return false }

// flockWait has no flock to take here: the mkdir lock alone orders
// savers (as it does for other runtimes sharing JAZZ_HOME).
func flockWait(context.Context, string, int, time.Duration) (func(), error) {
	return func() {}, nil
}
