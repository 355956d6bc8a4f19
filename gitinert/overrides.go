package gitinert

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Overrides are laid over the configuration of every repository git runs
// in without a person having accepted its programs, as command-line
// configuration (which outranks every file git reads): no pager, no
// file-system monitor, no signature verification in logs, no recursion
// into submodules (whose own configuration is not inspected), no `ext::`
// transport, and no repository found implicitly as a bare one (a bare
// repository committed inside a work tree would bring its own
// configuration).
func Overrides() []string {
	return []string{
		"core.pager=cat",
		"core.fsmonitor=false",
		"log.showSignature=false",
		"submodule.recurse=false",
		"diff.ignoreSubmodules=dirty",
		"status.submoduleSummary=false",
		"protocol.ext.allow=never",
		"safe.bareRepository=explicit",
	}
}

// ReadOnlyOverrides are added for operations that are to change nothing:
// hooks never run (some run when an index refresh writes the index).
// With them goes GIT_OPTIONAL_LOCKS=0, so the refresh is not written.
func ReadOnlyOverrides() []string { return []string{NoHooks()} }

// NoHooks is the setting under which git runs no hook at all: the hooks
// directory is the null device, which is not a directory and cannot
// become one, so no process (however it races git) can plant a hook
// there, as it could in a directory of jazz's own.
func NoHooks() string { return "core.hooksPath=" + os.DevNull }

// ReceivePackNoHooks is the receive-pack command of a push to a
// repository on this machine: git starts the remote side's receive-pack
// without passing on its own command-line configuration, so that side
// needs NoHooks on its own command line (run by the shell, as git runs a
// receive-pack command).
func ReceivePackNoHooks() string { return "git -c " + NoHooks() + " receive-pack" }

// WithConfig returns env with settings ("key=value") added as git's
// environment configuration (GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n,
// GIT_CONFIG_VALUE_n), after the ones env already has, which keep their
// numbers; git gives them the command line's rank.
func WithConfig(env []string, settings ...string) []string {
	n := 0
	out := make([]string, 0, len(env)+2*len(settings)+1)
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			// The last one counts, as in exec.
			n = 0
			if c, err := strconv.Atoi(v); err == nil && c > 0 && c < 1000 {
				n = c
			}
			continue
		}
		out = append(out, kv)
	}
	for _, s := range settings {
		k, v, _ := strings.Cut(s, "=")
		out = append(out, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n, k), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, v))
		n++
	}
	return append(out, fmt.Sprintf("GIT_CONFIG_COUNT=%d", n))
}
