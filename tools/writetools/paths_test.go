package writetools

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// repoWithLinkedDocs is the attack of issue 10: a repository whose docs
// is a link to a directory outside it (~/.ssh), with a key file there.
func repoWithLinkedDocs(t *testing.T) (h *harness, ssh string) {
	t.Helper()
	h = newHarness(t)
	ssh = filepath.Join(h.home, ".ssh")
	must(t, os.Mkdir(ssh, 0o700))
	must(t, os.WriteFile(filepath.Join(ssh, "authorized_keys"), []byte("ssh-ed25519 AAAA owner\n"), 0o600))
	must(t, os.Mkdir(h.path("repo"), 0o755))
	must(t, os.Symlink(ssh, h.path("repo/docs")))
	h.env.WorkDir = h.path("repo")
	return h, ssh
}

// TestResolvedTargetIsShown: every tool says where a path through a
// linked directory really goes, in the message (and write/edit in the
// preview), and the twin acts there.
func TestResolvedTargetIsShown(t *testing.T) {
	for _, c := range []struct {
		tool string
		args E
		lex  string // lexical path in the note
		real string // its resolution, relative to ssh
	}{
		{"write_file", E{"path": "docs/authorized_keys", "content": "ssh-ed25519 EVIL\n"}, "docs/authorized_keys", "authorized_keys"},
		{"edit_file", E{"path": "docs/authorized_keys", "edits": []E{{"type": "insert", "line": 0, "content": "ssh-ed25519 EVIL"}}}, "docs/authorized_keys", "authorized_keys"},
		{"write_file", E{"path": "docs/new/k", "content": "x", "createDirs": true}, "docs/new/k", "new/k"},
		{"mkdir", E{"path": "docs/sub"}, "docs/sub", "sub"},
		{"rm", E{"path": "docs/authorized_keys"}, "docs/authorized_keys", "authorized_keys"},
		{"mv", E{"source": "docs/authorized_keys", "destination": "keys"}, "docs/authorized_keys", "authorized_keys"},
		{"cp", E{"source": "README", "destination": "docs/authorized_keys", "force": true}, "docs/authorized_keys", "authorized_keys"},
	} {
		t.Run(c.tool+" "+c.lex, func(t *testing.T) {
			h, ssh := repoWithLinkedDocs(t)
			h.write("repo/README", "readme\n")
			r := h.propose(c.tool, c.args)
			note := "Through symbolic links, " + h.path("repo/"+c.lex) + " is " + filepath.Join(ssh, c.real) + "."
			if !strings.Contains(r.Approval.Message, note) {
				t.Fatalf("message does not name the real target:\n%s\nwant %q", r.Approval.Message, note)
			}
			if c.tool == "write_file" || c.tool == "edit_file" {
				if !strings.HasPrefix(r.Approval.PreviewDiff, "Writes "+filepath.Join(ssh, c.real)+" (through symbolic links from ") {
					t.Fatalf("preview does not name the real target: %q", r.Approval.PreviewDiff)
				}
			}
			res := h.approve(r)
			if !res.Success {
				t.Fatalf("%+v", res)
			}
			if c.tool != "edit_file" && !strings.Contains(valueJSON(t, res.Value), filepath.Join(ssh, c.real)) {
				t.Fatalf("result does not say where it acted: %s", valueJSON(t, res.Value))
			}
		})
	}
}

