package shellguard

import (
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// The mktemp/$TMPDIR carve-out of shell-safety.md §3, applied to the text
// of a command before it runs.
var (
	// Step 1: V=$(mktemp …) or V=`mktemp …`, optionally quoted.
	mktempAssign = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile("([A-Za-z_][A-Za-z0-9_]*)=[\"']?(?:\\$\\(\\s*mktemp\\b|`\\s*mktemp\\b)")
	})
	// Step 2: an rm invocation runs to the next newline, `;`, `&` or `|`.
	rmInvocation = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\brm\b[^\n;&|]*`) })
	inlineMktemp = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("\\$\\(\\s*mktemp\\b[^)]*\\)|`\\s*mktemp\\b[^`]*`") })
	// Step 3: $TMPDIR / ${TMPDIR} / $V / ${V}, with an optional /….
	varTarget = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})(?:/.*)?$`)
	})
)

// tempSentinel stands for an inline $(mktemp …); it cannot occur in a
// command because it contains a NUL byte.
const tempSentinel = "\x00mktemp\x00"

// staticTempOnly reports whether every rm invocation in command targets
// only temp paths, per §3.
func staticTempOnly(command string) bool {
	vars := map[string]bool{"TMPDIR": true}
	for _, m := range mktempAssign().FindAllStringSubmatch(command, -1) {
		vars[m[1]] = true
	}
	return everyRmTargets(command, func(target string) bool {
		if target == tempSentinel {
			return true
		}
		m := varTarget().FindStringSubmatch(target)
		if m == nil {
			return false
		}
		return vars[m[1]+m[2]]
	})
}

// everyRmTargets applies steps 2 and 4: at least one rm invocation, each
// with at least one target, every target temp.
func everyRmTargets(command string, isTemp func(string) bool) bool {
	invocations := rmInvocation().FindAllString(command, -1)
	if len(invocations) == 0 {
		return false
	}
	for _, inv := range invocations {
		inv = strings.TrimPrefix(inv, "rm")
		inv = strings.NewReplacer(`"`, "", `'`, "").Replace(inv)
		inv = inlineMktemp().ReplaceAllString(inv, " "+tempSentinel+" ")
		targets := 0
		for _, tok := range strings.Fields(inv) {
			if strings.HasPrefix(tok, "-") {
				continue
			}
			if !isTemp(tok) {
				return false
			}
			targets++
		}
		if targets == 0 {
			return false
		}
	}
	return true
}

// runtimeTempOnly is the carve-out for a command rebuilt from expanded
// argv, where $tmp has already become a path: a target counts as temp when
// it lies strictly inside tempDir (the child's $TMPDIR) after lexical
// clean-up. Relative targets never count.
func runtimeTempOnly(tempDir string) func(string) bool {
	return func(command string) bool {
		if tempDir == "" || !filepath.IsAbs(tempDir) {
			return false
		}
		root := filepath.Clean(tempDir)
		return everyRmTargets(command, func(target string) bool {
			if !filepath.IsAbs(target) {
				return false
			}
			rel, err := filepath.Rel(root, filepath.Clean(target))
			return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
		})
	}
}
