// Package hugeheap lets a jazz process's young heap be backed by
// transparent huge pages on Linux, where the system leaves that to each
// program (/sys/kernel/mm/transparent_hugepage/enabled = madvise, the
// default of most distributions).
//
// Why: a short `jazz run` touches 2-5 MB of fresh heap, and every 4 KB page
// of it is a page fault. In the VMs jazz is benchmarked in, a fault costs
// ~3 µs (nested paging); a one-turn run took ~700 heap faults, a tenth of
// its wall time. A 2 MB huge page is one fault and costs about a fifth of
// what its 512 small pages do. The Go runtime does not ask for huge pages
// for the heap (it did in Go 1.21.0 and stopped: long-lived servers saw
// RSS grow), and it maps the heap 4 MB at a time with fresh mappings that
// carry no advice, so jazz asks for the few chunks a run starts with:
//
//   - At package init, which runs before any other package that allocates
//     (this package imports nothing, so it is initialized as soon as the
//     runtime is), the heap chunk in use is advised, and a ballast, a
//     large allocation that is never touched, moves the allocation front
//     past the partly used 2 MB page the runtime started in. Every later
//     package init then allocates in an untouched, advised 2 MB page.
//   - Extend, called from main once the GC goal is raised (internal/
//     firstgc), makes the runtime map one more 4 MB chunk now, with a
//     second ballast, and advises it: the run itself allocates there.
//
// The bound: at most two chunks (8 MB of address space) are ever advised,
// so a long-lived process's heap beyond them behaves exactly as before,
// and RSS grows by at most the unused part of the huge pages touched
// (under 4 MB). The ballasts are never written, so they take no memory;
// they are garbage from the start and the first collection frees them,
// which comes at most 4 MB of allocation earlier than it would. Where
// the system says never (enabled = never, or prctl PR_SET_THP_DISABLE),
// the advice does nothing. Other systems build a no-op.
package hugeheap

import "unsafe"

const (
	// chunkBytes is the runtime's unit of heap growth (pallocChunkBytes):
	// each growth is one fresh mapping, chunk-aligned.
	chunkBytes = 4 << 20
	// hugeBytes is the huge page size advice asks for (PMD size on amd64
	// and on arm64 with 4 KB pages).
	hugeBytes = 2 << 20
	// probeBytes is above the runtime's small-object limit (32 KB), so a
	// probe gets a span of its own from the lowest free pages: its address
	// is where the allocation front is (holes below the front, left by the
	// runtime's early allocations, are smaller than this).
	probeBytes = 256 << 10
)

// advised records what init and Extend did, for the tests; written only
// during package init and by Extend, which main calls once before any
// other goroutine of jazz's exists.
var advised struct {
	// initChunk and extendChunk are the starts of the advised chunks
	// (0: none); front is where the allocation front was after each step.
	initChunk, initFront     uintptr
	extendChunk, extendFront uintptr
	errno                    int
}

func init() {
	if !supported {
		return
	}
	front := addrOf(alloc(probeBytes)) + probeBytes
	chunk := front &^ (chunkBytes - 1)
	if e := madvise(chunk, chunkBytes, madvHugepage); e != 0 {
		advised.errno = e // EINVAL: a kernel without THP; nothing to do
		return
	}
	advised.initChunk = chunk
	// The 2 MB page the front is in holds the runtime's own early
	// allocations, so it is already mapped in small pages: skip to the
	// next huge page boundary. When that boundary is the chunk's end,
	// step a probe's size past it, so the runtime maps the next chunk now and
	// the ballast ends inside it; advise that chunk too.
	next := (front + hugeBytes - 1) &^ (hugeBytes - 1)
	if next == front {
		advised.initFront = front
		return
	}
	gap := next - front
	if next&(chunkBytes-1) == 0 {
		gap += probeBytes
	}
	ballast := addrOf(alloc(gap))
	end := ballast + gap
	if end&^(chunkBytes-1) != chunk {
		madvise(end&^(chunkBytes-1), chunkBytes, madvHugepage)
	}
	advised.initFront = end
}

// Extend gives the run a fresh advised 4 MB chunk to allocate in: a
// ballast covers what is left of the current chunk and reaches a probe's size into
// a new one, which the runtime maps at once and which is advised before
// anything touches it. Call it once, from main, after the GC goal has been
// raised: the ballast counts toward the first collection's trigger.
func Extend() {
	if !supported || advised.initChunk == 0 || advised.extendChunk != 0 {
		return
	}
	front := addrOf(alloc(probeBytes)) + probeBytes
	chunkEnd := (front&^(chunkBytes-1) + chunkBytes)
	gap := chunkEnd - front + probeBytes
	ballast := addrOf(alloc(gap))
	end := ballast + gap
	chunk := end &^ (chunkBytes - 1)
	if e := madvise(chunk, chunkBytes, madvHugepage); e != 0 {
		advised.errno = e
		return
	}
	advised.extendChunk, advised.extendFront = chunk, end
}

// alloc returns a fresh heap slice. It is not inlined, so the compiler
// cannot see the slice die and put it on the stack.
//
//go:noinline
func alloc(n uintptr) []byte { return make([]byte, n) }

// addrOf is the address of a slice's first byte. The slice itself is
// dropped: the ballast is garbage from the start, and an address held as
// a uintptr keeps nothing alive.
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