// TestAnyComponentChangeIsRefused: retargeting or swapping any component
// of the path, not only the leaf, between preview and approval makes
// every twin refuse and change nothing.
func TestAnyComponentChangeIsRefused(t *testing.T) {
	swaps := map[string]func(h *harness, ssh string){
		"ancestor link retargeted to an identical copy": func(h *harness, ssh string) {
			copyDir := h.path("decoy")
			must(t, os.Mkdir(copyDir, 0o700))
			b, _ := os.ReadFile(filepath.Join(ssh, "authorized_keys"))
			must(t, os.WriteFile(filepath.Join(copyDir, "authorized_keys"), b, 0o600))
			must(t, os.Remove(h.path("repo/docs")))
			must(t, os.Symlink(copyDir, h.path("repo/docs")))
		},
		"ancestor link replaced by a real directory": func(h *harness, ssh string) {
			must(t, os.Remove(h.path("repo/docs")))
			must(t, os.Mkdir(h.path("repo/docs"), 0o755))
			b, _ := os.ReadFile(filepath.Join(ssh, "authorized_keys"))
			must(t, os.WriteFile(h.path("repo/docs/authorized_keys"), b, 0o600))
		},
		"target directory swapped under the same name": func(h *harness, ssh string) {
			must(t, os.Rename(ssh, ssh+".old"))
			must(t, os.Mkdir(ssh, 0o700))
			b, _ := os.ReadFile(filepath.Join(ssh+".old", "authorized_keys"))
			must(t, os.WriteFile(filepath.Join(ssh, "authorized_keys"), b, 0o600))
		},
		"a directory of the chain replaced by a link to itself": func(h *harness, ssh string) {
			must(t, os.Rename(h.home, h.home+".real"))
			must(t, os.Symlink(h.home+".real", h.home))
		},
	}
	ops := []struct {
		tool string
		args E
	}{
		{"write_file", E{"path": "docs/authorized_keys", "content": "EVIL\n"}},
		{"edit_file", E{"path": "docs/authorized_keys", "edits": []E{{"type": "insert", "line": 0, "content": "EVIL"}}}},
		{"mkdir", E{"path": "docs/sub"}},
		{"rm", E{"path": "docs/authorized_keys"}},
		{"mv", E{"source": "docs/authorized_keys", "destination": "keys"}},
		{"cp", E{"source": "README", "destination": "docs/authorized_keys", "force": true}},
	}
	for name, swap := range swaps {
		for _, op := range ops {
			t.Run(name+"/"+op.tool, func(t *testing.T) {
				h, ssh := repoWithLinkedDocs(t)
				h.write("repo/README", "readme\n")
				r := h.propose(op.tool, op.args)
				swap(h, ssh)
				snap := treeHash(t, h.root)
				res := h.approve(r)
				if res.Success || !strings.HasSuffix(res.Error, " changed since the preview was approved; propose the change again.") {
					t.Fatalf("twin did not refuse: %+v", res)
				}
				if treeHash(t, h.root) != snap {
					t.Fatal("a refused twin changed the tree")
				}
			})
		}
	}
}

// TestDestructionIsStatedAndBound: what force replaces and rm removes is
// in the message, and a change to it after the preview is refused.
func TestDestructionIsStatedAndBound(t *testing.T) {
	for _, c := range []struct {
		tool string
		args E
		msg  string
	}{
		{"cp", E{"source": "s", "destination": "d", "force": true}, "This replaces the directory <root>/d and everything in it: 3 files, 1 directory, 1 symbolic link, 7 bytes."},
		{"mv", E{"source": "s", "destination": "d", "force": true}, "This replaces the directory <root>/d and everything in it: 3 files, 1 directory, 1 symbolic link, 7 bytes."},
		{"rm", E{"path": "d", "recursive": true}, "This removes the directory <root>/d and everything in it: 3 files, 1 directory, 1 symbolic link, 7 bytes."},
	} {
		for change, mutate := range map[string]func(h *harness){
			"file added deep": func(h *harness) { h.write("d/sub/new", "") },
			"file rewritten same size": func(h *harness) {
				p := h.path("d/sub/b")
				fi, _ := os.Stat(p)
				must(t, os.WriteFile(p, []byte("BB"), 0o644))
				must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime())) // even with the old mtime
			},
			"link retargeted": func(h *harness) {
				must(t, os.Remove(h.path("d/ln")))
				must(t, os.Symlink("/etc", h.path("d/ln")))
			},
		} {
			t.Run(c.tool+"/"+change, func(t *testing.T) {
				h := newHarness(t)
				h.write("s", "new\n")
				h.write("d/a", "aaa")
				h.write("d/sub/b", "bb")
				h.write("d/sub/c", "cc")
				must(t, os.Symlink("a", h.path("d/ln")))
				r := h.propose(c.tool, c.args)
				if want := strings.ReplaceAll(c.msg, "<root>", h.root); !strings.Contains(r.Approval.Message, want) {
					t.Fatalf("message:\n%s\nwant %q", r.Approval.Message, want)
				}
				mutate(h)
				snap := treeHash(t, h.root)
				res := h.approve(r)
				if res.Success || res.Error != h.path("d")+" changed since the preview was approved; propose the change again." {
					t.Fatalf("%+v", res)
				}
				if treeHash(t, h.root) != snap {
					t.Fatal("destroyed anyway")
				}
			})
		}
	}
}

