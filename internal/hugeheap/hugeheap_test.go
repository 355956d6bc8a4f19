//go:build linux && (amd64 || arm64)

package hugeheap

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unsafe"
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
	if bytes.Contains(b, []byte("[never]")) {
		t.Skip("transparent huge pages are off on this system")
	}
}

// After Advise, fresh allocations land in the newly advised chunk, so the
// run's own allocations are in memory the kernel may back with huge pages.
func TestAdviseMovesAllocationIntoAFreshAdvisedChunk(t *testing.T) {
	if !inChild(t) {
		return
	}
	needTHP(t)
	a := Advise(func(string) string { return "" })
	if a.Chunk == 0 {
		t.Fatalf("Advise advised nothing: %s", a.Skipped)
	}
	if a.Chunk&(chunkBytes-1) != 0 || a.Front < a.Chunk || a.Front >= a.Chunk+chunkBytes {
		t.Fatalf("chunk %#x or front %#x is off", a.Chunk, a.Front)
	}
	fresh := alloc(probeBytes)
	at := addrOf(fresh)
	if at < a.Chunk || at >= a.Chunk+chunkBytes {
		t.Fatalf("a fresh %d-byte allocation is at %#x, outside the advised chunk %#x-%#x", probeBytes, at, a.Chunk, a.Chunk+chunkBytes)
	}
	if m := mappingOf(t, at); !advisedHuge(m) {
		t.Fatalf("the mapping of a fresh allocation is not advised: %+v", m)
	}
	// Small objects come from spans the runtime takes from the lowest free
	// pages: most land in advised memory, and the rest only in holes of
	// the heap below the chunk, never above it. How many holes there are
	// is the runtime's state (under -race, one run in six left more than a
	// tenth of them there, one in twenty more than a quarter), so the
	// bound is on where they go, and half is all that is required in.
	var small [][]byte
	for range 256 {
		small = append(small, alloc(4096))
	}
	maps, in := mappings(t), 0
	for _, b := range small {
		p := addrOf(b)
		advised := false
		for _, m := range maps {
			if m.start <= p && p < m.end && advisedHuge(m) {
				advised = true
				break
			}
		}
		if advised {
			in++
		} else if p >= a.Chunk {
			t.Fatalf("a fresh 4 KB object at %#x is neither in advised memory nor in a hole below the chunk %#x", p, a.Chunk)
		}
	}
	if in < len(small)/2 {
		t.Fatalf("only %d of %d fresh 4 KB objects are in advised memory", in, len(small))
	}
	// Touch one: where the kernel has a huge page to give, the mapping now
	// holds one. Not asserted: availability is the kernel's.
	for i := range fresh {
		fresh[i] = 1
	}
	t.Logf("advised chunk %#x; AnonHugePages of its mapping after a touch: %s", a.Chunk, mappingOf(t, at).anonHuge)
}

// The opt-outs: Go's own switch against huge pages, and a memory limit
// (the ballast would count toward it).
func TestAdviseHonoursOptOuts(t *testing.T) {
	for _, env := range []map[string]string{
		{"GODEBUG": "disablethp=1"},
		{"GODEBUG": "gctrace=0,disablethp=1"},
		{"GOMEMLIMIT": "100MiB"},
	} {
		a := Advise(func(k string) string { return env[k] })
		if a.Chunk != 0 || a.Skipped == "" {
			t.Errorf("with %v Advise advised %#x (skipped %q)", env, a.Chunk, a.Skipped)
		}
	}
	if disabledByGODEBUG("disablethp=1,disablethp=0") || !disabledByGODEBUG("x=1, disablethp=1") {
		t.Error("disablethp: the last setting must win")
	}
}

// madvise reports the kernel's errors: an unaligned address is EINVAL.
func TestMadviseReportsErrors(t *testing.T) {
	if e := madvise(uintptr(unsafe.Pointer(&probe))+1, 4096, madvHugepage); e != syscall.EINVAL {
		t.Fatalf("madvise of an unaligned address returned %v, want EINVAL", e)
	}
}

var probe [8192]byte
