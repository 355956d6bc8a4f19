//go:build !(linux && (amd64 || arm64))

package hugeheap

const (
	supported    = false
	madvHugepage = 0
)

func madvise(addr, n uintptr, advice int) int { return 0 }
