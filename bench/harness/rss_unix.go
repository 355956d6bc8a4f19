//go:build unix

package main

import (
	"os"
	"syscall"
)

// maxRSSKiB is a finished process's peak resident size in KiB (Linux
// reports KiB; macOS bytes, which only makes its figure look bigger).
func maxRSSKiB(ps *os.ProcessState) (int64, bool) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, false
	}
	return int64(ru.Maxrss), true
}
