//go:build !unix

package shelltool

import "github.com/jazz-run/jazz/tools"

// Name is the tool's name.
const Name = "execute_command"

// Options configures the tool where it exists.
type Options struct{}

// Tools is empty where there is no Unix: an approved command runs in a
// child process of its own session with resource limits, and every
// process it starts is ended with it (process groups, a subreaper); with
// none of that to promise, the tool is left out instead of weakened.
func Tools(Options) []tools.Tool { return nil }
