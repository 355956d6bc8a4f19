package unidiff

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitApply applies diff to a file holding old with the real git, after
// `git apply --check`, and returns what git wrote.
func gitApply(t *testing.T, name, old, diff string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	patch := filepath.Join(t.TempDir(), "change.patch")
	if err := os.WriteFile(patch, []byte(diff), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		// Keep git from treating an enclosing repository as the root.
		cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s\npatch:\n%s", strings.Join(args, " "), err, out, diff)
		}
	}
	run("apply", "--check", patch)
	run("apply", patch)
	got, err := os.ReadFile(filepath.Join(dir, name))
	if os.IsNotExist(err) {
		return "" // git removes a file a traditional patch empties
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(got)
}

func TestUnifiedExact(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"identical", "a\nb\n", "a\nb\n", ""},
		{"change middle", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			"--- a/f.txt\n+++ b/f.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{"insert at start", "a\nb\n", "new\na\nb\n",
			"--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,3 @@\n+new\n a\n b\n"},
		{"empty original", "", "x\ny\n",
			"--- a/f.txt\n+++ b/f.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"delete everything", "x\n", "",
			"--- a/f.txt\n+++ b/f.txt\n@@ -1 +0,0 @@\n-x\n"},
		{"add trailing newline", "a\nb", "a\nb\n",
			"--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{"drop trailing newline", "a\nb\n", "a\nb",
			"--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"},
		{"context without newline", "a\nb\nc", "A\nb\nc",
			"--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n-a\n+A\n b\n c\n\\ No newline at end of file\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ntwelve\n",
			"--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+twelve\n"},
		{"gap of six merges", "1\n2\n3\n4\n5\n6\n7\n8\n", "one\n2\n3\n4\n5\n6\n7\neight\n",
			"--- a/f.txt\n+++ b/f.txt\n@@ -1,8 +1,8 @@\n-1\n+one\n 2\n 3\n 4\n 5\n 6\n 7\n-8\n+eight\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Unified("f.txt", tt.old, tt.new)
			if got != tt.want {
				t.Fatalf("Unified:\n%s\nwant:\n%s", got, tt.want)
			}
			if got != "" {
				if applied := gitApply(t, "f.txt", tt.old, got); applied != tt.new {
					t.Fatalf("git apply gave %q, want %q", applied, tt.new)
				}
			}
		})
	}
}

func TestUnifiedGitApplies(t *testing.T) {
	tests := []struct{ name, old, new string }{
		{"crlf change", "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n"},
		{"crlf to lf", "a\r\nb\r\n", "a\nb\n"},
		{"mixed endings", "a\r\nb\nc\r\n", "a\nb\r\nc\r\nd"},
		{"only newlines", "\n\n\n", "\n\n"},
		{"single line no newline both", "a", "b"},
		{"empty to no newline", "", "x"},
		{"no newline to empty", "x", ""},
		{"unicode", "héllo\n世界\n😀\n", "héllo\n世界!\n😀\n"},
		{"duplicate lines", "x\nx\nx\ny\nx\nx\n", "x\ny\nx\nx\nx\nx\n"},
		{"leading dashes", "-- a\n++ b\n--- c\n", "+++ c\n-- a\n"},
		{"backslash lines", "\\ not a marker\n", "\\ not a marker\nz\n"},
		{"long file end change", strings.Repeat("line\n", 100) + "end\n", strings.Repeat("line\n", 100) + "END\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Unified("f.txt", tt.old, tt.new)
			if got := gitApply(t, "f.txt", tt.old, d); got != tt.new {
				t.Fatalf("git apply gave %q, want %q\npatch:\n%s", got, tt.new, d)
			}
		})
	}
}

