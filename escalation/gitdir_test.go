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
	pieces := []gitPiece{
		{"HEAD", false, "ref: refs/heads/main\n"},
		{"objects", true, ""},
		{"refs", true, ""},
		{"commondir", false, "../common\n"},
		{"config", false, "[core]\n\trepositoryformatversion = 0\n"},
	}
	writes := []gitPiece{
		pieces[0], pieces[3], pieces[4],
		{"objects/x", false, "x"}, {"refs/x", false, "x"}, {"objects", true, ""}, {"refs/heads", true, ""}, {"sub/x", false, "x"},
	}
	make1 := func(d string, p gitPiece) error {
		f := filepath.Join(d, p.path)
		if p.dir {
			return os.MkdirAll(f, 0o755)
		}
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return err
		}
		return os.WriteFile(f, []byte(p.content), 0o644)
	}
	isGit := func(d string) bool {
		cmd := exec.Command(git, "rev-parse", "--absolute-git-dir")
		cmd.Dir, cmd.Env = d, env
		out, err := cmd.Output()
		return err == nil && strings.TrimSpace(string(out)) == d
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
