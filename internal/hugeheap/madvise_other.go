//go:build !(linux && (amd64 || arm64))

package hugeheap

import "syscall"

const (
	supported    = false
	madvHugepage = 0
)

func madvise(addr, n uintptr, advice int) syscall.Errno { return 0 }
