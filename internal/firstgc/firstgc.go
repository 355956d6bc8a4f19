// Package firstgc moves a jazz process's first garbage collection from
// the runtime's 4 MB heap to 16 MB, after which the usual setting holds.
//
// Why: a one-turn `jazz run` allocates a little over 4 MB in all (about
// 1 MB of it in package inits), so the runtime starts a collection near
// the end of the run, and the process exits before that cycle ends or
// before anything it frees is used again. The cycle's mark workers and
// write barriers were ~1.5 ms of a ~15 ms run's CPU (perf, bench/harness
// one-turn run) and bought nothing. The bound: the heap may grow 12 MB
// past the runtime's first goal, once; from the first collection on the
// process runs with the percentage it started with (GOGC's default 100),
// so a long run's memory behaves exactly as before.
package firstgc

import (
	"runtime"
	"runtime/debug"
)

// Percent is the GC percentage until the first collection: the runtime's
// 4 MB minimum heap scaled by Percent/100 is the first goal.
const Percent = 400

// marker is what the first collection finds unreachable. It holds a
// pointer so the allocator never batches it with other tiny objects,
// whose liveness would keep its cleanup from running.
type marker struct{ _ *byte }

// Defer raises the GC percentage to Percent until the first collection
// ends, then puts back the one in force before, and reports whether it
// did. A GOGC in the environment is the user's choice and is left alone
// (GOMEMLIMIT is never touched: a memory limit still triggers collections
// as it would).
func Defer(getenv func(string) string) bool {
	if getenv("GOGC") != "" {
		return false
	}
	prev := debug.SetGCPercent(Percent)
	// The cleanup runs once the first cycle has found m unreachable,
	// which is as soon as Defer returns.
	runtime.AddCleanup(new(marker), func(p int) { debug.SetGCPercent(p) }, prev)
	return true
}
