package firstgc

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// percent reads the GC percentage without changing it.
func percent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestFirstCollectionRestoresThePercentage(t *testing.T) {
	before := percent()
	t.Cleanup(func() { debug.SetGCPercent(before) })
	Defer(func(string) string { return "" })
	if got := percent(); got != Percent {
		t.Fatalf("percentage after Defer = %d, want %d", got, Percent)
	}
	if g := heapGoal(); g < 12<<20 {
		t.Errorf("heap goal after Defer = %d bytes, want the first collection pushed past 12 MB", g)
	}
	runtime.GC()
	deadline := time.Now().Add(10 * time.Second)
	for percent() != before {
		if time.Now().After(deadline) {
			t.Fatalf("percentage still %d 10 s after the first collection, want %d back", percent(), before)
		}
		runtime.GC() // cleanups run after a cycle; give them more
		time.Sleep(5 * time.Millisecond)
	}
}

func TestUsersGOGCIsLeftAlone(t *testing.T) {
	before := debug.SetGCPercent(150)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	Defer(func(k string) string {
		if k == "GOGC" {
			return "150"
		}
		return ""
	})
	if got := percent(); got != 150 {
		t.Fatalf("percentage = %d with GOGC=150 set, want it untouched", got)
	}
}
