package writetools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// escalationFixture is a workspace (h.root/ws, a git repository) with
// every kind of place that configures later calls or runs, and links and
// trees that reach them under other names.
func escalationFixture(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	h.write("ws/.git/HEAD", "ref: refs/heads/main\n")
	h.write("ws/.git/config", "[core]\n")
	h.write("ws/.git/hooks/pre-commit.sample", "#!/bin/sh\n")
	must(t, os.MkdirAll(h.path("ws/.git/objects"), 0o755))
	must(t, os.MkdirAll(h.path("ws/.git/refs"), 0o755))
	h.write("ws/.jazz/config.json", "{}\n")
	h.write("ws/.agents/mcp.json", "{}\n")
	h.write("ws/AGENTS.md", "be careful\n")
	h.write("ws/sub/AGENTS.md", "be careful\n")
	h.write("ws/src/main.go", "package main\n")
	h.write("ws/Makefile", "all:\n")
	h.write("ws/mine.txt", "mine\n")
	h.write("ws/tree/.git/config", "[core]\n")
	h.write("ws/tree/AGENTS.md", "x\n")
	h.write("ws/plain/a.txt", "a\n")
	// A bare repository (or a --separate-git-dir) under a plain name.
	h.write("ws/store/HEAD", "ref: refs/heads/main\n")
	must(t, os.MkdirAll(h.path("ws/store/objects"), 0o755))
	must(t, os.MkdirAll(h.path("ws/store/refs"), 0o755))
	h.write("home/.bashrc", "# rc\n")
	h.write("home/.ssh/authorized_keys", "\n")
	h.write("home/notes.txt", "notes\n")
	must(t, os.Symlink(".git", h.path("ws/meta")))
	must(t, os.Symlink("AGENTS.md", h.path("ws/README.md")))
	must(t, os.Symlink(filepath.Join(h.home, ".ssh"), h.path("ws/keys")))
	h.env.WorkDir = h.path("ws")
	return h
}

// TestChangesToWhatDecidesLaterRunsNeedAPerson: every file tool call
// that changes jazz's project or agent configuration, an AGENTS.md, a
// git directory or the home directory's configuration, however it is
// spelled (case, links, a tree carrying it, a bare repository), asks for
// a human-only approval; ordinary project files do not.
func TestChangesToWhatDecidesLaterRunsNeedAPerson(t *testing.T) {
	type call struct {
		name string
		args map[string]any
	}
	write := func(p string) call {
		return call{"write_file", map[string]any{"path": p, "content": "x", "createDirs": true}}
	}
	edit := func(p string) call {
		return call{"edit_file", map[string]any{"path": p, "edits": []map[string]any{{"type": "insert", "line": 0, "content": "x"}}}}
	}
	escalating := []call{
		write(".git/hooks/pre-commit"), write(".git/config"), write(".GIT/config"), write(".Git/hooks/post-checkout"),
		write("meta/hooks/pre-commit"), write("meta/config"), edit(".git/config"), edit("meta/config"),
		write(".jazz/config.json"), edit(".jazz/config.json"), write(".agents/mcp.json"), write(".agents/AGENTS.md"),
		write("AGENTS.md"), edit("AGENTS.md"), write("agents.md"), write("sub/AGENTS.md"), write("new/dir/AGENTS.md"),
		write("README.md"), edit("README.md"), // a link to AGENTS.md
		write("store/hooks/pre-commit"), write("store/config"),
		write("~/.bashrc"), edit("~/.bashrc"), write("~/.profile"), write("~/.ssh/authorized_keys"), write("keys/authorized_keys"),
		write("~/.config/git/config"), write("~/.gitconfig"),
		{"mkdir", map[string]any{"path": ".git/hooks/x"}},
		{"mkdir", map[string]any{"path": "~/.config"}},
		{"rm", map[string]any{"path": "AGENTS.md"}},
		{"rm", map[string]any{"path": ".jazz/config.json"}},
		{"rm", map[string]any{"path": ".git/config"}},
		{"rm", map[string]any{"path": "tree", "recursive": true}},
		{"mv", map[string]any{"source": "mine.txt", "destination": "AGENTS.md", "force": true}},
		{"mv", map[string]any{"source": "mine.txt", "destination": ".git/hooks/pre-commit"}},
		{"mv", map[string]any{"source": "mine.txt", "destination": "~/.bash_profile"}},
		{"mv", map[string]any{"source": "AGENTS.md", "destination": "old.md"}},
		{"mv", map[string]any{"source": "tree", "destination": "elsewhere"}},
		{"mv", map[string]any{"source": "plain", "destination": "tree", "force": true}},
		{"cp", map[string]any{"source": "mine.txt", "destination": "AGENTS.md", "force": true}},
		{"cp", map[string]any{"source": "mine.txt", "destination": ".jazz/other.json"}},
		{"cp", map[string]any{"source": "tree", "destination": "elsewhere"}},
		{"cp", map[string]any{"source": "mine.txt", "destination": "keys/id_ed25519.pub"}},
	}
	ordinary := []call{
		write("src/main.go"), edit("src/main.go"), write("Makefile"), write("docs/guide.md"), write("~/notes.txt"),
		write("gitstuff/config"), write(".github/workflows/ci.yml"), write("agents/x.md"),
		{"mkdir", map[string]any{"path": "build"}},
		{"rm", map[string]any{"path": "mine.txt"}},
		{"rm", map[string]any{"path": "plain", "recursive": true}},
		{"mv", map[string]any{"source": "mine.txt", "destination": "yours.txt"}},
		{"cp", map[string]any{"source": "plain", "destination": "plain2"}},
		{"cp", map[string]any{"source": ".git/config", "destination": "config.bak"}}, // reads .git, changes nothing there
	}
	for _, c := range escalating {
		h := escalationFixture(t)
		r := h.propose(c.name, c.args)
		if r.Approval.HumanOnly == "" {
			t.Errorf("%s %v: no human-only approval:\n%s", c.name, c.args, r.Approval.Message)
			continue
		}
		if !strings.Contains(r.Approval.Message, "Only a person may approve this") {
			t.Errorf("%s %v: the message does not say only a person may approve it:\n%s", c.name, c.args, r.Approval.Message)
		}
	}
	for _, c := range ordinary {
		h := escalationFixture(t)
		if r := h.propose(c.name, c.args); r.Approval.HumanOnly != "" {
			t.Errorf("%s %v: human-only for an ordinary project file: %s", c.name, c.args, r.Approval.HumanOnly)
		}
	}
}
