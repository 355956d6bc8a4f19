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
//
// And every variable that says where code or configuration is loaded
// from keeps only absolute paths (absolutePaths): a relative one, or an
// empty entry in a list, is the working directory, so what a cloned
// repository holds there would be loaded into a program approved as
// inspect-only. The common case is an accident: a parent's
// LD_LIBRARY_PATH=/opt/x/lib: (a trailing colon) makes the dynamic
// loader look for libc.so.6 in the working directory first.
func AutoEnv(env []string) []string {
	out := gitinert.WithConfig(absolutePaths(HardenEnv(env)), append(gitinert.Overrides(), gitinert.ReadOnlyOverrides()...)...)
	return append(out, "GIT_OPTIONAL_LOCKS=0", "GIT_NO_LAZY_FETCH=1")
}

// absolutePaths drops the relative parts of the variables that name
// locations: lists (a name ending in PATH, _DIRS or _DIRECTORIES, and the
// loader's LD_PRELOAD and LD_AUDIT) keep their absolute entries, split as
// the loader splits them (`:`, and `;` or a space for the loader's own);
// a single location (a name ending in _DIR, HOME, _FILE, _DIRECTORY or
// CONFIG, and TMPDIR, TZDIR, TERMINFO, MAGIC, GIT_WORK_TREE,
// GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM) is kept only if absolute. A list left empty is dropped. The names are
// judged by shape, not listed one by one, so a tool's FOO_CONFIG_PATH or
// GNUPGHOME is covered too; a value that is no path under such a name is
// dropped, which only an inspect-only program, judged without it, sees.
func absolutePaths(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch locationKind(name) {
		case "list":
			seps := ":"
			if strings.HasPrefix(name, "LD_") {
				seps = ":; "
			}
			var keep []string
			for _, e := range strings.FieldsFunc(val, func(r rune) bool { return strings.ContainsRune(seps, r) }) {
				if filepath.IsAbs(e) {
					keep = append(keep, e)
				}
			}
			if len(keep) == 0 {
				continue
			}
			kv = name + "=" + strings.Join(keep, ":")
		case "one":
			if !filepath.IsAbs(val) {
				continue
			}
		}
		out = append(out, kv)
	}
	return out
}

// locationKind says whether a variable names a list of locations
// ("list"), one location ("one"), or neither ("").
func locationKind(name string) string {
	switch name {
	case "LD_PRELOAD", "LD_AUDIT":
		return "list"
	case "TMPDIR", "TZDIR", "TERMINFO", "MAGIC", "GIT_WORK_TREE", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM":
		return "one"
	}
	for _, suf := range []string{"PATH", "_DIRS", "_DIRECTORIES"} {
		if strings.HasSuffix(name, suf) {
			return "list"
		}
	}
	for _, suf := range []string{"_DIR", "HOME", "_FILE", "_DIRECTORY", "CONFIG"} {
		if strings.HasSuffix(name, suf) {
			return "one"
		}
	}
	return ""
}

// AbsoluteLocations is env with every variable that names where code or
// configuration is loaded from keeping only its absolute paths, as AutoEnv
// does (absolutePaths): for a program that must not load anything of the
// directory it may change to (an MCP server started outside an untrusted
// project).
func AbsoluteLocations(env []string) []string { return absolutePaths(env) }
