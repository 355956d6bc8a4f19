// Package sleeper gives tests a sleep program they can find again: a link
// to sleep under a name no other process has, so what a command started
// (and whatever of it outlived its parent) shows in /proc by that name,
// whichever test, worker or runner started it.
package sleeper

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jazz-run/jazz/proctree"
)

// Link makes a link to the system's sleep program, named by a fresh
// marker, in a temp dir of t; it skips t where there is no sleep. Run
// `LINK 60` and the process's command line holds the marker.
func Link(t testing.TB) (link, marker string) {
	t.Helper()
	bin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	// The real file: a link to a multi-call binary (busybox, coreutils
	// built as one) would run under the link's name and not know it.
	if real, err := filepath.EvalSymlinks(bin); err == nil {
		bin = real
	}
	marker = fmt.Sprintf("jzsleep%d", time.Now().UnixNano())
	link = filepath.Join(t.TempDir(), marker)
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	return link, marker
}

// poll is how often Await looks at /proc.
const poll = 10 * time.Millisecond

// Await waits up to d for exactly n live processes whose command line
// holds marker, and returns those it saw last and whether the count was
// reached. /proc tells no one when a process starts or ends, so this
// looks again every few milliseconds until the deadline.
func Await(marker string, n int, d time.Duration) ([]string, bool) {
	deadline := time.Now().Add(d)
	for {
		left, err := proctree.Matching(marker)
		if err == nil && len(left) == n {
			return left, true
		}
		if time.Now().After(deadline) {
			return left, false
		}
		time.Sleep(poll)
	}
}