// TestUnifiedProperty applies random edits with git and checks it
// reproduces the new text exactly. The seed is fixed so a failure repeats.
func TestUnifiedProperty(t *testing.T) {
	rng := rand.New(rand.NewSource(20261130))
	vocab := []string{"a", "b", "c", "", "func x() {", "}", "\treturn", "a\r", "  b"}
	randText := func() string {
		n := rng.Intn(25)
		lines := make([]string, n)
		for i := range lines {
			lines[i] = vocab[rng.Intn(len(vocab))]
		}
		s := strings.Join(lines, "\n")
		if n > 0 && rng.Intn(4) != 0 {
			s += "\n"
		}
		return s
	}
	mutate := func(s string) string {
		lines := strings.SplitAfter(s, "\n")
		for k := rng.Intn(5); k >= 0; k-- {
			i := rng.Intn(len(lines) + 1)
			switch rng.Intn(4) {
			case 0: // insert
				lines = append(lines[:i], append([]string{vocab[rng.Intn(len(vocab))] + "\n"}, lines[i:]...)...)
			case 1: // delete
				if i < len(lines) {
					lines = append(lines[:i], lines[i+1:]...)
				}
			case 2: // change
				if i < len(lines) {
					lines[i] = fmt.Sprintf("changed %d\n", rng.Intn(100))
				}
			case 3: // toggle the final newline
				out := strings.Join(lines, "")
				if strings.HasSuffix(out, "\n") {
					out = strings.TrimSuffix(out, "\n")
				} else {
					out += "\n"
				}
				lines = strings.SplitAfter(out, "\n")
			}
		}
		return strings.Join(lines, "")
	}
	for i := range 100 {
		old := randText()
		var neu string
		if rng.Intn(5) == 0 {
			neu = randText()
		} else {
			neu = mutate(old)
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			d := Unified("p.txt", old, neu)
			if old == neu {
				if d != "" {
					t.Fatalf("identical texts gave a diff:\n%s", d)
				}
				return
			}
			if got := gitApply(t, "p.txt", old, d); got != neu {
				t.Fatalf("git apply gave %q, want %q\nold %q\npatch:\n%s", got, neu, old, d)
			}
		})
	}
}

