package readtools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
)

// fixture is a temp tree with the agent's cwd at its root.
type fixture struct {
	t   *testing.T
	dir string
	env *tools.Env
	reg *tools.Registry
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	reg, err := tools.NewRegistry(Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, dir: dir, reg: reg, env: &tools.Env{Home: t.TempDir(), WorkDir: dir}}
}

// write creates dir/rel with content, making parents.
func (f *fixture) write(rel, content string) string {
	f.t.Helper()
	p := filepath.Join(f.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// call validates args like the registry does, runs the handler and
// returns the result with Value round-tripped through JSON.
func (f *fixture) call(name, args string) (tools.Result, any) {
	f.t.Helper()
	if err := f.reg.Validate(name, json.RawMessage(args)); err != nil {
		f.t.Fatalf("%s %s: validation: %v", name, args, err)
	}
	tl, _ := f.reg.Lookup(name)
	r := tl.Handler(context.Background(), f.env, json.RawMessage(args))
	if r.Success && r.Chdir != "" {
		f.env.WorkDir = r.Chdir // as the agent does after a batch of one
	}
	var v any
	b, err := json.Marshal(r.Value)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		f.t.Fatal(err)
	}
	return r, v
}

// ok calls and requires success, returning the JSON value.
func (f *fixture) ok(name, args string) any {
	f.t.Helper()
	r, v := f.call(name, args)
	if !r.Success {
		f.t.Fatalf("%s %s failed: %s", name, args, r.Error)
	}
	return v
}

// fail calls and requires the exact failure message.
func (f *fixture) fail(name, args, want string) {
	f.t.Helper()
	r, _ := f.call(name, args)
	if r.Success {
		f.t.Fatalf("%s %s succeeded, want failure %q", name, args, want)
	}
	if r.Error != want {
		f.t.Fatalf("%s %s error\n got %q\nwant %q", name, args, r.Error, want)
	}
}

func obj(t *testing.T, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("want object, got %T %v", v, v)
	}
	return m
}

func jsonArgs(kv map[string]any) string {
	b, _ := json.Marshal(kv)
	return string(b)
}

func TestToolsDeclared(t *testing.T) {
	want := []string{"pwd", "cd", "read_file", "head", "tail", "stat", "ls", "find", "glob", "grep"}
	ts := Tools()
	if len(ts) != len(want) {
		t.Fatalf("got %d tools, want %d", len(ts), len(want))
	}
	reg, err := tools.NewRegistry(ts...)
	if err != nil {
		t.Fatal(err)
	}
	for i, tl := range ts {
		t.Run(tl.Name, func(t *testing.T) {
			if tl.Name != want[i] {
				t.Errorf("tool %d is %q, want %q", i, tl.Name, want[i])
			}
			if tl.Level != messages.LevelReadOnly || tl.Gated() || tl.Description == "" || tl.Handler == nil {
				t.Errorf("bad declaration: %+v", tl)
			}
			var s struct {
				AdditionalProperties *bool `json:"additionalProperties"`
			}
			if err := json.Unmarshal(tl.Schema, &s); err != nil || s.AdditionalProperties == nil || *s.AdditionalProperties {
				t.Errorf("schema not strict: %s", tl.Schema)
			}
			if err := reg.Validate(tl.Name, json.RawMessage(`{"bogus":1,"path":"x","pattern":"x"}`)); err == nil {
				t.Errorf("unknown key accepted")
			}
		})
	}
	for _, bad := range []struct{ tool, args string }{
		{"read_file", `{"path":""}`},
		{"read_file", `{"path":"x","maxBytes":0}`},
		{"read_file", `{"path":"x","startLine":0}`},
		{"read_file", `{"path":"x","startLine":"1"}`},
		{"ls", `{"maxResults":0}`},
		{"find", `{"maxDepth":-1}`},
		{"find", `{"type":"socket"}`},
		{"grep", `{"pattern":""}`},
		{"grep", `{"pattern":"x","outputMode":"lines"}`},
		{"grep", `{"pattern":"x","contextLines":-1}`},
		{"cd", `{}`},
	} {
		if err := reg.Validate(bad.tool, json.RawMessage(bad.args)); err == nil {
			t.Errorf("%s %s: accepted", bad.tool, bad.args)
		}
	}
}

func TestPwdCd(t *testing.T) {
	f := newFixture(t)
	f.write("sub/file.txt", "x")
	if got := f.ok("pwd", `{}`); got != f.dir {
		t.Fatalf("pwd = %v, want %s", got, f.dir)
	}
	if got := f.ok("cd", `{"path":"sub"}`); got != filepath.Join(f.dir, "sub") {
		t.Fatalf("cd = %v", got)
	}
	if got := f.ok("pwd", `{}`); got != filepath.Join(f.dir, "sub") {
		t.Fatalf("pwd after cd = %v", got)
	}
	f.fail("cd", `{"path":"nope"}`, "Path not found: nope")
	f.fail("cd", `{"path":"file.txt"}`, "Not a directory: "+filepath.Join(f.dir, "sub", "file.txt"))
	if got := f.ok("cd", `{"path":".."}`); got != f.dir {
		t.Fatalf("cd .. = %v", got)
	}
	if got := f.ok("cd", `{"path":"~"}`); got != f.env.Home {
		t.Fatalf("cd ~ = %v", got)
	}
}

