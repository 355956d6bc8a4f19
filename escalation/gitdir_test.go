package escalation

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitDirAgainstGit: a directory built one write at a time must not
// become one git takes for a repository's own directory without a
// person being asked. For every state of the pieces git looks at (HEAD,
// objects/, refs/, commondir, and config beside them) and every next
// write into it, real git is asked whether the directory is a git
// directory after the write; whenever it is, Why must have said, before
// the write, that only a person may approve it. This is the order
// config, objects, refs, HEAD (no write before the last one completes a
// git directory) and a commondir standing in for objects and refs.
func TestGitDirAgainstGit(t *testing.T) {
	g := newGitRig(t)
	root, pieces, make1, isGit := g.root, g.pieces, g.make1, g.isGit
	writes := []gitPiece{
		pieces[0], pieces[3], pieces[4],
		{"objects/x", false, "x"}, {"refs/x", false, "x"}, {"objects", true, ""}, {"refs/heads", true, ""}, {"sub/x", false, "x"},
	}
	made, asked := 0, 0
	for state := 0; state < 1<<len(pieces); state++ {
		for wi, w := range writes {
			d := filepath.Join(root, fmt.Sprintf("state%02d", state), fmt.Sprintf("plain%d", wi))
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			for i, p := range pieces {
				if state&(1<<i) != 0 {
					if err := make1(d, p); err != nil {
						t.Fatal(err)
					}
				}
			}
			if isGit(d) {
				continue // already git's before the write: Why judged it so (TestWhy)
			}
			target := filepath.Join(d, w.path)
			why := Why(target, nil)
			if err := make1(d, w); err != nil {
				continue // the write cannot happen here (a file where a directory goes)
			}
			if isGit(d) {
				made++
				if why == "" {
					t.Errorf("with %s present, writing %s makes git take %s for a repository's own directory, and any approval could approve it", present(pieces, state), w.path, d)
				} else {
					asked++
				}
			}
		}
	}
	if made == 0 {
		t.Fatal("no write completed a git directory: the test checked nothing")
	}
	t.Logf("%d writes completed a git directory; a person was asked for %d", made, asked)
}

// gitPiece is a file or directory of a would-be git directory.
type gitPiece struct {
	path    string // under the directory
	dir     bool
	content string
}

// present names the pieces of state.
func present(pieces []gitPiece, state int) string {
	var names []string
	for i, p := range pieces {
		if state&(1<<i) != 0 {
			names = append(names, p.path)
		}
	}
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}

// gitRig is a directory to build would-be git directories in, with a
// bare repository (common) for a commondir to name, and real git to ask.
type gitRig struct {
	root   string
	pieces []gitPiece
	make1  func(d string, p gitPiece) error
	isGit  func(d string) bool
}

func newGitRig(t *testing.T) *gitRig {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+root, "GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES="+root)
	if out, err := exec.Command(git, "init", "-q", "--bare", filepath.Join(root, "common")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	g := &gitRig{root: root, pieces: []gitPiece{
		{"HEAD", false, "ref: refs/heads/main\n"},
		{"objects", true, ""},
		{"refs", true, ""},
		{"commondir", false, "../common\n"},
		{"config", false, "[core]\n\trepositoryformatversion = 0\n"},
	}}
	g.make1 = func(d string, p gitPiece) error {
		f := filepath.Join(d, p.path)
		if p.dir {
			return os.MkdirAll(f, 0o755)
		}
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return err
		}
		return os.WriteFile(f, []byte(p.content), 0o644)
	}
	g.isGit = func(d string) bool {
		cmd := exec.Command(git, "rev-parse", "--absolute-git-dir")
		cmd.Dir, cmd.Env = d, env
		out, err := cmd.Output()
		return err == nil && strings.TrimSpace(string(out)) == d
	}
	return g
}

// TestGitDirAgainstGitInOneBatch: the pieces may also be made by calls
// that were all judged before any of them ran (one batch, proposed
// together, run after). For every state of the pieces and every set of
// the missing ones, each judged on the state before the batch, real git
// is asked whether the directory is a git directory once all are made;
// whenever it is, Why must have sent at least one of them to a person.
func TestGitDirAgainstGitInOneBatch(t *testing.T) {
	g := newGitRig(t)
	made, asked := 0, 0
	for state := 0; state < 1<<len(g.pieces); state++ {
		for set := 1; set < 1<<len(g.pieces); set++ {
			if set&state != 0 {
				continue
			}
			d := filepath.Join(g.root, fmt.Sprintf("s%02d-b%02d", state, set))
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			for i, p := range g.pieces {
				if state&(1<<i) != 0 {
					if err := g.make1(d, p); err != nil {
						t.Fatal(err)
					}
				}
			}
			if g.isGit(d) {
				continue
			}
			var whys []string
			for i, p := range g.pieces {
				if set&(1<<i) != 0 {
					if why := Why(filepath.Join(d, p.path), nil); why != "" {
						whys = append(whys, why)
					}
				}
			}
			for i, p := range g.pieces {
				if set&(1<<i) != 0 {
					if err := g.make1(d, p); err != nil {
						t.Fatal(err)
					}
				}
			}
			if g.isGit(d) {
				made++
				if len(whys) == 0 {
					t.Errorf("with %s present, one batch making %s makes git take %s for a repository's own directory, and no call of it asks a person", present(g.pieces, state), present(g.pieces, set), d)
				} else {
					asked++
				}
			}
		}
	}
	if made == 0 {
		t.Fatal("no batch completed a git directory: the test checked nothing")
	}
	t.Logf("%d batches completed a git directory; a person was asked in %d", made, asked)
}
