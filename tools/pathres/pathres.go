// Package pathres resolves the paths tools receive, the way the spec's
// tool-schemas.md §2 describes: relative to the agent's working directory,
// with quotes, ~ and backslash escapes handled, and no confinement.
package pathres

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Resolve turns input into an absolute, lexically clean path. base is the
// agent's working directory; home is $HOME.
func Resolve(base, home, input string) string {
	p := strings.TrimSpace(input)
	if len(p) >= 2 && (p[0] == '"' && p[len(p)-1] == '"' || p[0] == '\'' && p[len(p)-1] == '\'') {
		p = p[1 : len(p)-1]
	}
	switch {
	case p == "~":
		p = home
	case strings.HasPrefix(p, "~/"):
		p = filepath.Join(home, p[2:])
	}
	p = unescape(p)
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p)
}

// unescape drops the backslash of every `\X` pair: `a\ b` → `a b`.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// NotFound is the `Path not found` message, with the "Did you mean"
// suggestion of directories whose names contain the last segment (any
// case, at most three levels under base) when the input was relative.
func NotFound(base, input, abs string) string {
	msg := "Path not found: " + abs
	if filepath.IsAbs(strings.TrimSpace(input)) || strings.HasPrefix(strings.TrimSpace(input), "~") {
		return msg
	}
	similar := similarDirs(base, strings.ToLower(filepath.Base(abs)), 3)
	if len(similar) == 0 {
		return msg
	}
	noun := "directoryies"
	if len(similar) == 1 {
		noun = "directoryy"
	}
	return fmt.Sprintf("%s\nDid you mean: %s?\nFound %d similar %s: %s", msg, similar[0], len(similar), noun, strings.Join(similar, ", "))
}

func similarDirs(base, needle string, maxDepth int) []string {
	if needle == "" || needle == "." || needle == string(filepath.Separator) {
		return nil
	}
	var out []string
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if depth > maxDepth || len(out) >= 20 {
			return
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "node_modules" {
				continue
			}
			full := filepath.Join(dir, e.Name())
			if strings.Contains(strings.ToLower(e.Name()), needle) {
				out = append(out, full)
			}
			walk(full, depth+1)
		}
	}
	walk(base, 1)
	sort.Strings(out)
	return out
}
