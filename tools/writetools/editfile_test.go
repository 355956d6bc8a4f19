package writetools

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/tools/unidiff"
)

type E = map[string]any

func TestEditFileApplies(t *testing.T) {
	tests := []struct {
		name      string
		content   string
		edits     []E
		want      string
		applied   []string
		items     []string // propose message lines
		origLines int
	}{
		{"replace lines", "a\nb\nc\n", []E{{"type": "replace_lines", "startLine": 2, "endLine": 3, "content": "B\nC\nD"}},
			"a\nB\nC\nD\n", []string{"Replaced lines 2-3 with 3 line(s)"},
			[]string{"  1. Replace lines 2-3 with new content (3 lines)"}, 4},
		{"insert top and after", "a\nb", []E{{"type": "insert", "line": 0, "content": "top"}, {"type": "insert", "line": 3, "content": "end"}},
			"top\na\nb\nend", []string{"Inserted 1 line(s) after line 0", "Inserted 1 line(s) after line 3"},
			[]string{"  1. Insert content after line 0 (1 lines)", "  2. Insert content after line 3 (1 lines)"}, 2},
		{"delete", "1\n2\n3\n4", []E{{"type": "delete_lines", "startLine": 2, "endLine": 3}},
			"1\n4", []string{"Deleted lines 2-3 (2 line(s))"}, []string{"  1. Delete lines 2-3"}, 4},
		{"pattern first only", "foo foo\nfoo\n", []E{{"type": "replace_pattern", "pattern": "  foo ", "replacement": "bar"}},
			"bar foo\nfoo\n", []string{`Replaced pattern "  foo " 1 time(s) with "bar"`},
			[]string{`  1. Replace "  foo " with "bar" (1 occurrence on line 1)`}, 3},
		{"pattern count", "foo foo\nfoo\n", []E{{"type": "replace_pattern", "pattern": "foo", "replacement": "x", "count": 2}},
			"x x\nfoo\n", []string{`Replaced pattern "foo" 2 time(s) with "x"`},
			[]string{`  1. Replace "foo" with "x" (2 occurrences on line 1)`}, 3},
		{"pattern all", "foo foo\nfoo\n", []E{{"type": "replace_pattern", "pattern": "foo", "replacement": "$1", "count": -1}},
			"$1 $1\n$1\n", []string{`Replaced pattern "foo" 3 time(s) with "$1"`},
			[]string{`  1. Replace "foo" with "$1" (all occurrences on lines 1, 2)`}, 3},
		{"literal non-overlapping", "aaaa", []E{{"type": "replace_pattern", "pattern": "aa", "replacement": "b", "count": -1}},
			"bb", []string{`Replaced pattern "aa" 2 time(s) with "b"`}, []string{`  1. Replace "aa" with "b" (all occurrences on line 1)`}, 1},
		{"regex", "v1 v22\nv333\n", []E{{"type": "replace_pattern", "pattern": `re:v\d+`, "replacement": "V", "count": -1}},
			"V V\nV\n", []string{`Replaced pattern "re:v\d+" 3 time(s) with "V"`},
			[]string{`  1. Replace "re:v\\d+" with "V" (all occurrences on lines 1, 2)`}, 3},
		{"crlf kept", "a\r\nb\r\n", []E{{"type": "replace_lines", "startLine": 1, "endLine": 1, "content": "A\r"}},
			"A\r\nb\r\n", []string{"Replaced lines 1-1 with 1 line(s)"}, []string{"  1. Replace lines 1-1 with new content (1 lines)"}, 3},
		{"empty file is one line", "", []E{{"type": "replace_lines", "startLine": 1, "endLine": 1, "content": "x"}},
			"x", []string{"Replaced lines 1-1 with 1 line(s)"}, []string{"  1. Replace lines 1-1 with new content (1 lines)"}, 1},
		{"evolving lines", "a\nb\n", []E{{"type": "insert", "line": 0, "content": "z"}, {"type": "delete_lines", "startLine": 3, "endLine": 3}},
			"z\na\n", []string{"Inserted 1 line(s) after line 0", "Deleted lines 3-3 (1 line(s))"},
			[]string{"  1. Insert content after line 0 (1 lines)", "  2. Delete lines 3-3"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			abs := h.write("f.txt", tt.content)
			before := treeHash(t, h.root)
			r := h.propose("edit_file", E{"path": "f.txt", "edits": tt.edits})
			if treeHash(t, h.root) != before {
				t.Fatal("propose mutated the tree")
			}
			wantMsg := fmt.Sprintf("About to edit file: %s (%d lines total)\n\nEdits to perform:\n%s",
				abs, tt.origLines, strings.Join(tt.items, "\n"))
			if r.Approval.Message != wantMsg {
				t.Fatalf("message:\n%q\nwant\n%q", r.Approval.Message, wantMsg)
			}
			if r.Approval.PreviewDiff != unidiff.Unified("f.txt", tt.content, tt.want) {
				t.Fatalf("preview %q", r.Approval.PreviewDiff)
			}
			res := h.approve(r)
			if !res.Success {
				t.Fatalf("%+v", res)
			}
			if got := h.read("f.txt"); got != tt.want {
				t.Fatalf("wrote %q, want %q", got, tt.want)
			}
			v := res.Value.(EditFileResult)
			d := unidiff.ForDisplay(abs, tt.content, tt.want)
			want := EditFileResult{Path: abs, EditsApplied: tt.applied, TotalEdits: len(tt.applied), OriginalLines: tt.origLines,
				NewLines: unidiff.LineCount(tt.want), Diff: d.Diff, WasTruncated: d.WasTruncated, FullDiff: d.FullDiff}
			if valueJSON(t, v) != valueJSON(t, want) {
				t.Fatalf("result %s\nwant %s", valueJSON(t, v), valueJSON(t, want))
			}
		})
	}
}

