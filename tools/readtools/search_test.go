package readtools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func names(t *testing.T, v any) []string {
	t.Helper()
	var out []string
	for _, e := range v.([]any) {
		out = append(out, obj(t, e)["name"].(string))
	}
	return out
}

func TestLs(t *testing.T) {
	f := newFixture(t)
	f.write("main.go", "")
	f.write("README.md", "")
	f.write(".env", "")
	f.write("node_modules/x/index.js", "")
	f.write("build/out.bin", "")
	f.write("src/app.go", "")
	f.write("src/deep/util.go", "")
	f.write(".gitignore", "# comment\nbuild/\n*.log\n")
	f.write("debug.log", "")
	tests := []struct{ name, args, want string }{
		{"default skips hidden and ignored", `{}`, "README.md main.go src"},
		{"showHidden keeps all", `{"showHidden":true}`, ".env .gitignore README.md build debug.log main.go node_modules src"},
		{"recursive", `{"recursive":true}`, "README.md main.go src app.go deep util.go"},
		{"maxDepth", `{"recursive":true,"maxDepth":2}`, "README.md main.go src app.go deep"},
		{"maxDepth needs recursive", `{"maxDepth":5}`, "README.md main.go src"},
		{"substring", `{"recursive":true,"pattern":" .go "}`, "main.go app.go util.go"},
		{"glob is literal", `{"pattern":"*.go"}`, ""},
		{"regex", `{"recursive":true,"pattern":"re:^(app|util)\\.go$"}`, "app.go util.go"},
		{"maxResults", `{"recursive":true,"maxResults":2}`, "README.md main.go"},
		{"subdir", `{"path":"src"}`, "app.go deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(names(t, f.ok("ls", tt.args)), " ")
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("entry shape", func(t *testing.T) {
		v := f.ok("ls", `{"path":"src"}`).([]any)
		if mustJSON(v[0]) != mustJSON(map[string]any{"name": "app.go", "path": filepath.Join(f.dir, "src", "app.go"), "type": "file"}) || obj(t, v[1])["type"] != "dir" {
			t.Fatalf("entries = %v", v)
		}
	})
	t.Run("failures", func(t *testing.T) {
		miss := filepath.Join(f.dir, "nope")
		r, _ := f.call("ls", `{"path":"nope"}`)
		if r.Success || !strings.HasPrefix(r.Error, "Path not found: "+miss+". ") {
			t.Fatalf("missing: %q", r.Error)
		}
		f.fail("ls", `{"path":"main.go"}`, "Not a directory: "+filepath.Join(f.dir, "main.go"))
		f.fail("ls", `{"pattern":"re:(a+)+"}`, `Regex "(a+)+" rejected: contains nested quantifiers that risk catastrophic backtracking. Use a literal string or simplify the pattern.`)
		r, _ = f.call("ls", `{"pattern":"re:(x"}`)
		if !strings.HasPrefix(r.Error, `Invalid regex "(x": `) {
			t.Fatalf("invalid: %q", r.Error)
		}
	})
}

func TestFind(t *testing.T) {
	f := newFixture(t)
	f.write("a/one.go", "")
	f.write("a/two.md", "")
	f.write("a/b/three.go", "")
	f.write("Big.GO", strings.Repeat("x", 5000))
	f.write(".hidden/four.go", "")
	f.write("vendor/five.go", "")
	if err := os.Symlink("a", filepath.Join(f.dir, "lnk")); err != nil {
		t.Fatal(err)
	}
	set := func(v any) string {
		m := obj(t, v)
		var out []string
		for _, r := range m["results"].([]any) {
			out = append(out, obj(t, r)["name"].(string))
		}
		return strings.Join(sorted(out), " ")
	}
	tests := []struct{ name, args, want string }{
		{"glob name", `{"smart":false,"name":"*.go"}`, "Big.GO five.go one.go three.go"},
		{"case sensitive glob", `{"smart":false,"name":"*.go","caseSensitive":true}`, "five.go one.go three.go"},
		{"brace glob", `{"smart":false,"name":"*.{md,GO}","caseSensitive":true}`, "Big.GO two.md"},
		{"substring", `{"smart":false,"name":"e.g"}`, "five.go one.go three.go"},
		{"regex", `{"smart":false,"name":"re:^t"}`, "three.go two.md"},
		{"type dir", `{"smart":false,"type":"dir"}`, "a b vendor"},
		{"type symlink", `{"smart":false,"type":"symlink"}`, "lnk"},
		{"maxDepth", `{"smart":false,"name":".go","maxDepth":1}`, "Big.GO"},
		{"minDepth", `{"smart":false,"type":"file","minDepth":3}`, "three.go"},
		{"hidden", `{"smart":false,"name":"four","includeHidden":true}`, "four.go"},
		{"pathPattern glob", `{"smart":false,"pathPattern":"*/a/*.go"}`, "one.go three.go"},
		{"pathPattern substring", `{"smart":false,"pathPattern":"/b/","type":"file"}`, "three.go"},
		{"excludePaths", `{"smart":false,"name":".go","excludePaths":["vendor","a/b"]}`, "Big.GO one.go"},
		{"size", `{"smart":false,"size":"+4k"}`, "Big.GO"},
		{"mtime", `{"smart":false,"type":"file","mtime":"+1"}`, ""},
		{"path", `{"path":"a","name":".go"}`, "one.go three.go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := set(f.ok("find", tt.args)); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("substring", func(t *testing.T) {
		if got := set(f.ok("glob", `{"smart":false,"name":"one"}`)); got != "one.go" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("shape and maxResults", func(t *testing.T) {
		m := obj(t, f.ok("find", `{"smart":false,"name":".go","maxResults":2}`))
		if m["totalFound"] != 4.0 || m["truncated"] != true || len(m["results"].([]any)) != 2 || m["message"] == nil {
			t.Fatalf("got %v", m)
		}
		r := obj(t, m["results"].([]any)[0])
		if len(r) != 3 || r["path"] == nil || r["type"] != "file" {
			t.Fatalf("item %v", r)
		}
		m = obj(t, f.ok("find", `{"smart":false,"name":"one"}`))
		if _, has := m["message"]; has || m["truncated"] != false {
			t.Fatalf("uncapped %v", m)
		}
	})
	t.Run("smart roots reach parents", func(t *testing.T) {
		f.env.WorkDir = filepath.Join(f.dir, "a", "b")
		defer func() { f.env.WorkDir = f.dir }()
		if got := set(f.ok("find", `{"name":"two.md"}`)); got != "two.md" {
			t.Fatalf("got %q", got)
		}
		if got := set(f.ok("find", `{"name":"two.md","smart":false}`)); got != "" {
			t.Fatalf("smart:false got %q", got)
		}
	})
	t.Run("failures", func(t *testing.T) {
		r, _ := f.call("find", `{"path":"nope"}`)
		if !strings.HasPrefix(r.Error, "find command failed: ") {
			t.Fatalf("got %q", r.Error)
		}
		r, _ = f.call("find", `{"smart":false,"size":"huge"}`)
		if !strings.HasPrefix(r.Error, "find command failed: invalid size") {
			t.Fatalf("got %q", r.Error)
		}
		f.fail("find", `{"smart":false,"name":"re:(a*)*"}`, `Regex "(a*)*" rejected: contains nested quantifiers that risk catastrophic backtracking. Use a literal string or simplify the pattern.`)
	})
}

func TestFindByteCap(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("n", 200)
	for i := range 1400 { // 1400 × ~250 bytes > 262144
		if err := os.WriteFile(filepath.Join(f.dir, fmt.Sprintf("%s%04d", long, i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := obj(t, f.ok("find", `{"smart":false,"maxResults":2000}`))
	if m["truncated"] != true || m["message"] != findCapMessage || m["totalFound"].(float64) >= 1400 {
		t.Fatalf("truncated %v message %v total %v", m["truncated"], m["message"], m["totalFound"])
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