func TestForDisplay(t *testing.T) {
	many := func(prefix string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%s%d\n", prefix, i)
		}
		return b.String()
	}
	t.Run("created", func(t *testing.T) {
		d := ForDisplay("/x/new.txt", "", "a\nb\n")
		if d != (Display{Diff: "+ Created file: /x/new.txt (2 lines)"}) {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("small diff untouched", func(t *testing.T) {
		d := ForDisplay("/x/f.txt", "a\n", "b\n")
		want := "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-a\n+b\n"
		if d != (Display{Diff: want}) {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("exactly twenty changes not cut", func(t *testing.T) {
		d := ForDisplay("/x/f.txt", many("o", 10), many("n", 10))
		if d.WasTruncated || d.FullDiff != "" || strings.Contains(d.Diff, "truncated") {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("cut after twenty changes", func(t *testing.T) {
		old, neu := many("o", 15), many("n", 15)
		d := ForDisplay("/x/f.txt", old, neu)
		if !d.WasTruncated || d.FullDiff != Unified("f.txt", old, neu) {
			t.Fatalf("%+v", d)
		}
		if !strings.HasSuffix(d.Diff, "\n"+TruncatedMarker) {
			t.Fatalf("no marker: %q", d.Diff)
		}
		changed := 0
		for _, l := range strings.Split(d.Diff, "\n")[2:] {
			if strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-") {
				changed++
			}
		}
		if changed != 20 {
			t.Fatalf("%d changed lines shown, want 20", changed)
		}
		if !strings.HasPrefix(d.FullDiff, strings.TrimSuffix(d.Diff, TruncatedMarker)) {
			t.Fatal("display diff is not a prefix of the full diff")
		}
	})
	t.Run("header-like removed lines count", func(t *testing.T) {
		old := strings.Repeat("-- x\n", 25)
		d := ForDisplay("/x/f.txt", old, "y\n")
		if !d.WasTruncated {
			t.Fatalf("%+v", d)
		}
	})
}

func BenchmarkUnifiedDiff(b *testing.B) {
	var ob, nb strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&ob, "line %d of the original file\n", i)
		if i%97 == 0 {
			fmt.Fprintf(&nb, "edited line %d\n", i)
		} else {
			fmt.Fprintf(&nb, "line %d of the original file\n", i)
		}
	}
	old, neu := ob.String(), nb.String()
	b.ReportAllocs()
	for b.Loop() {
		if Unified("big.txt", old, neu) == "" {
			b.Fatal("no diff")
		}
	}
}

// applyUnified is a strict reader of Unified's output, written from the
// format alone: exactly two header lines, then hunks whose lines each
// start with "@@ ", " ", "-", "+" or "\". It rebuilds the new text from
// the old one, so what a person reads in the diff is what is written.
func applyUnified(old, diff string) (string, error) {
	lines := strings.SplitAfter(diff, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "--- ") || !strings.HasPrefix(lines[1], "+++ ") {
		return "", fmt.Errorf("bad headers")
	}
	src := strings.SplitAfter(old, "\n")
	if len(src) > 0 && src[len(src)-1] == "" {
		src = src[:len(src)-1]
	}
	var out []string
	next := 0 // next old line to copy
	var last *string
	for _, l := range lines[2:] {
		if l == "" {
			continue
		}
		switch l[0] {
		case '@':
			var a, b, c, d int
			if _, err := fmt.Sscanf(l, "@@ -%d,%d +%d,%d @@", &a, &b, &c, &d); err != nil {
				if _, err := fmt.Sscanf(l, "@@ -%d", &a); err != nil {
					return "", fmt.Errorf("bad hunk header %q", l)
				}
			}
			start := a - 1
			if b == 0 && strings.HasPrefix(l, fmt.Sprintf("@@ -%d,0 ", a)) {
				start = a
			}
			for next < start {
				out = append(out, src[next])
				next++
			}
			last = nil
		case ' ', '-':
			if next >= len(src) || strings.TrimSuffix(src[next], "\n") != strings.TrimSuffix(l[1:], "\n") {
				return "", fmt.Errorf("line %q does not match the old text", l)
			}
			if l[0] == ' ' {
				out = append(out, src[next])
				last = &out[len(out)-1]
			} else {
				last = nil
			}
			next++
		case '+':
			out = append(out, l[1:])
			last = &out[len(out)-1]
		case '\\':
			if last != nil {
				*last = strings.TrimSuffix(*last, "\n")
			}
		default:
			return "", fmt.Errorf("line %q is neither header, hunk nor change", l)
		}
	}
	out = append(out, src[next:]...)
	return strings.Join(out, ""), nil
}

// FuzzUnifiedIsWhatIsWritten: for any file name and texts (CRLF, no final
// newline, control, bidi and invalid bytes included), the diff has exactly
// its two header lines, and reading it back from the old text gives the
// new text.
func FuzzUnifiedIsWhatIsWritten(f *testing.F) {
	f.Add("p.txt", "a\nb\n", "a\nc\n")
	f.Add("x\n@@ -1 +1 @@\n-safe\n+safe", "a\n", "evil\n")
	f.Add("n\r\u202e", "a\r\nb\r\n", "a\r\nb")
	f.Add("q\"\\", "", "x")
	f.Add("bin", "\x00\xff\n", "\x00\xfe")
	f.Fuzz(func(t *testing.T, name, old, neu string) {
		d := Unified(name, old, neu)
		if old == neu {
			if d != "" {
				t.Fatalf("identical texts gave a diff:\n%s", d)
			}
			return
		}
		head := strings.SplitN(d, "\n", 3)
		if len(head) < 3 || head[0] != "--- "+headerName("a/"+name) || head[1] != "+++ "+headerName("b/"+name) ||
			strings.ContainsAny(head[0]+head[1], "\r\n") {
			t.Fatalf("headers of %q: %q", name, head[:2])
		}
		got, err := applyUnified(old, d)
		if err != nil || got != neu {
			t.Fatalf("read back %q (%v), want %q\ndiff:\n%s", got, err, neu, d)
		}
	})
}
