package shellguard

import (
	"fmt"
	"strconv"
	"strings"
)

// ProtectGit adds to a child environment the one git setting that keeps
// an approved git command from adopting a repository the project merely
// contains: safe.bareRepository=explicit. A committed directory laid out
// as a bare repository (HEAD, config, objects/, refs/) is otherwise
// discovered when it is the working directory, and its config names
// programs git runs (core.fsmonitor, core.pager …), so `git status`
// approved in good faith would run them. The setting goes in as git's
// environment configuration (GIT_CONFIG_COUNT/KEY/VALUE), after any the
// environment already has.
func ProtectGit(env []string) []string {
	n := 0
	if v, ok := LookupEnv(env, "GIT_CONFIG_COUNT"); ok {
		if c, err := strconv.Atoi(v); err == nil && c > 0 && c < 1000 {
			n = c
		}
	}
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GIT_CONFIG_COUNT=") {
			out = append(out, kv)
		}
	}
	return append(out,
		fmt.Sprintf("GIT_CONFIG_KEY_%d=safe.bareRepository", n),
		fmt.Sprintf("GIT_CONFIG_VALUE_%d=explicit", n),
		fmt.Sprintf("GIT_CONFIG_COUNT=%d", n+1))
}
