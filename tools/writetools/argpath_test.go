package writetools

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/tools/pathres"
)

// FuzzArgPathRoundTrips: the path a propose half hands its twin resolves
// back to exactly the path it previewed, whatever bytes it holds (spaces
// or Unicode spaces at its end, quotes, backslashes, a tilde), so the twin
// never acts on, or refuses over, another path than the approved one.
func FuzzArgPathRoundTrips(f *testing.F) {
	for _, s := range []string{"/w/a", "/w/foo ", "/w/\u00a0", "/w/'x'", `/w/"x"`, `/w/a\b`, "/w/~", "/w/x\u2028", "/w/\t", `/w/\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		abs := filepath.Clean("/" + strings.TrimLeft(p, "/"))
		if strings.ContainsRune(abs, 0) {
			return
		}
		if got := pathres.Resolve("/elsewhere", "/home", argPath(abs)); got != abs {
			t.Fatalf("argPath(%q) resolves to %q", abs, got)
		}
	})
}

// A file whose name ends in a space or tab (named in quotes, as the spec
// allows) is written by the twin, not refused as changed or taken for
// another path.
func TestTrailingSpaceNamesReachTheTwin(t *testing.T) {
	for _, name := range []string{"name ", "tab\t", "nbsp\u00a0"} {
		h := newHarness(t)
		r := h.propose("write_file", map[string]any{"path": `"` + name + `"`, "content": "x"})
		if got := h.approve(r); !got.Success {
			t.Fatalf("%q: %+v", name, got)
		}
		if h.read(name) != "x" {
			t.Fatalf("%q not written", name)
		}
	}
}
