package app_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/app"
)

var update = flag.Bool("update", false, "rewrite docs/tools.md from the registry")

// docs/tools.md is generated from the registry: a tool added, removed or
// changed without regenerating it fails here.
func TestToolsReference(t *testing.T) {
	want, err := app.ToolsReference()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "docs", "tools.md")
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: generate it with: go test ./app -run TestToolsReference -update", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("docs/tools.md differs from the registry at line %d:\n file: %q\n want: %q\nregenerate it with: go test ./app -run TestToolsReference -update", i+1, g, w)
			}
		}
	}
	// Every visible tool has its section, with its tier.
	reg, _ := app.ReferenceRegistry()
	for _, tl := range reg.Visible() {
		if !strings.Contains(string(got), "## "+tl.Name+"\n\nTier `"+tl.Level+"`") {
			t.Errorf("no section for %s", tl.Name)
		}
	}
}