func TestEditFileMatchLinesListed(t *testing.T) {
	h := newHarness(t)
	h.write("f.txt", strings.Repeat("x\n", 25))
	r := h.propose("edit_file", E{"path": "f.txt", "edits": []E{{"type": "replace_pattern", "pattern": "x", "replacement": "y", "count": -1}}})
	want := `  1. Replace "x" with "y" (all occurrences on lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20...)`
	if !strings.HasSuffix(r.Approval.Message, want) {
		t.Fatalf("%q", r.Approval.Message)
	}
}

func TestEditFileFailures(t *testing.T) {
	long := strings.Repeat("p", 201)
	tests := []struct {
		name    string
		content string
		edits   []E
		kind    string // "" for a validation failure (no result)
		msg     string
	}{
		{"range out of bounds", "a\nb", []E{{"type": "replace_lines", "startLine": 2, "endLine": 3, "content": ""}},
			OutOfBoundsError, "Line range 2-3 is out of bounds (file has 2 lines)"},
		{"delete out of bounds", "a", []E{{"type": "delete_lines", "startLine": 2, "endLine": 2}},
			OutOfBoundsError, "Line range 2-2 is out of bounds (file has 1 lines)"},
		{"insert out of bounds", "a\n", []E{{"type": "insert", "line": 3, "content": "x"}},
			InsertOutOfBoundsError, "Insert position 3 is out of bounds (file has 2 lines)"},
		{"not found default", "abc", []E{{"type": "replace_pattern", "pattern": "zzz", "replacement": ""}},
			PatternNotFoundError, `Pattern "zzz" not found in file (expected 1 match)`},
		{"not found count", "abc", []E{{"type": "replace_pattern", "pattern": "zzz", "replacement": "", "count": 3}},
			PatternNotFoundError, `Pattern "zzz" not found in file (expected 3 matches)`},
		{"not found all", "abc", []E{{"type": "replace_pattern", "pattern": "zzz", "replacement": "", "count": -1}},
			PatternNotFoundError, `Pattern "zzz" not found in file`},
		{"blank pattern", "a b", []E{{"type": "replace_pattern", "pattern": "   ", "replacement": ""}},
			PatternNotFoundError, `Pattern "   " not found in file (expected 1 match)`},
		{"newline", "a", []E{{"type": "replace_pattern", "pattern": "a\nb", "replacement": ""}},
			PatternTooComplexError, "Pattern too complex for replace_pattern: Pattern contains newlines — this is a structural edit. Use replace_lines for structural edits instead."},
		{"escaped newline", "a", []E{{"type": "replace_pattern", "pattern": `re:a\nb`, "replacement": ""}},
			PatternTooComplexError, "Pattern too complex for replace_pattern: Pattern contains newlines — this is a structural edit. Use replace_lines for structural edits instead."},
		{"too long", "a", []E{{"type": "replace_pattern", "pattern": long, "replacement": ""}},
			PatternTooComplexError, "Pattern too complex for replace_pattern: Pattern is 201 characters long — too long for find-and-replace. Use replace_lines for structural edits instead."},
		{"multi-line class", "a", []E{{"type": "replace_pattern", "pattern": `re:a[\s\S]*b`, "replacement": ""}},
			PatternTooComplexError, "Pattern too complex for replace_pattern: Pattern uses multi-line matching — this is a structural edit. Use replace_lines for structural edits instead."},
		{"dotall flag", "a", []E{{"type": "replace_pattern", "pattern": `re:(?s)a.b`, "replacement": ""}},
			PatternTooComplexError, "Pattern too complex for replace_pattern: Pattern uses multi-line matching — this is a structural edit. Use replace_lines for structural edits instead."},
		{"nested quantifier", "aaa", []E{{"type": "replace_pattern", "pattern": "re:(a+)+", "replacement": ""}},
			InvalidPatternError, `Invalid pattern "re:(a+)+": Regex "(a+)+" rejected: contains nested quantifiers that risk catastrophic backtracking. Use a literal string or simplify the pattern.`},
		{"bad regex", "a", []E{{"type": "replace_pattern", "pattern": "re:(a", "replacement": ""}},
			InvalidPatternError, "Invalid pattern \"re:(a\": Invalid regex \"(a\": missing closing ): `(a`"},
		{"runaway regex", strings.Repeat("x", 100001), []E{{"type": "replace_pattern", "pattern": "re:x", "replacement": "", "count": -1}},
			RegexIterationLimitError, `Regex pattern "re:x" exceeded 100000 iterations. Simplify the pattern or use a literal string instead.`},
		{"later edit fails on evolved text", "a\nb", []E{{"type": "delete_lines", "startLine": 1, "endLine": 1}, {"type": "delete_lines", "startLine": 2, "endLine": 2}},
			OutOfBoundsError, "Line range 2-2 is out of bounds (file has 1 lines)"},
		{"start after end", "a\nb", []E{{"type": "replace_lines", "startLine": 2, "endLine": 1, "content": ""}, {"type": "replace_pattern", "pattern": "a", "replacement": "", "count": 0}},
			"", "edits.0: startLine must be less than or equal to endLine; edits.1.count: count must be a positive integer or -1 (all). Got 0 or invalid negative value."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			abs := h.write("f.txt", tt.content)
			before := treeHash(t, h.root)
			r := h.call("edit_file", E{"path": "f.txt", "edits": tt.edits})
			if treeHash(t, h.root) != before {
				t.Fatal("mutated")
			}
			if r.Approval != nil || r.Success || r.Error != tt.msg {
				t.Fatalf("got approval=%v error %q\nwant %q", r.Approval != nil, r.Error, tt.msg)
			}
			if tt.kind == "" {
				if r.Value != nil {
					t.Fatalf("validation failure has a result: %v", r.Value)
				}
				return
			}
			if r.Value != (EditFailure{ErrorType: tt.kind, Path: abs}) {
				t.Fatalf("result %+v", r.Value)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		h := newHarness(t)
		r := h.call("edit_file", E{"path": "gone.txt", "edits": []E{{"type": "insert", "line": 0, "content": ""}}})
		abs := h.path("gone.txt")
		if r.Error != "File does not exist: "+abs+". Cannot edit a file that doesn't exist." || r.Value != (EditFailure{FileNotFoundError, abs}) {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("directory", func(t *testing.T) {
		h := newHarness(t)
		must(t, os.Mkdir(h.path("d"), 0o755))
		r := h.call("edit_file", E{"path": "d", "edits": []E{{"type": "insert", "line": 0, "content": ""}}})
		if !strings.HasPrefix(r.Error, "File exists but cannot be read: "+h.path("d")+". Cause: ") || r.Value.(EditFailure).ErrorType != FileReadError {
			t.Fatalf("%+v", r)
		}
	})
}

func TestEditFileRefusesAfterChange(t *testing.T) {
	edits := []E{{"type": "replace_pattern", "pattern": "b", "replacement": "B"}}
	for _, change := range []string{"a\nb\nb\n", "b\n", ""} {
		t.Run(fmt.Sprintf("%q", change), func(t *testing.T) {
			h := newHarness(t)
			h.write("f.txt", "a\nb\n")
			r := h.propose("edit_file", E{"path": "f.txt", "edits": edits})
			h.write("f.txt", change)
			res := h.approve(r)
			if res.Success || res.Error != h.path("f.txt")+" changed since the preview was approved; propose the change again." {
				t.Fatalf("%+v", res)
			}
			if h.read("f.txt") != change {
				t.Fatal("twin wrote over the change")
			}
		})
	}
}

// gitApplyTo applies a preview diff with the real git to a copy of
// original named name, and returns what git produced.
func gitApplyTo(t *testing.T, name, original, diff string) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, name), []byte(original), 0o644))
	if diff == "" {
		return original
	}
	patch := filepath.Join(t.TempDir(), "p.diff")
	must(t, os.WriteFile(patch, []byte(diff), 0o644))
	cmd := exec.Command("git", "apply", patch)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\n%s", err, out, diff)
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if os.IsNotExist(err) {
		return ""
	}
	must(t, err)
	return string(b)
}

