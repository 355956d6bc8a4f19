//go:build linux && (amd64 || arm64)

package hugeheap

import "syscall"

const (
	supported    = true
	madvHugepage = syscall.MADV_HUGEPAGE
)

// madvise is the system call on an address range; syscall.Madvise takes
// a slice, which would need a pointer made from a uintptr.
func madvise(addr, n uintptr, advice int) syscall.Errno {
	_, _, e := syscall.Syscall(syscall.SYS_MADVISE, addr, n, uintptr(advice))
	return e
}
