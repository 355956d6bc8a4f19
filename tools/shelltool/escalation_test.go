package shelltool

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/shellguard"
)

// escalationRig is a fixture whose working directory is a git
// repository with an AGENTS.md, jazz's and the agents' configuration,
// a home directory (its parent) with a .bashrc, and links in the
// workspace to the protected places.
func escalationRig(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	home := filepath.Dir(f.dir)
	for _, d := range []string{".git/hooks", ".git/objects", ".git/refs", ".jazz", ".agents", "sub"} {
		if err := os.MkdirAll(filepath.Join(f.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n", ".git/hooks/pre-commit": "#!/bin/sh\n",
		"AGENTS.md": "be careful\n", ".jazz/config.json": "{}\n", ".agents/mcp.json": "{}\n",
	}
	for p, content := range files {
		if err := os.WriteFile(filepath.Join(f.dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"meta": ".git", "notes": "AGENTS.md", "homelink": home} {
		if err := os.Symlink(target, filepath.Join(f.dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// snapshot is every entry under root but TMPDIR and the scratch source
// file, with its type, mode, content or link target.
func snapshot(t *testing.T, root, skip string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == skip {
			return fs.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String()
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			v += " -> " + target
		case info.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			v += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// escalationCommands is the grammar: every writer (redirection forms,
// tee, cp, mv, ln, install, dd, sed -i, touch, mkdir) aimed at every
// protected target (a hook, git's config, an AGENTS.md, jazz's and the
// agents' configuration, a home dotfile) under every spelling (relative,
// ./, absolute, doubled and trailing separators, `..`, a workspace link,
// upper case, ~ and $HOME, a variable, a command substitution, a cd into
// its directory).
func escalationCommands(ws, home string) []string {
	src := filepath.Join(ws, "src.txt")
	type target struct {
		dir, name string // dir relative to ws ("~" for home)
		link      string // a workspace link to dir, if any
	}
	targets := []target{
		{".git/hooks", "pre-commit", "meta/hooks"},
		{".git", "config", "meta"},
		{".", "AGENTS.md", ""},
		{".jazz", "config.json", ""},
		{".agents", "mcp.json", ""},
		{"~", ".bashrc", "homelink"},
	}
	abs := func(tg target) string {
		if tg.dir == "~" {
			return home
		}
		return filepath.Join(ws, tg.dir)
	}
	// A spelling is (prefix commands, the path word).
	type spelling struct{ pre, word string }
	spellings := func(tg target) []spelling {
		rel := tg.dir + "/" + tg.name
		if tg.dir == "." {
			rel = tg.name
		}
		if tg.dir == "~" {
			rel = "../" + tg.name
		}
		out := []spelling{
			{"", rel},
			{"", "./" + rel},
			{"", abs(tg) + "/" + tg.name},
			{"", strings.ReplaceAll(abs(tg)+"/"+tg.name, "/", "//")},
			{"", "sub/../" + rel},
			{"", "'" + rel + "'"},
			{"p=" + rel + "; ", `"$p"`},
			{"d=" + filepath.Dir(rel) + "; ", "$d/" + tg.name},
			{"", `"$(printf %s ` + rel + `)"`},
			{"cd " + abs(tg) + "/ && ", tg.name},
			{"cd sub && ", "../" + rel},
		}
		if tg.dir == "~" {
			out = append(out, spelling{"", "~/" + tg.name}, spelling{"", "$HOME/" + tg.name},
				spelling{"", `"${HOME}"/` + tg.name}, spelling{"cd && ", tg.name}, spelling{"cd ~/ && ", "./" + tg.name})
		} else {
			out = append(out, spelling{"", "~/" + filepath.Base(ws) + "/" + rel}, spelling{"", "$HOME/" + filepath.Base(ws) + "/" + rel})
		}
		if tg.link != "" {
			out = append(out, spelling{"", tg.link + "/" + tg.name}, spelling{"cd " + tg.link + " && ", tg.name})
		}
		if tg.name == "AGENTS.md" {
			out = append(out, spelling{"", "notes"})
		}
		if tg.dir != "~" && tg.dir != "." {
			out = append(out, spelling{"", strings.ToUpper(tg.dir[:2]) + tg.dir[2:] + "/" + tg.name})
		}
		return out
	}
	writers := []func(dst string) string{
		func(d string) string { return "echo x > " + d },
		func(d string) string { return "echo x >> " + d },
		func(d string) string { return "printf x >| " + d },
		func(d string) string { return "echo x &> " + d },
		func(d string) string { return "echo x >& " + d },
		func(d string) string { return "cat < " + src + " 1<> " + d },
		func(d string) string { return "tee " + d + " < " + src },
		func(d string) string { return "tee -a " + d + " < " + src },
		func(d string) string { return "cp " + src + " " + d },
		func(d string) string { return "cp -t $(dirname " + d + ") " + src },
		func(d string) string { return "mv -f " + src + " " + d },
		func(d string) string { return "ln -sf " + src + " " + d },
		func(d string) string { return "install -m 755 " + src + " " + d },
		func(d string) string { return "dd if=" + src + " of=" + d + " status=none" },
		func(d string) string { return "sed -i s/e/E/ " + d },
		func(d string) string { return "touch " + d },
		func(d string) string { return "mkdir -p " + d },
	}
	var out []string
	for _, tg := range targets {
		for _, sp := range spellings(tg) {
			for _, w := range writers {
				out = append(out, sp.pre+w(sp.word))
			}
		}
	}
	// Each write as a command line a program hands to a shell (flock -c),
	// with the protected name quoted apart inside it, which only a shell's
	// reading of the word puts back together.
	for _, tg := range targets {
		hidden := tg.dir + "/" + tg.name
		switch tg.dir {
		case ".":
			hidden = tg.name[:2] + `""` + tg.name[2:]
		case "~":
			hidden = "../" + tg.name[:2] + `""` + tg.name[2:]
		default:
			hidden = hidden[:2] + `""` + hidden[2:]
		}
		for _, w := range writers {
			out = append(out, "flock /dev/null -c '"+w(hidden)+"'")
		}
	}
	// git's configuration, which names no path.
	out = append(out, "git config core.hooksPath hooks", "git config --global core.fsmonitor evil",
		"git -C sub config core.pager evil", "git config --add alias.st '!evil'", "git config set core.editor evil",
		`flock /dev/null -c 'g""it config core.hooksPath hooks'`)
	return out
}

// TestEscalationGrammar is the class: every command of the grammar is
// for a person only when proposed, and, run by the real interpreter
// under an approval no person gave (the high-risk policy, which approves
// everything else), is refused at run time with every protected file
// (indeed the whole tree) unchanged. Each layer is checked on its own:
// the static one for what the text says, the run-time one for what
// expansion makes of it.
func TestEscalationGrammar(t *testing.T) {
	f := escalationRig(t)
	home := filepath.Dir(f.dir)
	src := filepath.Join(f.dir, "src.txt")
	cmds := escalationCommands(f.dir, home)
	if len(cmds) < 1000 {
		t.Fatalf("the grammar makes only %d commands", len(cmds))
	}
	stride := 4
	if testing.Short() {
		stride = 16
	}
	for i, cmd := range cmds {
		if err := os.WriteFile(src, []byte("evil\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		res := f.propose.Handler(context.Background(), f.env, args(cmd))
		if res.Approval == nil {
			t.Errorf("%q: no approval request: %+v", cmd, res)
			continue
		}
		if res.Approval.HumanOnly == "" {
			t.Errorf("%q: not human-only when proposed", cmd)
		} else if !strings.Contains(res.Approval.Message, "Only a person may approve this") {
			t.Errorf("%q: the message does not say only a person may approve it:\n%s", cmd, res.Approval.Message)
		}
		if i%stride != 0 {
			continue // the run-time layer on a sample: 17 writers, so every writer meets every spelling
		}
		before := snapshot(t, home, f.tmp)
		out := f.twin.Handler(judged(t, context.Background(), res.Approval.ExecuteArgs, shellguard.ByPolicy), f.env, res.Approval.ExecuteArgs)
		if after := snapshot(t, home, f.tmp); !sameTree(before, after) {
			t.Errorf("%q ran under the high-risk policy and changed the tree: %s", cmd, treeDiff(before, after))
		}
		v, _ := out.Value.(Result)
		if strings.Contains(v.Stderr, "unhandled") {
			continue // a redirection the interpreter does not run at all (>|, >& file): nothing was written
		}
		if out.Success || !strings.Contains(out.Error, "only a person may approve") {
			t.Errorf("%q under the high-risk policy: not refused at run time: %+v", cmd, out)
		}
	}
}

func sameTree(a, b map[string]string) bool { return treeDiff(a, b) == "" }

func treeDiff(a, b map[string]string) string {
	var d []string
	for p, v := range a {
		if w, ok := b[p]; !ok {
			d = append(d, "removed "+p)
		} else if w != v {
			d = append(d, "changed "+p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			d = append(d, "added "+p)
		}
	}
	return strings.Join(d, ", ")
}
