// Package linked lets a test keep packages out of the jazz binary: a
// dependency's package inits run in every jazz process, whether or not
// the run uses it. Test-only imports do not count.
package linked

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Refuse fails t for every package cmd/jazz links that is one of prefixes
// or below one ("x/y" matches x/y and x/y/z; a prefix ending in "/"
// matches only below it). Without a go command the test is skipped.
func Refuse(t testing.TB, prefixes ...string) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, gobin, "list", "-deps", "github.com/jazz-run/jazz/cmd/jazz").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/jazz: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, p := range prefixes {
			if pkg == p || strings.HasPrefix(pkg, strings.TrimSuffix(p, "/")+"/") {
				t.Errorf("cmd/jazz links %s", pkg)
			}
		}
	}
}
