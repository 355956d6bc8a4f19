// Command jazz is the jazz agent runtime's CLI.
package main

import (
	"os"

	"github.com/jazz-run/jazz/cli"
	"github.com/jazz-run/jazz/internal/firstgc"
	"github.com/jazz-run/jazz/internal/hugeheap"
)

func main() {
	// Only the real process: cli.Main's in-process callers (tests) keep
	// their own GC settings and heap.
	if firstgc.Defer(os.Getenv) {
		// Only after a raised first goal: the ballast counts toward it.
		hugeheap.Advise(os.Getenv)
	}
	os.Exit(cli.Main())
}
