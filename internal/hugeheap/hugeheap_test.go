//go:build linux && (amd64 || arm64)

package hugeheap

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// vma is one mapping of /proc/self/smaps.
type vma struct {
	start, end uintptr
	flags      []string
	anonHuge   string
}

func mappings(t *testing.T) []vma {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatalf("read smaps: %v", err)
	}
	var out []vma
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		var s, e uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &s, &e); n == 2 && strings.Contains(line, "-") {
			out = append(out, vma{start: s, end: e})
			continue
		}
		if len(out) == 0 {
			continue
		}
		switch k, v, _ := strings.Cut(line, ":"); k {
		case "VmFlags":
			out[len(out)-1].flags = strings.Fields(v)
		case "AnonHugePages":
			out[len(out)-1].anonHuge = strings.TrimSpace(v)
		}
	}
	return out
}

// mappingOf is the mapping holding addr.
func mappingOf(t *testing.T, addr uintptr) vma {
	t.Helper()
	for _, m := range mappings(t) {
		if m.start <= addr && addr < m.end {
			return m
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return vma{}
}

func advisedHuge(m vma) bool {
	for _, f := range m.flags {
		if f == "hg" {
			return true
		}
	}
	return false
}

// inChild runs the calling test again in a child process with the
// collector off, as jazz's main has it until its first collection, which
// comes only after 16 MB (internal/firstgc): a collection frees the
// ballasts and leaves holes a probe then lands in. It reports whether
// this is the child.
func inChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv("GOGC") == "off" {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), "GOGC=off")
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	return false
}

func needTHP(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		t.Skipf("this kernel has no transparent huge pages: %v", err)
	}
	if advised.errno != 0 {
		t.Fatalf("madvise failed with errno %d on a kernel with THP (%s)", advised.errno, bytes.TrimSpace(b))
	}
}

// The heap chunk package inits allocate in is advised, and the front was
// moved out of the huge page the runtime had started in small pages.
func TestInitAdvisesTheChunkInitsAllocateIn(t *testing.T) {
	if !inChild(t) {
		return
	}
	needTHP(t)
	if advised.initChunk == 0 {
		t.Fatal("init advised nothing")
	}
	if !advisedHuge(mappingOf(t, advised.initFront)) {
		t.Fatalf("the mapping at the front init left (%#x) is not advised: %+v", advised.initFront, mappingOf(t, advised.initFront))
	}
	if advised.initFront&(hugeBytes-1) != 0 && advised.initFront&(hugeBytes-1) != probeBytes {
		t.Fatalf("front %#x is neither on a huge page boundary nor %d bytes past one", advised.initFront, probeBytes)
	}
}

// After Extend, a fresh allocation lands in the newly advised chunk, so
// the run's own allocations are in memory the kernel may back with huge
// pages; a second call changes nothing.
func TestExtendMovesAllocationIntoAFreshAdvisedChunk(t *testing.T) {
	if !inChild(t) {
		return
	}
	needTHP(t)
	Extend()
	chunk := advised.extendChunk
	if chunk == 0 {
		t.Fatalf("Extend advised nothing (errno %d)", advised.errno)
	}
	if chunk == advised.initChunk {
		t.Fatalf("Extend advised the chunk init had (%#x)", chunk)
	}
	fresh := alloc(probeBytes)
	at := addrOf(fresh)
	if at < chunk || at >= chunk+chunkBytes {
		t.Fatalf("a fresh %d-byte allocation is at %#x, outside the advised chunk %#x-%#x", probeBytes, at, chunk, chunk+chunkBytes)
	}
	m := mappingOf(t, at)
	if !advisedHuge(m) {
		t.Fatalf("the mapping of a fresh allocation is not advised: %+v", m)
	}
	// Touch it: where the kernel has a huge page to give, the mapping now
	// holds one. Not asserted: availability is the kernel's.
	for i := range fresh {
		fresh[i] = 1
	}
	t.Logf("advised chunk %#x; AnonHugePages of its mapping after a touch: %s", chunk, mappingOf(t, at).anonHuge)
	// Small objects come from spans the runtime takes from the lowest free
	// pages; nearly all of them must be in advised memory too (a few may
	// fill holes below the front).
	var small [][]byte
	for range 512 {
		small = append(small, alloc(4096))
	}
	maps, in := mappings(t), 0
	for _, b := range small {
		a := addrOf(b)
		for _, m := range maps {
			if m.start <= a && a < m.end && advisedHuge(m) {
				in++
				break
			}
		}
	}
	if in < len(small)*9/10 {
		t.Fatalf("only %d of %d fresh 4 KB objects are in advised memory", in, len(small))
	}
	Extend()
	if advised.extendChunk != chunk {
		t.Fatalf("a second Extend moved the advised chunk to %#x", advised.extendChunk)
	}
}

// The package's init must run before every other package that allocates,
// which the toolchain guarantees only to a package that imports nothing
// (inits go in import-path order among packages whose imports are done).
func TestImportsNothing(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != "unsafe" {
		t.Fatalf("hugeheap imports %q; it must import only unsafe so that its init runs first", got)
	}
}
