package pathres

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	cases := []struct{ in, want string }{
		{".", "/work/a"},
		{"..", "/work"},
		{"x/y", "/work/a/x/y"},
		{"/etc/passwd", "/etc/passwd"},
		{"../../etc/passwd", "/etc/passwd"}, // no confinement: the spec's rule
		{"~", "/home/u"},
		{"~/notes", "/home/u/notes"},
		{"~user/x", "/work/a/~user/x"},
		{`"quoted name"`, "/work/a/quoted name"},
		{`'single'`, "/work/a/single"},
		{`a\ b`, "/work/a/a b"},
		{`a\b`, "/work/a/ab"},
		{"  spaced  ", "/work/a/spaced"},
		{"x/./y/../z", "/work/a/x/z"},
	}
	for _, tc := range cases {
		if got := Resolve("/work/a", "/home/u", tc.in); got != tc.want {
			t.Errorf("Resolve(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNotFoundSuggestsSimilarDirectories(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"src/Components", "lib/components-old", ".hidden/components"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	abs := filepath.Join(base, "components")
	got := NotFound(base, "components", abs)
	want := "Path not found: " + abs + "\nDid you mean: " + filepath.Join(base, "lib/components-old") + "?\nFound 2 similar directoryies: "
	if !strings.HasPrefix(got, want) {
		t.Fatalf("got %q\nwant prefix %q", got, want)
	}
	if got := NotFound(base, "/abs/components", "/abs/components"); got != "Path not found: /abs/components" {
		t.Fatalf("absolute input gets no suggestion: %q", got)
	}
	if got := NotFound(base, "nothing-like-it", filepath.Join(base, "nothing-like-it")); strings.Contains(got, "Did you mean") {
		t.Fatalf("no similar directory, no suggestion: %q", got)
	}
}
