// Command handoffs serves the hand-offs jazz re-executes itself for (the
// isolate probe and trampoline, the shell runner, the child reaper) and
// nothing else. `make test` builds it without -race and names it in
// JAZZ_TEST_HANDOFFS, so a race-built test binary starts it instead of
// itself: the race runtime's setup costs each start tens of milliseconds
// of CPU, and the sandboxed git and shell sweeps start thousands. The code
// that runs is the same; only the race detector is absent from these
// short-lived, single-purpose processes. A jazz binary ignores the
// variable (isolate.HandoffBinary).
package main

import (
	"fmt"
	"os"

	_ "github.com/jazz-run/jazz/childproc"
	_ "github.com/jazz-run/jazz/isolate"
	_ "github.com/jazz-run/jazz/shellrun"
)

// The hand-offs run in their packages' init and exit there; reaching
// main means this binary was started for something it does not serve.
func main() {
	fmt.Fprintln(os.Stderr, "handoffs: this binary only serves jazz's hand-offs to tests (isolate, shellrun, childproc)")
	os.Exit(2)
}
