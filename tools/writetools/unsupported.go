//go:build !unix

package writetools

import "github.com/jazz-run/jazz/tools"

// Tools is empty where there is no Unix: every write tool resolves and
// changes paths through directory descriptors (openat, renameat, fstatat)
// so that what was previewed and approved is exactly what changes, and no
// path-based fallback could promise that. Such a run reads, searches and
// runs commands, and an agent's write tools are left out (unknown names
// are dropped, as the spec has it) rather than weakened.
func Tools() []tools.Tool { return nil }
