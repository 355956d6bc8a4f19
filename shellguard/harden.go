package shellguard

import (
	"path/filepath"
	"strings"

	"github.com/jazz-run/jazz/gitinert"
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
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			var dirs []string
			for _, d := range filepath.SplitList(p) {
				if filepath.IsAbs(d) {
					dirs = append(dirs, d)
				}
			}
			kv = "PATH=" + strings.Join(dirs, string(filepath.ListSeparator))
		}
		out = append(out, kv)
	}
	return gitinert.WithConfig(out, "safe.bareRepository=explicit")
}

// AutoEnv is HardenEnv for a command an automatic step approved (the
// allowlist, the static read-only pass, a classifier): git also gets
// gitinert's overrides, so no pager, file-system monitor, hook or
// submodule's configuration runs, and GIT_OPTIONAL_LOCKS=0, so an index
// refresh is not written back, and GIT_NO_LAZY_FETCH=1, so in a partial
// clone `git show` or `git log -p` of an object the clone lacks does not
// fetch it from the remote into .git/objects (git 2.44 and later; an
// older git ignores it, see LIMITATIONS.md). These are the settings git
// lets the command line decide; what it does not (diff drivers, filters,
// aliases a repository defines) keeps such a repository from being
// approved automatically at all (RepoProblem).
func AutoEnv(env []string) []string {
	out := gitinert.WithConfig(HardenEnv(env), append(gitinert.Overrides(), gitinert.ReadOnlyOverrides()...)...)
	return append(out, "GIT_OPTIONAL_LOCKS=0", "GIT_NO_LAZY_FETCH=1")
}