// TestPreviewIsWhatIsWritten: for random files and edits, applying the
// approved preview with git to a copy of the original gives, byte for
// byte, what the twin writes.
func TestPreviewIsWhatIsWritten(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	words := []string{"alpha", "beta", "gamma", "", "x = 1", "\tindent", "end\r"}
	randText := func() string {
		var b strings.Builder
		for range rng.Intn(15) {
			b.WriteString(words[rng.Intn(len(words))] + "\n")
		}
		s := b.String()
		if rng.Intn(3) == 0 {
			s = strings.TrimSuffix(s, "\n")
		}
		return s
	}
	randEdit := func(n int) E {
		switch rng.Intn(4) {
		case 0:
			s := 1 + rng.Intn(n)
			return E{"type": "replace_lines", "startLine": s, "endLine": s + rng.Intn(n-s+1), "content": randText()}
		case 1:
			return E{"type": "insert", "line": rng.Intn(n + 1), "content": words[rng.Intn(len(words))]}
		case 2:
			s := 1 + rng.Intn(n)
			return E{"type": "delete_lines", "startLine": s, "endLine": s}
		}
		return E{"type": "replace_pattern", "pattern": words[rng.Intn(3)], "replacement": "Z", "count": -1}
	}
	for i := range 40 {
		t.Run(fmt.Sprint("edit_file/", i), func(t *testing.T) {
			h := newHarness(t)
			orig := randText()
			h.write("f.txt", orig)
			r := h.call("edit_file", E{"path": "f.txt", "edits": []E{randEdit(unidiff.LineCount(orig))}})
			if r.Approval == nil {
				if r.Value.(EditFailure).ErrorType != PatternNotFoundError {
					t.Fatalf("%+v", r)
				}
				return
			}
			if res := h.approve(&r); !res.Success {
				t.Fatalf("%+v", res)
			}
			if got, want := gitApplyTo(t, "f.txt", orig, r.Approval.PreviewDiff), h.read("f.txt"); got != want {
				t.Fatalf("preview gives %q, twin wrote %q", got, want)
			}
		})
	}
	for i := range 25 {
		t.Run(fmt.Sprint("write_file/", i), func(t *testing.T) {
			h := newHarness(t)
			orig, neu := randText(), randText()
			if i%3 == 0 {
				orig = "" // new file: the copy of the original is empty
			} else {
				h.write("f.txt", orig)
			}
			r := h.propose("write_file", E{"path": "f.txt", "content": neu})
			if res := h.approve(r); !res.Success {
				t.Fatalf("%+v", res)
			}
			if got, want := gitApplyTo(t, "f.txt", orig, r.Approval.PreviewDiff), h.read("f.txt"); got != want || want != neu {
				t.Fatalf("preview gives %q, twin wrote %q", got, want)
			}
		})
	}
}

func BenchmarkEditFileProposeExecute(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&sb, "line %d: some source text here\n", i)
	}
	orig := sb.String()
	path := filepath.Join(dir, "f.txt")
	ts := Tools()
	propose, execute := ts[2].Handler, ts[3].Handler
	env := &envForBench{}
	args, _ := json.Marshal(E{"path": path, "edits": []E{
		{"type": "replace_pattern", "pattern": "line 1000:", "replacement": "LINE 1000:"},
		{"type": "insert", "line": 10, "content": "inserted"},
	}})
	b.ReportAllocs()
	for b.Loop() {
		if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
			b.Fatal(err)
		}
		r := propose(b.Context(), env.get(dir), args)
		if r.Approval == nil {
			b.Fatalf("%+v", r)
		}
		if res := execute(b.Context(), env.get(dir), r.Approval.ExecuteArgs); !res.Success {
			b.Fatalf("%+v", res)
		}
	}
}
