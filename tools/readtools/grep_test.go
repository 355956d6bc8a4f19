package readtools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/tools"
)

func TestGrep(t *testing.T) {
	f := newFixture(t)
	a := f.write("src/a.txt", "alpha\nfoo: 1:2\nbeta\nFOO again\n")
	b := f.write("src/sub/b.go", "package x // foo\n")
	f.write("top.txt", "foo at top\n")
	t.Run("content", func(t *testing.T) {
		m := obj(t, f.ok("grep", `{"pattern":"foo","path":"src"}`))
		want := `[{"file":"` + a + `","line":2,"text":"foo: 1:2"},{"file":"` + b + `","line":1,"text":"package x // foo"}]`
		if got := mustJSON(sortByFile(m["matches"])); got != want {
			t.Fatalf("matches\n got %s\nwant %s", got, want)
		}
		if m["totalFound"] != 2.0 || m["message"] != `Found 2 matches for pattern "foo"` || m["outputMode"] != "content" ||
			m["recursive"] != true || m["regex"] != false || m["searchPath"] != filepath.Join(f.dir, "src") || m["truncated"] != false {
			t.Fatalf("result %v", m)
		}
		for _, k := range []string{"ignoreCase", "filePattern", "exclude", "excludeDir", "contextLines"} {
			if _, has := m[k]; has {
				t.Errorf("%s echoed though not given", k)
			}
		}
	})
	t.Run("context lines", func(t *testing.T) {
		m := obj(t, f.ok("grep", `{"pattern":"beta","path":"src/a.txt","contextLines":1}`))
		want := `[{"contextAfter":[{"line":4,"text":"FOO again"}],"contextBefore":[{"line":2,"text":"foo: 1:2"}],"file":"` + a + `","line":3,"text":"beta"}]`
		if got := mustJSON(m["matches"]); got != want {
			t.Fatalf("got %s\nwant %s", got, want)
		}
		if m["message"] != `Found 1 matches for pattern "beta" (with 1 context lines)` || m["contextLines"] != 1.0 {
			t.Fatalf("result %v", m)
		}
	})
	t.Run("ignoreCase regex filePattern", func(t *testing.T) {
		m := obj(t, f.ok("grep", `{"pattern":"re:^fo+","ignoreCase":true,"filePattern":"*.txt","path":"src"}`))
		if m["totalFound"] != 2.0 || m["regex"] != true || m["ignoreCase"] != true || m["filePattern"] != "*.txt" {
			t.Fatalf("result %v", m)
		}
	})
	t.Run("not recursive", func(t *testing.T) {
		m := obj(t, f.ok("grep", `{"pattern":"foo","recursive":false}`))
		if m["totalFound"] != 1.0 {
			t.Fatalf("result %v", m)
		}
	})
	t.Run("files", func(t *testing.T) {
		m := obj(t, f.ok("grep", `{"pattern":"foo","outputMode":"files","excludeDir":"sub"}`))
		files := sorted(toStrings(m["files"]))
		if strings.Join(files, ",") != a+","+filepath.Join(f.dir, "top.txt") || m["message"] != `Found 2 files matching pattern "foo"` {
			t.Fatalf("result %v", m)
		}
		if _, has := m["matches"]; has {
			t.Fatal("files mode has matches")
		}
	})
	t.Run("count", func(t *testing.T) {
		m := obj(t, f.ok("grep", `{"pattern":"foo","outputMode":"count","ignoreCase":true,"path":"src/a.txt"}`))
		if mustJSON(m["counts"]) != `[{"count":2,"file":"`+a+`"}]` || m["message"] != `Found matches in 1 files for pattern "foo"` {
			t.Fatalf("result %v", m)
		}
	})
	t.Run("no matches", func(t *testing.T) {
		m := obj(t, f.ok("grep", `{"pattern":"zzz"}`))
		if m["message"] != `No matches found for pattern "zzz"` || mustJSON(m["matches"]) != "[]" {
			t.Fatalf("result %v", m)
		}
		m = obj(t, f.ok("grep", `{"pattern":"zzz","outputMode":"files"}`))
		if m["message"] != `No files found matching pattern "zzz"` {
			t.Fatalf("result %v", m)
		}
		m = obj(t, f.ok("grep", `{"pattern":"zzz","outputMode":"count"}`))
		if mustJSON(m["counts"]) != "[]" {
			t.Fatalf("result %v", m)
		}
	})
	t.Run("hostile pattern is not a flag", func(t *testing.T) {
		f.write("flags.txt", "--help\n")
		m := obj(t, f.ok("grep", `{"pattern":"--help","path":"flags.txt"}`))
		if m["totalFound"] != 1.0 {
			t.Fatalf("result %v", m)
		}
	})
	t.Run("maxResults", func(t *testing.T) {
		f.write("many.txt", strings.Repeat("hit\n", 50))
		m := obj(t, f.ok("grep", `{"pattern":"hit","path":"many.txt","maxResults":5}`))
		if m["totalFound"] != 5.0 {
			t.Fatalf("result %v", m["totalFound"])
		}
	})
	t.Run("failures", func(t *testing.T) {
		r, _ := f.call("grep", `{"pattern":"re:(","path":"top.txt"}`)
		if r.Success || !strings.HasPrefix(r.Error, "grep command failed: ") {
			t.Fatalf("bad regex: %+v", r)
		}
		f.fail("grep", `{"pattern":"x","path":"/nonexistent/zz"}`, "Path not found: /nonexistent/zz")
	})
}

func TestGrepOutputCap(t *testing.T) {
	f := newFixture(t)
	line := "match " + strings.Repeat("x", 1000) + "\n"
	f.write("huge.txt", strings.Repeat(line, 400)) // ~400 KB of matching lines
	r, v := f.call("grep", `{"pattern":"match","path":"huge.txt","maxResults":2000}`)
	m := obj(t, v)
	if !r.Success || !r.Truncated || m["truncated"] != true {
		t.Fatalf("not truncated: %v", m["truncated"])
	}
	n := len(m["matches"].([]any))
	if n == 0 || n >= 400 {
		t.Fatalf("kept %d matches", n)
	}
	for _, x := range m["matches"].([]any) {
		if len(obj(t, x)["text"].(string)) != len(line)-1 {
			t.Fatal("a partial last line survived the cap")
		}
	}
	if !strings.HasSuffix(m["message"].(string), " Output truncated at 262144 bytes; narrow the path or pattern.") {
		t.Fatalf("message %q", m["message"])
	}
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func sortByFile(v any) []any {
	l := append([]any(nil), v.([]any)...)
	for i := range l {
		for j := i + 1; j < len(l); j++ {
			if l[j].(map[string]any)["file"].(string) < l[i].(map[string]any)["file"].(string) {
				l[i], l[j] = l[j], l[i]
			}
		}
	}
	return l
}

// BenchmarkReadFile measures one small ranged read_file call.
func BenchmarkReadFile(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "small.go"), []byte(strings.Repeat("func x() {}\n", 200)), 0o644); err != nil {
		b.Fatal(err)
	}
	env := &tools.Env{WorkDir: dir}
	args := json.RawMessage(`{"path":"small.go","startLine":10,"endLine":60}`)
	b.ReportAllocs()
	for b.Loop() {
		if r := readFileHandler(b.Context(), env, args); !r.Success {
			b.Fatal(r.Error)
		}
	}
}
