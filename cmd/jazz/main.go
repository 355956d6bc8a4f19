// Command jazz is the jazz agent runtime's CLI.
package main

import (
	"os"

	"github.com/jazz-run/jazz/cli"
)

func main() { os.Exit(cli.Main()) }