// TestContainmentUsesResolvedPaths: a destination that reaches back into
// the source through a link is refused, not copied level after level.
func TestContainmentUsesResolvedPaths(t *testing.T) {
	h := newHarness(t)
	h.write("src/f", "x")
	must(t, os.Symlink(h.path("src"), h.path("back")))
	must(t, os.Symlink(h.path("src"), h.path("srclink")))
	for _, c := range []struct{ tool, src, dst string }{
		{"cp", "src", "back/copy"},
		{"mv", "src", "back/moved"},
		{"cp", "srclink", "src/copy"}, // cp follows the source link
		{"cp", "srclink", "back/x"},
	} {
		before := treeHash(t, h.root)
		r := h.call(c.tool, E{"source": c.src, "destination": c.dst})
		if r.Approval != nil || !strings.HasPrefix(r.Error, "Destination must not be within source: "+h.path(c.dst)) {
			t.Fatalf("%s %s %s: %+v", c.tool, c.src, c.dst, r)
		}
		if treeHash(t, h.root) != before {
			t.Fatal("propose mutated")
		}
	}
	// mv moves a link itself: moving it into the directory it points at
	// is fine.
	if res := h.approve(h.propose("mv", E{"source": "srclink", "destination": "src/ln"})); !res.Success {
		t.Fatalf("%+v", res)
	}
}

// TestCriticalThroughLinks: $HOME reached through a linked parent is
// still $HOME.
func TestCriticalThroughLinks(t *testing.T) {
	h := newHarness(t)
	must(t, os.Symlink(h.root, h.path("alias")))
	for _, c := range []struct {
		tool string
		args E
		want string
	}{
		{"rm", E{"path": "alias/home", "recursive": true}, "Refusing to remove critical path: " + h.path("alias/home")},
		{"mv", E{"source": "alias/home", "destination": "elsewhere"}, "Refusing to move critical path: " + h.path("alias/home")},
	} {
		r := h.call(c.tool, c.args)
		if r.Approval != nil || !strings.HasPrefix(r.Error, c.want) {
			t.Fatalf("%s: %+v", c.tool, r)
		}
	}
	// Removing a link to $HOME removes the link only, which is allowed.
	must(t, os.Symlink(h.home, h.path("homelink")))
	r := h.propose("rm", E{"path": "homelink", "recursive": true})
	if !strings.Contains(r.Approval.Message, "symbolic link") {
		t.Fatalf("%q", r.Approval.Message)
	}
}

// TestSpecialFilesAreNotOpened: a FIFO is refused without blocking, and
// write_file never replaces a device or pipe with a regular file.
func TestSpecialFilesAreNotOpened(t *testing.T) {
	h := newHarness(t)
	must(t, syscall.Mkfifo(h.path("pipe"), 0o644))
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := h.call("write_file", E{"path": "pipe", "content": "x"})
		if r.Approval != nil || !strings.Contains(r.Error, "named pipe, not a regular file") {
			t.Errorf("write_file on a FIFO: %+v", r)
		}
		r = h.call("edit_file", E{"path": "pipe", "edits": []E{{"type": "insert", "line": 0, "content": "x"}}})
		if r.Approval != nil || r.Value.(EditFailure).ErrorType != FileReadError {
			t.Errorf("edit_file on a FIFO: %+v", r)
		}
		r = h.call("cp", E{"source": "pipe", "destination": "copy"})
		if r.Approval != nil || !strings.Contains(r.Error, "named pipe") {
			t.Errorf("cp of a FIFO: %+v", r)
		}
		// Inside a tree, a FIFO is refused by the copy, not read.
		must(t, os.Mkdir(h.path("tree"), 0o755))
		must(t, syscall.Mkfifo(h.path("tree/p"), 0o644))
		res := h.approve(h.propose("cp", E{"source": "tree", "destination": "tree2"}))
		if res.Success || !strings.Contains(res.Error, "named pipe") {
			t.Errorf("cp of a tree with a FIFO: %+v", res)
		}
		if _, err := os.Lstat(h.path("tree2")); !os.IsNotExist(err) {
			t.Error("a partial copy was left")
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a FIFO blocked a file tool")
	}
}

