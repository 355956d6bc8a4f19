package writetools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/tools"
)

// TestNoAutomaticStepsAssembleAGitDirectory: a directory git takes for a
// repository's own directory (a bare repository under a plain name) runs
// its config's programs (core.fsmonitor, hooks) on the next git command
// a person types there, so making one is a change only a person
// approves. Each step alone is judged on the directory as it is; the
// steps here make one without any of them being the last piece on its
// own: a batch whose calls are all proposed before any twin runs (up to
// ten run at once, and an allowlisted write is approved at once), and a
// sequence that copies in an objects/ that is a dangling link and makes
// its target last.
// Whenever git ends up taking the directory for a repository's, a person
// must have been asked for at least one of the steps.
func TestNoAutomaticStepsAssembleAGitDirectory(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	type step struct {
		name string
		args map[string]any
	}
	write := func(p, content string) step {
		return step{"write_file", map[string]any{"path": p, "content": content}}
	}
	mkdir := func(p string) step { return step{"mkdir", map[string]any{"path": p}} }
	head := write("d/HEAD", "ref: refs/heads/main\n")
	config := write("d/config", "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch pwned\n")
	objects, refs := mkdir("d/objects"), mkdir("d/refs")
	commondir := write("d/commondir", "../.git\n")
	scenarios := []struct {
		name  string
		batch bool // propose every step, then run every twin
		link  bool // ws/tpl/objects -> ../odir, a dangling link, exists (say, a venv's or node_modules'), and d does not
		head  bool // d/HEAD is there already (a person made it, or the project has one)
		steps []step
	}{
		{name: "batch", batch: true, steps: []step{head, objects, refs, config}},
		{name: "batch, HEAD last", batch: true, steps: []step{config, objects, refs, head}},
		{name: "batch, worktree", batch: true, steps: []step{commondir, head}},
		{name: "dangling objects", link: true, steps: []step{
			{"cp", map[string]any{"source": "tpl", "destination": "d"}}, // copies the link as a link
			head, refs, config, mkdir("odir"),
		}},
		{name: "batch, HEAD there", batch: true, head: true, steps: []step{objects, refs, config}},
		{name: "sequence", steps: []step{config, objects, refs, head}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			h := newHarness(t)
			ws := h.path("ws")
			// commondir's target: the workspace's repository.
			must(t, os.MkdirAll(filepath.Join(ws, ".git/objects"), 0o755))
			must(t, os.MkdirAll(filepath.Join(ws, ".git/refs"), 0o755))
			if sc.link {
				must(t, os.MkdirAll(filepath.Join(ws, "tpl"), 0o755))
				must(t, os.Symlink("../odir", filepath.Join(ws, "tpl/objects")))
			} else {
				must(t, os.MkdirAll(filepath.Join(ws, "d"), 0o755))
			}
			if sc.head {
				must(t, os.WriteFile(filepath.Join(ws, "d/HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
			}
			h.env.WorkDir = ws
			asked := []string{}
			if sc.batch {
				var proposals []*tools.Result
				for _, s := range sc.steps {
					p := h.propose(s.name, s.args)
					proposals = append(proposals, p)
					if p.Approval.HumanOnly != "" {
						asked = append(asked, s.name+" "+fmt.Sprint(s.args["path"]))
					}
				}
				for _, p := range proposals {
					// A twin may refuse: the batch's other calls changed
					// what its preview was judged on.
					if r := h.approve(p); !r.Success && !strings.Contains(r.Error, "changed since the preview was approved") {
						t.Fatalf("%s: %s", p.Approval.ExecuteToolName, r.Error)
					}
				}
			} else {
				for _, s := range sc.steps {
					p := h.propose(s.name, s.args)
					if p.Approval.HumanOnly != "" {
						asked = append(asked, s.name+" "+fmt.Sprint(s.args["path"]))
					}
					if r := h.approve(p); !r.Success {
						t.Fatalf("%s %v: %s", s.name, s.args, r.Error)
					}
				}
			}
			d := filepath.Join(ws, "d")
			cmd := exec.Command(git, "rev-parse", "--absolute-git-dir")
			cmd.Dir = d
			cmd.Env = append(os.Environ(), "HOME="+h.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES="+ws, "GIT_CONFIG_GLOBAL=/dev/null")
			out, err := cmd.Output()
			isGit := err == nil && strings.TrimSpace(string(out)) == d
			if !isGit {
				if !sc.batch {
					t.Fatalf("git does not take %s for a repository's directory (%v): the steps test nothing", d, err)
				}
				return
			}
			if len(asked) == 0 {
				t.Errorf("git now takes %s for a repository's own directory, and no step asked a person: every one could be approved automatically", d)
			}
		})
	}
}
