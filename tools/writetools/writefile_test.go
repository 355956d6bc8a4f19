package writetools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFileMessages(t *testing.T) {
	tests := []struct {
		name     string
		existing *string // nil: no file
		args     map[string]any
		wantMsg  string // with <abs> for the resolved path
		wantErr  string // a plain failure instead of an approval
	}{
		{name: "new file", args: map[string]any{"path": "new.txt", "content": "héllo😀\n"},
			wantMsg: "About to write 8 characters to file: <abs>"},
		{name: "overwrite", existing: ptr("a\nb\n"), args: map[string]any{"path": "f.txt", "content": "x"},
			wantMsg: "About to write 1 characters to file: <abs>\n\n⚠️  WARNING: This will overwrite the existing file (2 lines).\n   Consider using edit_file instead if you only need to modify part of the file."},
		{name: "empty existing has no warning", existing: ptr(""), args: map[string]any{"path": "f.txt", "content": "x"},
			wantMsg: "About to write 1 characters to file: <abs>"},
		{name: "create dirs", args: map[string]any{"path": "deep/er/f.txt", "content": "", "createDirs": true},
			wantMsg: "About to write 0 characters to file: <abs> (will create parent directories)"},
		{name: "missing parent", args: map[string]any{"path": "nope/f.txt", "content": "x"},
			wantErr: "Parent directory does not exist: <root>/nope. Pass createDirs: true to create it."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if tt.existing != nil {
				h.write(tt.args["path"].(string), *tt.existing)
			}
			abs := h.path(tt.args["path"].(string))
			before := treeHash(t, h.root)
			r := h.call("write_file", tt.args)
			if after := treeHash(t, h.root); after != before {
				t.Fatalf("propose mutated the tree:\n%s\n---\n%s", before, after)
			}
			if tt.wantErr != "" {
				if r.Approval != nil || r.Error != strings.ReplaceAll(tt.wantErr, "<root>", h.root) {
					t.Fatalf("got %+v", r)
				}
				return
			}
			if r.Approval == nil {
				t.Fatalf("no approval: %+v", r)
			}
			if want := strings.ReplaceAll(tt.wantMsg, "<abs>", abs); r.Approval.Message != want {
				t.Fatalf("message:\n%q\nwant\n%q", r.Approval.Message, want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestWriteFileExecute(t *testing.T) {
	t.Run("create", func(t *testing.T) {
		h := newHarness(t)
		r := h.propose("write_file", map[string]any{"path": "sub/n.txt", "content": "a\nb\n", "createDirs": true})
		if want := "--- a/n.txt\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n"; r.Approval.PreviewDiff != want {
			t.Fatalf("preview %q", r.Approval.PreviewDiff)
		}
		res := h.approve(r)
		abs := h.path("sub/n.txt")
		want := WriteFileResult{Path: abs, Message: "File created: " + abs, IsNewFile: true,
			Diff: "+ Created file: " + abs + " (2 lines)"}
		if !res.Success || res.Value != want {
			t.Fatalf("got %+v", res)
		}
		if h.read("sub/n.txt") != "a\nb\n" {
			t.Fatal("content")
		}
		fi, err := os.Stat(abs)
		must(t, err)
		if fi.Mode().Perm() != newFileMode {
			t.Fatalf("mode %v", fi.Mode())
		}
	})
	t.Run("overwrite keeps mode", func(t *testing.T) {
		h := newHarness(t)
		p := h.write("x.sh", "echo 1\n")
		must(t, os.Chmod(p, 0o750))
		res := h.approve(h.propose("write_file", map[string]any{"path": "x.sh", "content": "echo 2\n"}))
		v, _ := res.Value.(WriteFileResult)
		if !res.Success || v.Message != "File written: "+p || v.IsNewFile || v.Diff != "--- a/x.sh\n+++ b/x.sh\n@@ -1 +1 @@\n-echo 1\n+echo 2\n" {
			t.Fatalf("got %+v", res)
		}
		fi, err := os.Stat(p)
		must(t, err)
		if fi.Mode().Perm() != 0o750 {
			t.Fatalf("mode %v, want 0750", fi.Mode())
		}
		// No temporary file is left beside it.
		entries, _ := os.ReadDir(h.root)
		for _, e := range entries {
			if strings.Contains(e.Name(), ".jazz-") {
				t.Fatalf("leftover %s", e.Name())
			}
		}
	})
	t.Run("long diff is cut for display", func(t *testing.T) {
		h := newHarness(t)
		h.write("big.txt", strings.Repeat("old\n", 30))
		res := h.approve(h.propose("write_file", map[string]any{"path": "big.txt", "content": strings.Repeat("new\n", 30)}))
		v := res.Value.(WriteFileResult)
		if !v.WasTruncated || !strings.HasSuffix(v.Diff, "... output truncated (showing first 20 changes)") || !strings.Contains(v.FullDiff, "+new") {
			t.Fatalf("%+v", v)
		}
	})
}

func TestWriteFileRefusesAfterChange(t *testing.T) {
	tests := []struct {
		name   string
		before func(h *harness) // state at preview
		change func(h *harness) // concurrent change before approval
	}{
		{"content changed", func(h *harness) { h.write("f.txt", "v1\n") }, func(h *harness) { h.write("f.txt", "v2\n") }},
		{"file appeared", func(h *harness) {}, func(h *harness) { h.write("f.txt", "surprise\n") }},
		{"file removed", func(h *harness) { h.write("f.txt", "v1\n") }, func(h *harness) { must(h.t, os.Remove(h.path("f.txt"))) }},
		{"replaced by directory", func(h *harness) {}, func(h *harness) { must(h.t, os.Mkdir(h.path("f.txt"), 0o755)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			tt.before(h)
			r := h.propose("write_file", map[string]any{"path": "f.txt", "content": "mine\n"})
			tt.change(h)
			snap := treeHash(t, h.root)
			res := h.approve(r)
			want := h.path("f.txt") + " changed since the preview was approved; propose the change again."
			if res.Success || res.Error != want {
				t.Fatalf("got %+v", res)
			}
			if treeHash(t, h.root) != snap {
				t.Fatal("a refused twin wrote")
			}
		})
	}
}

func TestTwinNeedsPreview(t *testing.T) {
	h := newHarness(t)
	h.write("f.txt", "x\n")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"execute_write_file", map[string]any{"path": "f.txt", "content": "y"}},
		{"execute_edit_file", map[string]any{"path": "f.txt", "edits": []any{map[string]any{"type": "delete_lines", "startLine": 1, "endLine": 1}}}},
		{"execute_rm", map[string]any{"path": "f.txt"}},
		{"execute_mkdir", map[string]any{"path": "d"}},
		{"execute_mv", map[string]any{"source": "f.txt", "destination": "g.txt"}},
		{"execute_cp", map[string]any{"source": "f.txt", "destination": "g.txt"}},
	} {
		snap := treeHash(t, h.root)
		res := h.call(c.tool, c.args)
		if res.Success || !strings.Contains(res.Error, "needs the expectedState") {
			t.Fatalf("%s: %+v", c.tool, res)
		}
		if treeHash(t, h.root) != snap {
			t.Fatalf("%s mutated without a preview", c.tool)
		}
	}
}

// TestHostilePaths pins the rule: no confinement, lexical resolution, and
// the twin writes through a symlink to the file the preview read.
func TestHostilePaths(t *testing.T) {
	t.Run("dotdot escapes the cwd, propose mutates nothing", func(t *testing.T) {
		h := newHarness(t)
		// From /a/b, ../../etc/passwd is /etc/passwd: no confinement.
		h.env.WorkDir = filepath.Join("/", "a", "b")
		before, err := os.ReadFile("/etc/passwd")
		must(t, err)
		st, _ := os.Stat("/etc/passwd")
		r := h.propose("write_file", map[string]any{"path": "../../etc/passwd", "content": "pwned\n"})
		if !strings.Contains(r.Approval.Message, "to file: /etc/passwd") || !strings.Contains(r.Approval.Message, "WARNING: This will overwrite") {
			t.Fatalf("message %q", r.Approval.Message)
		}
		if !strings.Contains(r.Approval.PreviewDiff, "+pwned") {
			t.Fatalf("preview %q", r.Approval.PreviewDiff)
		}
		after, _ := os.ReadFile("/etc/passwd")
		st2, _ := os.Stat("/etc/passwd")
		if string(after) != string(before) || !st2.ModTime().Equal(st.ModTime()) {
			t.Fatal("/etc/passwd changed")
		}
		if !strings.Contains(string(r.Approval.ExecuteArgs), `"path":"/etc/passwd"`) {
			t.Fatalf("twin args %s", r.Approval.ExecuteArgs)
		}
	})
	t.Run("relative escape lands where the preview said", func(t *testing.T) {
		h := newHarness(t)
		must(t, os.MkdirAll(h.path("w/x"), 0o755))
		h.env.WorkDir = h.path("w/x")
		r := h.propose("write_file", map[string]any{"path": "../../outside.txt", "content": "o\n"})
		h.env.WorkDir = h.home // a cd between preview and approval changes nothing
		if res := h.approve(r); !res.Success {
			t.Fatalf("%+v", res)
		}
		if h.read("outside.txt") != "o\n" {
			t.Fatal("not written at the previewed path")
		}
	})
	t.Run("symlink outside is written through", func(t *testing.T) {
		h := newHarness(t)
		outside := t.TempDir()
		target := filepath.Join(outside, "target.txt")
		must(t, os.WriteFile(target, []byte("secret\n"), 0o600))
		must(t, os.Mkdir(h.path("proj"), 0o755))
		must(t, os.Symlink(target, h.path("proj/link.txt")))
		r := h.propose("write_file", map[string]any{"path": "proj/link.txt", "content": "new\n"})
		if r.Approval.PreviewDiff != "Writes "+target+" (through symbolic links from "+h.path("proj/link.txt")+")\n--- a/link.txt\n+++ b/link.txt\n@@ -1 +1 @@\n-secret\n+new\n" {
			t.Fatalf("preview %q", r.Approval.PreviewDiff)
		}
		if res := h.approve(r); !res.Success {
			t.Fatalf("%+v", res)
		}
		got, _ := os.ReadFile(target)
		fi, _ := os.Lstat(h.path("proj/link.txt"))
		tfi, _ := os.Stat(target)
		if string(got) != "new\n" || fi.Mode()&os.ModeSymlink == 0 || tfi.Mode().Perm() != 0o600 {
			t.Fatalf("target %q, link mode %v, target mode %v", got, fi.Mode(), tfi.Mode())
		}
	})
	t.Run("retargeted symlink is refused", func(t *testing.T) {
		h := newHarness(t)
		a, b := h.write("a.txt", "same\n"), h.write("b.txt", "same\n")
		must(t, os.Symlink(a, h.path("link.txt")))
		r := h.propose("write_file", map[string]any{"path": "link.txt", "content": "new\n"})
		must(t, os.Remove(h.path("link.txt")))
		must(t, os.Symlink(b, h.path("link.txt")))
		res := h.approve(r)
		if res.Success || !strings.Contains(res.Error, "changed since the preview was approved") {
			t.Fatalf("%+v", res)
		}
		if h.read("a.txt") != "same\n" || h.read("b.txt") != "same\n" {
			t.Fatal("written despite the retarget")
		}
	})
	t.Run("dangling symlink creates its target", func(t *testing.T) {
		h := newHarness(t)
		must(t, os.Symlink(h.path("made.txt"), h.path("dangling")))
		r := h.propose("write_file", map[string]any{"path": "dangling", "content": "m"})
		if res := h.approve(r); !res.Success || !res.Value.(WriteFileResult).IsNewFile {
			t.Fatalf("%+v", res)
		}
		if h.read("made.txt") != "m" {
			t.Fatal("target not created")
		}
	})
	t.Run("backslash in a name survives the round trip", func(t *testing.T) {
		h := newHarness(t)
		r := h.propose("write_file", map[string]any{"path": `we\\ird.txt`, "content": "w"})
		if !strings.Contains(r.Approval.Message, h.path(`we\ird.txt`)) {
			t.Fatalf("%q", r.Approval.Message)
		}
		if res := h.approve(r); !res.Success {
			t.Fatalf("%+v", res)
		}
		if h.read(`we\ird.txt`) != "w" {
			t.Fatal("wrong file")
		}
	})
}
