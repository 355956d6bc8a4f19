package shellguard

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// HardenEnv makes a child environment name the programs an approval
// judged. PATH keeps only absolute directories: an empty or relative
// entry (`.`, `node_modules/.bin`) would make `ls` mean whatever the
// working directory holds under that name. And git gets the one setting
// that keeps an approved git command from adopting a repository the
// project merely contains: safe.bareRepository=explicit. A committed directory laid out
// as a bare repository (HEAD, config, objects/, refs/) is otherwise
// discovered when it is the working directory, and its config names
// programs git runs (core.fsmonitor, core.pager …), so `git status`
// approved in good faith would run them. The setting goes in as git's
// environment configuration (GIT_CONFIG_COUNT/KEY/VALUE), after any the
// environment already has.
func HardenEnv(env []string) []string {
	n := 0
	if v, ok := LookupEnv(env, "GIT_CONFIG_COUNT"); ok {
		if c, err := strconv.Atoi(v); err == nil && c > 0 && c < 1000 {
			n = c
		}
	}
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, "GIT_CONFIG_COUNT="):
		case strings.HasPrefix(kv, "PATH="):
			var dirs []string
			for _, d := range filepath.SplitList(kv[len("PATH="):]) {
				if filepath.IsAbs(d) {
					dirs = append(dirs, d)
				}
			}
			out = append(out, "PATH="+strings.Join(dirs, string(filepath.ListSeparator)))
		default:
			out = append(out, kv)
		}
	}
	return append(out,
		fmt.Sprintf("GIT_CONFIG_KEY_%d=safe.bareRepository", n),
		fmt.Sprintf("GIT_CONFIG_VALUE_%d=explicit", n),
		fmt.Sprintf("GIT_CONFIG_COUNT=%d", n+1))
}
