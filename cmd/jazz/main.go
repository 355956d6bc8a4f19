// Command jazz is the jazz agent runtime's CLI.
package main

import (
	"os"

	"github.com/jazz-run/jazz/cli"
	"github.com/jazz-run/jazz/internal/firstgc"
)

func main() {
	// Only the real process: cli.Main's in-process callers (tests) keep
	// their own GC settings.
	firstgc.Defer(os.Getenv)
	os.Exit(cli.Main())
}
