//go:build linux && (amd64 || arm64)

package hugeheap

const (
	supported    = true
	madvHugepage = 14 // MADV_HUGEPAGE
)

// madvise is the raw system call, in assembly so that this package needs
// no import (see the package comment). It returns the errno, or 0.
//
//go:noescape
func madvise(addr, n uintptr, advice int) int
