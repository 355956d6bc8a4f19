//go:build linux

package shellguard

import (
	"bytes"
	"context"
	"errors"
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
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestGitGrammarRunsNothing is a property of the git grammar as a whole,
// checked against the real git: every option word any of git.go's option
// lists names, given to every inspect-only subcommand alone and with
// values that make git act (placeholders that start a child or gpg, a
// merge mode that writes objects, a sort key that verifies signatures),
// is either refused by the read-only check or, run with the environment
// of an automatic approval in a repository with a merge and a tag, starts
// no program (GIT_TRACE) and creates, changes or removes no file in the
// repository, not even for a moment (inotify; FuzzOracle compares trees
// after the fact and misses a file written and removed again).
func TestGitGrammarRunsNothing(t *testing.T) {
	// The whole sweep runs git a few thousand times (about 10 s); under
	// -short or the race detector, which adds nothing to git, a fixed
	// eighth of it.
	sample := uint32(1)
	if testing.Short() || raceEnabled {
		sample = 8
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git on PATH")
	}
	words := gitGrammarWords(t)
	repo, env, trace := gitGrammarRepo(t, gitPath)
	w := newTreeWatch(t, repo)

	values := []string{"%(describe)", "%GG", "format:%(describe)", "remerge", "signature", "-signature:key"}
	runs := 0
	seen := map[string]bool{}
	check := func(argv []string) {
		key := strings.Join(argv, "\x00")
		if seen[key] {
			return
		}
		seen[key] = true
		h := fnv.New32a()
		h.Write([]byte(key))
		if h.Sum32()%sample != 0 || argvReadOnlyProblem(argv) != "" {
			return
		}
		runs++
		os.Truncate(trace, 0)
		w.drain()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, gitPath, argv[1:]...)
		cmd.Dir, cmd.Env = repo, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		_ = cmd.Run() // many calls fail (a value git rejects); what matters is what they did
		if ctx.Err() != nil {
			t.Errorf("approved %q, and it did not end within 10 s", argv)
		}
		if ch := w.drain(); len(ch) > 0 {
			t.Errorf("approved %q, and it touched %s", argv, strings.Join(ch, ", "))
		}
		b, _ := os.ReadFile(trace)
		for _, l := range strings.Split(string(b), "\n") {
			if m := gitRuns.FindStringSubmatch(l); m != nil {
				t.Errorf("approved %q, and git started %s", argv, m[1])
				break
			}
		}
	}
	for sub := range gitSubcommands() {
		for _, word := range words {
			name, arity, _ := strings.Cut(word, "=")
			check([]string{"git", sub, name})
			if arity == "" && !strings.HasSuffix(word, "=") {
				continue
			}
			for _, v := range values {
				if strings.HasPrefix(name, "--") {
					check([]string{"git", sub, name + "=" + v})
				} else {
					check([]string{"git", sub, name + v})
				}
				if arity == "" || arity == "+" { // a mandatory value may be the next word
					check([]string{"git", sub, name, v})
				}
			}
		}
	}
	if runs < 200/int(sample) {
		t.Fatalf("only %d approved calls ran: the sweep lost its grammar", runs)
	}
	t.Logf("%d option words, %d approved calls run", len(words), runs)
}

// gitGrammarWords are the option words of every string literal in git.go
// ("-n=", "--format=?", "--all" …): a superset of what each subcommand
// accepts, which the read-only check then narrows.
func gitGrammarWords(t *testing.T) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "git.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, w := range strings.Fields(s) {
				if regexp.MustCompile(`^--?[A-Za-z0-9][A-Za-z0-9-]*(=[?+]?)?$`).MatchString(w) && !slices.Contains(words, w) {
					words = append(words, w)
				}
			}
		}
		return true
	})
	if len(words) < 100 {
		t.Fatalf("found %d option words in git.go", len(words))
	}
	return words
}

// gitGrammarRepo makes a repository with a tag and a merge of two
// conflicting branches (remerge has something to write), and the
// environment an automatically approved git gets, tracing to trace.
func gitGrammarRepo(t *testing.T, gitPath string) (repo string, env []string, trace string) {
	dir := t.TempDir()
	repo = filepath.Join(dir, "repo")
	home := filepath.Join(dir, "home")
	trace = filepath.Join(dir, "trace")
	for _, d := range []string{repo, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C",
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x"}
	setup := func(script string) {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Dir, cmd.Env = repo, append(base, "GIT="+gitPath)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("set up the repository: %v\n%s", err, out)
		}
	}
	setup(`set -e
"$GIT" init -q -b main .
echo a > f; "$GIT" add f; "$GIT" commit -qm a; "$GIT" tag -a -m v1 v1
"$GIT" checkout -qb side; echo b > f; "$GIT" commit -qam b
"$GIT" checkout -q main; echo c > f; "$GIT" commit -qam c
"$GIT" merge -q side >/dev/null 2>&1 || true; echo d > f; "$GIT" commit -qam merge
"$GIT" gc -q; "$GIT" status >/dev/null`)
	env = append(AutoEnv(HardenEnv(base)), "GIT_TRACE="+trace, "GIT_PAGER=cat", "PAGER=cat")
	return repo, env, trace
}

// treeWatch reports every change inside a directory tree.
type treeWatch struct {
	fd   int
	dirs map[int]string
	t    *testing.T
	buf  []byte
}

func newTreeWatch(t *testing.T, root string) *treeWatch {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("no inotify: %v", err)
	}
	w := &treeWatch{fd: fd, dirs: map[int]string{}, t: t, buf: make([]byte, 64<<10)}
	t.Cleanup(func() { unix.Close(fd) })
	const mask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_DELETE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_CLOSE_WRITE
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		wd, err := unix.InotifyAddWatch(fd, p, mask)
		if err != nil {
			return err
		}
		w.dirs[wd] = p
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// drain returns the changes seen since the last call.
func (w *treeWatch) drain() []string {
	var out []string
	for {
		n, err := unix.Read(w.fd, w.buf)
		if errors.Is(err, unix.EAGAIN) || n <= 0 {
			return out
		}
		if err != nil {
			w.t.Fatal(err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			name := string(bytes.TrimRight(w.buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], "\x00"))
			out = append(out, filepath.Join(w.dirs[int(ev.Wd)], name))
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}
