// Package hugeheap lets a jazz run's heap be backed by transparent huge
// pages on Linux, where the system leaves that to each program
// (/sys/kernel/mm/transparent_hugepage/enabled = madvise, the default of
// most distributions).
//
// Why: a short `jazz run` touches 2-5 MB of fresh heap, and every 4 KB page
// of it is a page fault. In the VMs jazz is benchmarked in a fault costs
// ~2.6 µs (nested paging); a 2 MB huge page is one fault and costs about a
// quarter of what its 512 small pages do. The Go runtime does not ask for
// huge pages for the heap (Go 1.21.0 did and stopped: long-lived servers
// saw RSS grow), and it maps the heap 4 MB at a time (its palloc chunk)
// with fresh mappings that carry no advice. So Advise makes the runtime
// map one more chunk now, with a ballast, a large allocation that is
// never touched and reaches just past the end of the chunk in use, and
// advises that fresh chunk before anything touches it: the run allocates
// there next.
//
// The bound: one 4 MB chunk is advised, once, so a long-lived process's
// heap beyond it behaves exactly as before, and RSS grows by at most the
// unused part of the two huge pages it can hold. The ballast is never
// written, so it takes no memory; it is garbage from the start and the
// first collection frees it. It counts toward that collection's trigger,
// so Advise runs only where internal/firstgc raised the first goal to
// 16 MB, and not under a memory limit. GODEBUG=disablethp=1, Go's own
// switch against huge pages, turns it off; so does the system's
// enabled = never. Other systems build a no-op.
package hugeheap

import (
	"strings"
	"unsafe"
)

const (
	// chunkBytes is the runtime's unit of heap growth (pallocChunkBytes):
	// each growth is one fresh mapping, chunk-aligned.
	chunkBytes = 4 << 20
	// probeBytes is far above the runtime's small-object limit (32 KB), so
	// a probe gets a span of its own from the lowest free run of pages that
	// large: its address is where the allocation front is (holes left
	// below the front by the runtime's early allocations are smaller).
	probeBytes = 256 << 10
)

// Advice is what Advise did.
type Advice struct {
	// Chunk is the start of the advised chunk; 0 when nothing was.
	Chunk uintptr
	// Front is where the allocation front was left, inside Chunk.
	Front uintptr
	// Skipped says why nothing was advised, when nothing was.
	Skipped string
}

// Advise gives the run a fresh advised 4 MB chunk to allocate in. Call it
// once, from main, and only when the first GC goal has been raised
// (firstgc.Defer reported true): the ballast counts toward the first
// collection's trigger. getenv is os.Getenv.
func Advise(getenv func(string) string) Advice {
	switch {
	case !supported:
		return Advice{Skipped: "not Linux on amd64 or arm64"}
	case disabledByGODEBUG(getenv("GODEBUG")):
		return Advice{Skipped: "GODEBUG=disablethp=1"}
	case getenv("GOMEMLIMIT") != "":
		return Advice{Skipped: "GOMEMLIMIT is set"}
	}
	front := addrOf(alloc(probeBytes)) + probeBytes
	// front-1: a probe that ends exactly on a chunk's end is in that chunk.
	chunkEnd := (front-1)&^(chunkBytes-1) + chunkBytes
	gap := chunkEnd - front + probeBytes
	end := addrOf(alloc(gap)) + gap
	chunk := (end - 1) &^ (chunkBytes - 1)
	if err := madvise(chunk, chunkBytes, madvHugepage); err != 0 {
		// EINVAL: a kernel built without THP. Nothing is lost.
		return Advice{Skipped: "madvise: " + err.Error()}
	}
	return Advice{Chunk: chunk, Front: end}
}

// disabledByGODEBUG reads the disablethp setting of a GODEBUG value (the
// last one wins, as in the runtime).
func disabledByGODEBUG(godebug string) bool {
	off := false
	for _, kv := range strings.Split(godebug, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == "disablethp" {
			off = v == "1"
		}
	}
	return off
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
