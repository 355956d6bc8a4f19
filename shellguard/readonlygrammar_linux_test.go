//go:build linux

package shellguard

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReadOnlyGrammarRunsNothing is TestGitGrammarRunsNothing for the
// other programs of the read-only set that this machine has: every option
// word readonly.go lists for a program is given to it alone and with
// values that would make it act (a file to write, a program to run), on two
// fixture files that differ. Each call the read-only check approves runs the real
// program with a PATH whose first directory logs every program started
// through it (and, where strace is installed, every execve and network
// connect); it must start none (egrep and fgrep may start grep), touch
// nothing in the fixture or the value's directory (inotify, so a file
// written and removed again counts), and end within 5 s. date and
// hostname never run: their writing forms would change this machine.
func TestReadOnlyGrammarRunsNothing(t *testing.T) {
	sample := uint32(1)
	if testing.Short() || raceEnabled {
		sample = 8
	}
	dir := t.TempDir()
	fixture, out, shims := filepath.Join(dir, "fixture"), filepath.Join(dir, "out"), filepath.Join(dir, "shims")
	for _, d := range []string{fixture, out, shims} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{"f": "b 2\na 1\nb 2\n", "g": "c 3\n"} {
		if err := os.WriteFile(filepath.Join(fixture, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	marker := filepath.Join(out, "ran")
	prog := filepath.Join(dir, "prog")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n: > '"+marker+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "shimlog")
	if err := writeShims(shims, log); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + shims + ":/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "LC_ALL=C", "TMPDIR=" + out}
	// With strace, every program started (by any path, not only through
	// PATH) and every network connection is seen too.
	strace, _ := exec.LookPath("strace")
	traced := filepath.Join(t.TempDir(), "strace")
	w := newTreeWatch(t, dir)
	values := []string{filepath.Join(out, "written"), prog}

	runs := 0
	seen := map[string]bool{}
	check := func(argv []string) {
		key := strings.Join(argv, "\x00")
		h := fnv.New32a()
		h.Write([]byte(key))
		if seen[key] || h.Sum32()%sample != 0 || argvReadOnlyProblem(argv) != "" {
			return
		}
		seen[key] = true
		path, err := exec.LookPath(argv[0])
		if err != nil {
			return
		}
		runs++
		os.Remove(log)
		w.drain()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, path, argv[1:]...)
		if strace != "" {
			os.Remove(traced)
			cmd = exec.CommandContext(ctx, strace, append([]string{"-f", "-qq", "--seccomp-bpf", "-e", "trace=execve,connect", "-o", traced, path}, argv[1:]...)...)
		}
		cmd.Dir, cmd.Env = fixture, env
		_ = cmd.Run() // a value the program rejects fails it; what matters is what it did
		if ctx.Err() != nil {
			t.Errorf("approved %q, and it did not end within 5 s", argv)
		}
		if strace != "" {
			b, _ := os.ReadFile(traced)
			execs := 0
			for _, l := range strings.Split(string(b), "\n") {
				switch {
				case strings.Contains(l, "execve(") && !strings.Contains(l, "= -1"):
					// The program itself, and egrep's or fgrep's grep
					// (through the logging shim).
					if execs++; execs > 1 && !((argv[0] == "egrep" || argv[0] == "fgrep") && strings.Contains(l, `grep", ["`)) {
						t.Errorf("approved %q, and it ran %s", argv, l)
					}
				case strings.Contains(l, "connect(") && (strings.Contains(l, "AF_INET") || strings.Contains(l, "AF_INET6")):
					t.Errorf("approved %q, and it reached the network: %s", argv, l)
				}
			}
		}
		for _, c := range w.drain() {
			if c != log {
				t.Errorf("approved %q, and it touched %s", argv, c)
				break
			}
		}
		if b, err := os.ReadFile(log); err == nil {
			for _, rec := range strings.Split(strings.TrimRight(string(b), "\x00"), "\x00") {
				if name, _, _ := strings.Cut(rec, " "); name != "grep" || (argv[0] != "egrep" && argv[0] != "fgrep") {
					t.Errorf("approved %q, and it started %s", argv, rec)
					break
				}
			}
		}
	}
	for name, words := range readOnlyGrammarWords(t) {
		if name == "date" || name == "hostname" || name == "git" {
			continue
		}
		for _, word := range words {
			opt, arity, valued := strings.Cut(word, "=")
			check([]string{name, opt, "f", "g"})
			if !valued {
				continue
			}
			for _, v := range values {
				if strings.HasPrefix(opt, "--") {
					check([]string{name, opt + "=" + v, "f", "g"})
				} else {
					check([]string{name, opt + v, "f", "g"})
				}
				if arity != "?" {
					check([]string{name, opt, v, "f", "g"})
				}
			}
		}
	}
	if runs < 200/int(sample) {
		t.Fatalf("only %d approved calls ran: the sweep lost its grammar", runs)
	}
	t.Logf("%d approved calls run", runs)
}

// readOnlyGrammarWords are the option words readonly.go lists, by the
// program a readOnlyPrograms entry names: the string literals inside the
// entry's value and inside the specs it names by a variable.
func readOnlyGrammarWords(t *testing.T) map[string][]string {
	f, err := parser.ParseFile(token.NewFileSet(), "readonly.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	word := regexp.MustCompile(`^--?[A-Za-z0-9][A-Za-z0-9-]*(=[?+]?)?$`)
	literals := func(n ast.Node) []string {
		var out []string
		ast.Inspect(n, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					for _, w := range strings.Fields(s) {
						if word.MatchString(w) && !slices.Contains(out, w) {
							out = append(out, w)
						}
					}
				}
			}
			return true
		})
		return out
	}
	// What each variable or function of the file was built from.
	named := map[string][]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if id, ok := l.(*ast.Ident); ok && i < len(n.Rhs) {
					named[id.Name] = append(named[id.Name], literals(n.Rhs[i])...)
				}
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if i < len(n.Values) {
					named[id.Name] = literals(n.Values[i])
				}
			}
		case *ast.FuncDecl:
			named[n.Name.Name] = literals(n.Body)
			ast.Inspect(n.Body, func(m ast.Node) bool {
				if id, ok := m.(*ast.Ident); ok && id.Name != n.Name.Name {
					named[n.Name.Name] = append(named[n.Name.Name], named[id.Name]...)
				}
				return true
			})
		}
		return true
	})
	out := map[string][]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		key, ok := kv.Key.(*ast.BasicLit)
		if !ok || key.Kind != token.STRING {
			return true
		}
		name, err := strconv.Unquote(key.Value)
		if err != nil {
			return true
		}
		words := literals(kv.Value)
		ast.Inspect(kv.Value, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				words = append(words, named[id.Name]...)
			}
			return true
		})
		if _, known := readOnlyPrograms()[name]; known {
			out[name] = words
		}
		return false
	})
	if len(out) < 30 {
		t.Fatalf("found the option words of %d programs in readonly.go", len(out))
	}
	return out
}