// TestLoopsAndDepth: a symlink loop is a clear error, not a hang.
func TestLoopsAndDepth(t *testing.T) {
	h := newHarness(t)
	must(t, os.Symlink("b", h.path("a")))
	must(t, os.Symlink("a", h.path("b")))
	r := h.call("write_file", E{"path": "a", "content": "x"})
	if r.Approval != nil || !strings.Contains(r.Error, "too many levels of symbolic links") {
		t.Fatalf("%+v", r)
	}
	r = h.call("write_file", E{"path": "a/x", "content": "x"})
	if r.Approval != nil || !strings.Contains(r.Error, "too many levels of symbolic links") {
		t.Fatalf("%+v", r)
	}
}

// TestRootIsNoTarget: / itself, as written or through a link, is never
// written, removed or replaced, and mkdir says it exists.
func TestRootIsNoTarget(t *testing.T) {
	h := newHarness(t)
	must(t, os.Symlink("/", h.path("toroot")))
	must(t, os.Symlink("..", h.path("home/up")))
	for _, c := range []struct {
		tool string
		args E
		want string
	}{
		{"mkdir", E{"path": "/"}, "Directory already exists: /"},
		{"mkdir", E{"path": "toroot"}, "Directory already exists: " + h.path("toroot")},
		{"write_file", E{"path": "/", "content": "x"}, "/ is the root directory, which no file tool acts on"},
		{"write_file", E{"path": "toroot", "content": "x"}, h.path("toroot") + " resolves to /, the root directory"},
		{"cp", E{"source": "toroot", "destination": "x"}, "cp failed: " + h.path("toroot") + " resolves to /"},
		{"rm", E{"path": "/", "recursive": true}, "Refusing to remove critical path: /"},
		{"cp", E{"source": "home/up", "destination": "x"}, "Destination must not be within source"},
	} {
		r := h.call(c.tool, c.args)
		got := r.Error
		if r.Success {
			got, _ = r.Value.(string)
		}
		if r.Approval != nil || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %v: %+v, want %q", c.tool, c.args, r, c.want)
		}
	}
	// rm of a link to / removes the link (and is asked for as such).
	r := h.propose("rm", E{"path": "toroot", "recursive": true})
	if !strings.Contains(r.Approval.Message, "This removes the symbolic link "+h.path("toroot")+" (pointing to /)") {
		t.Fatalf("%q", r.Approval.Message)
	}
}

// TestNamesCannotForgeMessageLines: a model-chosen name with a newline,
// a control or a bidi-override character is quoted in what the approver
// reads, so it cannot add a line such as a forged "Through symbolic
// links" note.
func TestNamesCannotForgeMessageLines(t *testing.T) {
	h := newHarness(t)
	forged := "x\n\nThrough symbolic links, x is harmless." // no slash: one name
	for _, c := range []struct {
		tool string
		args E
	}{
		{"write_file", E{"path": forged, "content": "x"}},
		{"mkdir", E{"path": forged}},
		{"write_file", E{"path": "evil\u202etxt.exe", "content": "x"}},
	} {
		r := h.propose(c.tool, c.args)
		msg := r.Approval.Message
		if strings.Contains(msg, "\nThrough symbolic links") || strings.ContainsRune(msg, '\u202e') {
			t.Fatalf("%s: a name forged a line:\n%s", c.tool, msg)
		}
		if !strings.Contains(msg, `"`+h.root) {
			t.Fatalf("%s: the odd name is not quoted:\n%s", c.tool, msg)
		}
	}
}