func TestReadFile(t *testing.T) {
	f := newFixture(t)
	p := f.write("a.txt", "one\ntwo\nthree\n")
	f.write("crlf.txt", "\uFEFFl1\r\nl2\r\nl3")
	f.write("empty.txt", "")
	f.write("img.PNG", "\x89PNG")
	f.write("latin1.txt", "caf\xe9 cr\xe8me\n")
	tests := []struct {
		name, args string
		want       map[string]any
	}{
		{"whole", `{"path":"a.txt"}`, map[string]any{"path": p, "encoding": "utf-8", "content": "one\ntwo\nthree\n", "truncated": false, "totalLines": 4.0, "returnedLines": 4.0}},
		{"range", `{"path":"a.txt","startLine":2,"endLine":3}`, map[string]any{"content": "two\nthree", "totalLines": 4.0, "returnedLines": 2.0, "range": map[string]any{"startLine": 2.0, "endLine": 3.0}}},
		{"start only", `{"path":"a.txt","startLine":3}`, map[string]any{"content": "three\n", "returnedLines": 2.0, "range": map[string]any{"startLine": 3.0, "endLine": 4.0}}},
		{"end clamps", `{"path":"a.txt","endLine":99}`, map[string]any{"content": "one\ntwo\nthree\n", "range": map[string]any{"startLine": 1.0, "endLine": 4.0}}},
		{"start past end", `{"path":"a.txt","startLine":9}`, map[string]any{"content": "", "returnedLines": 1.0, "range": map[string]any{"startLine": 9.0, "endLine": 9.0}}},
		{"bom stripped crlf kept", `{"path":"crlf.txt"}`, map[string]any{"content": "l1\r\nl2\r\nl3", "totalLines": 3.0}},
		{"crlf range joined with lf", `{"path":"crlf.txt","startLine":1,"endLine":2}`, map[string]any{"content": "l1\nl2"}},
		{"invalid utf-8 replaced", `{"path":"latin1.txt"}`, map[string]any{"content": "caf\uFFFD cr\uFFFDme\n"}},
		{"empty", `{"path":"empty.txt"}`, map[string]any{"content": "", "totalLines": 0.0, "returnedLines": 0.0}},
		{"encoding echoed lowercase", `{"path":"a.txt","encoding":"UTF-8"}`, map[string]any{"encoding": "utf-8"}},
		{"quoted path", `{"path":"\"a.txt\""}`, map[string]any{"path": p}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := obj(t, f.ok("read_file", tt.args))
			for k, w := range tt.want {
				if g, _ := json.Marshal(got[k]); string(g) != mustJSON(w) {
					t.Errorf("%s = %s, want %s", k, g, mustJSON(w))
				}
			}
			if _, has := got["range"]; has != strings.Contains(tt.args, "Line") {
				t.Errorf("range present = %v without a line bound", has)
			}
		})
	}
	t.Run("failures", func(t *testing.T) {
		f.fail("read_file", `{"path":"missing.txt"}`, "Path not found: missing.txt")
		f.fail("read_file", `{"path":"a.txt/x"}`, "Path not found: a.txt/x")
		f.fail("read_file", `{"path":"."}`, "Not a file: "+f.dir)
		f.fail("read_file", `{"path":"img.PNG"}`, filepath.Join(f.dir, "img.PNG")+" is a image file, which cannot be read as text. This run has no way to attach media to the conversation.")
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestReadFileMaxBytes(t *testing.T) {
	f := newFixture(t)
	// "é" is 1 UTF-16 unit but 2 bytes; "😀" is 2 units and 4 bytes.
	f.write("u.txt", "éé😀x")
	tests := []struct {
		max       int
		content   string
		truncated bool
	}{
		{1, "é", true},
		{3, "éé", true}, // the emoji would straddle the cap: dropped whole
		{4, "éé😀", true},
		{5, "éé😀x", false},
	}
	for _, tt := range tests {
		got := obj(t, f.ok("read_file", jsonArgs(map[string]any{"path": "u.txt", "maxBytes": tt.max})))
		if got["content"] != tt.content || got["truncated"] != tt.truncated {
			t.Errorf("maxBytes %d: content %q truncated %v, want %q %v", tt.max, got["content"], got["truncated"], tt.content, tt.truncated)
		}
	}
	f.write("big.txt", strings.Repeat("a", MaxReadBytes+100))
	r, v := f.call("read_file", `{"path":"big.txt","maxBytes":1000000}`)
	got := obj(t, v)
	if n := len(got["content"].(string)); n != MaxReadBytes || got["truncated"] != true || !r.Truncated {
		t.Fatalf("cap: len %d truncated %v", n, got["truncated"])
	}
	got = obj(t, f.ok("read_file", `{"path":"big.txt"}`))
	if n := len(got["content"].(string)); n != DefaultMaxBytes {
		t.Fatalf("default cap: len %d", n)
	}
}

// The spec gives read tools no confinement: `..` and absolute paths
// resolve lexically and go anywhere the process may read.
func TestReadFileNoConfinement(t *testing.T) {
	f := newFixture(t)
	outside := filepath.Join(f.dir, "secret.txt")
	f.write("secret.txt", "s3cret")
	f.write("a/b/keep", "")
	f.env.WorkDir = filepath.Join(f.dir, "a", "b")
	got := obj(t, f.ok("read_file", `{"path":"../../secret.txt"}`))
	if got["path"] != outside || got["content"] != "s3cret" {
		t.Fatalf("got %v", got)
	}
	f.fail("read_file", `{"path":"../../etc/passwd"}`, "Path not found: ../../etc/passwd")
	if _, err := os.Stat("/etc/passwd"); err == nil {
		deep := "../../" + strings.Repeat("../", strings.Count(f.dir, "/")) + "etc/passwd"
		got = obj(t, f.ok("read_file", jsonArgs(map[string]any{"path": deep, "endLine": 1})))
		if got["path"] != "/etc/passwd" {
			t.Fatalf("%s resolved to %v", deep, got["path"])
		}
	}
}

func TestHeadTail(t *testing.T) {
	f := newFixture(t)
	var b strings.Builder
	for i := 1; i <= 15; i++ {
		b.WriteString("line" + string(rune('a'+i-1)) + "\r\n")
	}
	p := f.write("log.txt", "\uFEFF"+b.String())
	head := obj(t, f.ok("head", `{"path":"log.txt","lines":3}`))
	if head["content"] != "linea\nlineb\nlinec" || head["totalLines"] != 16.0 || head["returnedLines"] != 3.0 || head["requestedLines"] != 3.0 || head["path"] != p {
		t.Fatalf("head = %v", head)
	}
	if _, has := head["startLine"]; has {
		t.Fatalf("head has startLine")
	}
	tail := obj(t, f.ok("tail", `{"path":"log.txt","lines":2}`))
	if tail["content"] != "lineo\n" || tail["startLine"] != 15.0 || tail["endLine"] != 16.0 || tail["returnedLines"] != 2.0 {
		t.Fatalf("tail = %v", tail)
	}
	def := obj(t, f.ok("tail", `{"path":"log.txt"}`))
	if def["requestedLines"] != 10.0 || def["startLine"] != 7.0 {
		t.Fatalf("tail default = %v", def)
	}
	more := obj(t, f.ok("head", `{"path":"log.txt","lines":100}`))
	if more["returnedLines"] != 16.0 || more["requestedLines"] != 100.0 {
		t.Fatalf("head over = %v", more)
	}
	capped := obj(t, f.ok("tail", `{"path":"log.txt","lines":2,"maxBytes":3}`))
	if capped["content"] != "eo\n" || capped["truncated"] != true {
		t.Fatalf("tail keeps the end: %v", capped)
	}
	capped = obj(t, f.ok("head", `{"path":"log.txt","maxBytes":3}`))
	if capped["content"] != "lin" || capped["truncated"] != true {
		t.Fatalf("head cap: %v", capped)
	}
	f.fail("head", `{"path":"nope"}`, "Path not found: nope")
	f.fail("tail", `{"path":"."}`, "Not a file: "+f.dir)
}

func TestStat(t *testing.T) {
	f := newFixture(t)
	p := f.write("s.txt", "12345")
	got := obj(t, f.ok("stat", `{"path":"s.txt"}`))
	if got["path"] != p || got["exists"] != true || got["type"] != "File" || got["size"] != 5.0 {
		t.Fatalf("stat = %v", got)
	}
	mt := obj(t, got["mtime"])
	if mt["_id"] != "Option" || mt["_tag"] != "Some" || !strings.HasSuffix(mt["value"].(string), "Z") {
		t.Fatalf("mtime = %v", mt)
	}
	if obj(t, got["atime"])["_id"] != "Option" {
		t.Fatalf("atime = %v", got["atime"])
	}
	if d := obj(t, f.ok("stat", `{"path":"."}`)); d["type"] != "Directory" {
		t.Fatalf("dir type = %v", d["type"])
	}
	missing := f.ok("stat", `{"path":"gone"}`)
	want := `{"atime":null,"exists":false,"mtime":null,"path":"` + filepath.Join(f.dir, "gone") + `","size":null,"type":null}`
	if g := mustJSON(missing); g != want {
		t.Fatalf("missing\n got %s\nwant %s", g, want)
	}
	if err := os.Symlink(p, filepath.Join(f.dir, "link")); err == nil {
		if l := obj(t, f.ok("stat", `{"path":"link"}`)); l["type"] != "File" {
			t.Fatalf("stat does not follow links: %v", l)
		}
	}
	if opt := timeOption(timeZero()); mustJSON(opt) != `{"_id":"Option","_tag":"None"}` {
		t.Fatalf("None = %s", mustJSON(opt))
	}
}

func timeZero() (z time.Time) { return }
