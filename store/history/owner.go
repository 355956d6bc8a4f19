package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jazz-run/jazz/safefile"
)

// The lock directory holds an "owner" file naming the host and process
// that took it, so a lock left by a killed process can be recognised at
// once instead of waiting for it to go stale.
const ownerFile = "owner"

func writeOwner(lockDir string) {
	host, _ := os.Hostname()
	_ = os.WriteFile(filepath.Join(lockDir, ownerFile), []byte(fmt.Sprintf("%s %d\n", host, os.Getpid())), 0o600)
}

// ownerPID is the pid recorded in a lock's owner file when it names a
// process of this host other than this one; ok is false for anything
// uncertain (no owner file yet, another host, a malformed file).
func ownerPID(lockDir string) (pid int, ok bool) {
	// Bounded and regular-only like every read: a FIFO here must not
	// hang a save.
	data, _, err := safefile.Read(context.Background(), filepath.Join(lockDir, ownerFile), safefile.Options{MaxBytes: 512, What: "lock owner file"})
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return 0, false
	}
	if host, _ := os.Hostname(); host != fields[0] {
		return 0, false
	}
	pid, err = strconv.Atoi(fields[1])
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return 0, false
	}
	return pid, true
}
