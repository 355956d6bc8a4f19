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
	firstgc.Defer(os.Getenv)
	// After Defer: its ballast counts toward the raised first GC goal.
	hugeheap.Extend()
	os.Exit(cli.Main())
}
