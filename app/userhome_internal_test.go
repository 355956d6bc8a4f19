package app

import (
	"path/filepath"
	"testing"
)

// ~/.agents/mcp.json is read as the user's own file (its servers start
// without a trust record): a relative HOME would make it a file under
// the working directory, the project's .agents/mcp.json.
func TestUserHomeIsNeverRelative(t *testing.T) {
	for _, h := range []string{".", "repo", "./x"} {
		got := userHome(func(k string) string {
			if k == "HOME" {
				return h
			}
			return ""
		})
		if got != "" && !filepath.IsAbs(got) {
			t.Errorf("HOME=%q: user home %q is relative", h, got)
		}
	}
}
