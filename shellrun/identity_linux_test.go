package shellrun

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/shellguard"
)

// TestRunnerKnowsProgramsByWhatTheyAre: a link or copy of git made by the
// command itself, under any name, is still git's init with --bare, which
// makes a repository's own directory where the command says: only a
// person may approve that, so under the high-risk policy it is refused
// when it is about to run, and no HEAD appears. And a program the static
// read-only pass approved by name runs only if the file PATH finds is
// that program: a script named cat first on PATH is refused, not run.
func TestRunnerKnowsProgramsByWhatTheyAre(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	for _, cmd := range []string{
		"ln -s " + git + " g; ./g init -q --bare d",
		"cp " + git + " x && ./x init -q --bare d",
		"cp " + git + " x && env ./x init -q --bare d",
		"mkdir -p b && ln -s " + git + " b/h && PATH=$PWD/b:$PATH && h init -q --bare d",
		"ln " + git + " hard 2>/dev/null || cp " + git + " hard; ./hard -c init.templateDir=t init -q d",
	} {
		t.Run(cmd, func(t *testing.T) {
			req := request(t, cmd)
			req.Judgement = shellguard.Judgement{Command: cmd, By: shellguard.ByPolicy}
			out := mustRun(t, req)
			if !strings.Contains(out.NotJudged, "only a person may approve") {
				t.Errorf("not refused: %+v", out)
			}
			if _, err := os.Stat(filepath.Join(req.Dir, "d", "HEAD")); err == nil {
				t.Error("git under another name made a repository in d")
			}
		})
	}

	// Under the high-risk policy too: a copy of tee put on PATH as cat is
	// judged as the program it is, which names AGENTS.md to write it.
	t.Run("tee as cat", func(t *testing.T) {
		tee, err := exec.LookPath("tee")
		if err != nil {
			t.Skip("no tee")
		}
		cmd := "mkdir b && cp " + tee + " b/cat && PATH=$PWD/b:$PATH && echo evil | cat AGENTS.md"
		req := request(t, cmd)
		if err := os.WriteFile(filepath.Join(req.Dir, "AGENTS.md"), []byte("ok\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		req.Judgement = shellguard.Judgement{Command: cmd, By: shellguard.ByPolicy}
		out := mustRun(t, req)
		if b, _ := os.ReadFile(filepath.Join(req.Dir, "AGENTS.md")); string(b) != "ok\n" {
			t.Errorf("AGENTS.md is now %q: %+v", b, out)
		}
		if !strings.Contains(out.NotJudged, "only a person may approve") {
			t.Errorf("not refused: %+v", out)
		}
	})

	t.Run("a script named cat first on PATH", func(t *testing.T) {
		req := request(t, "cat f")
		bin := filepath.Join(req.Dir, "bin")
		if err := os.Mkdir(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, "cat"), []byte("#!/bin/sh\necho ran > "+req.Dir+"/ran\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(req.Dir, "f"), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		req.Env = append([]string{"PATH=" + bin + ":" + os.Getenv("PATH")}, req.Env[1:]...)
		req.Judgement = shellguard.Judge("cat f", shellguard.ByStatic, nil, "read-only")
		out := mustRun(t, req)
		if _, err := os.Stat(filepath.Join(req.Dir, "ran")); err == nil {
			t.Fatalf("the script ran under the static approval of cat: %+v", out)
		}
		if !strings.Contains(out.NotJudged, "not the system's cat") {
			t.Errorf("refusal %q: %+v", out.NotJudged, out)
		}
		// The system's cat runs as approved.
		req.Env = request(t, "").Env
		if out := mustRun(t, req); out.NotJudged != "" || strings.TrimSpace(out.Stdout) != "x" {
			t.Errorf("the system's cat: %+v", out)
		}
	})
}

// TestRunnerJudgesTheEnvironmentAProgramGets: a value the command
// computes is known only at run time, in the environment the program
// gets: git's index written as AGENTS.md (GIT_INDEX_FILE) is a person's
// to approve, so under the high-risk policy git is refused and no
// AGENTS.md appears.
func TestRunnerJudgesTheEnvironmentAProgramGets(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	cmd := "f=AGENTS.md; GIT_INDEX_FILE=$f git add x"
	req := request(t, cmd)
	init := exec.Command("git", "init", "-q", req.Dir)
	init.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	if out, err := init.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(req.Dir, "x"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	req.Judgement = shellguard.Judgement{Command: cmd, By: shellguard.ByPolicy}
	out := mustRun(t, req)
	if _, err := os.Stat(filepath.Join(req.Dir, "AGENTS.md")); err == nil {
		t.Errorf("git wrote its index as AGENTS.md: %+v", out)
	}
	if !strings.Contains(out.NotJudged, "only a person may approve") {
		t.Errorf("not refused: %+v", out)
	}
}

// TestRunnerHoldsTheClassifierToWhatProgramsAre: a classifier's rating
// holds for what the programs are, so a link to rm (a repository may
// carry one) is rm, which clearly mutates: refused at run time, the file
// kept.
func TestRunnerHoldsTheClassifierToWhatProgramsAre(t *testing.T) {
	cmd := "./fmt -f victim"
	req := request(t, cmd)
	if err := os.Symlink("/bin/rm", filepath.Join(req.Dir, "fmt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(req.Dir, "victim"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	req.Judgement = shellguard.Judge(cmd, shellguard.ByClassifier, nil, "low-risk")
	out := mustRun(t, req)
	if _, err := os.Stat(filepath.Join(req.Dir, "victim")); err != nil {
		t.Errorf("rm under another name ran under the classifier's rating: %+v", out)
	}
	if !strings.HasPrefix(out.NotJudged, "not auto-approved: ") {
		t.Errorf("refusal %q: %+v", out.NotJudged, out)
	}
}

// TestRunnerJudgesAWorkTreeInTheEnvironment: GIT_WORK_TREE set to the
// home directory, computed so only the run-time check sees it, makes a
// checkout write the repository's dot files there: refused under the
// high-risk policy, no .bashrc planted.
func TestRunnerJudgesAWorkTreeInTheEnvironment(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	cmd := "h=$HOME; GIT_WORK_TREE=$h git checkout -- ."
	req := request(t, cmd)
	home, _ := shellguard.LookupEnv(req.Env, "HOME")
	if err := os.WriteFile(filepath.Join(req.Dir, ".bashrc"), []byte("evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", ".bashrc"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"}} {
		c := exec.Command("git", args...)
		c.Dir, c.Env = req.Dir, append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+home)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v: %s", args, err, out)
		}
	}
	req.Judgement = shellguard.Judgement{Command: cmd, By: shellguard.ByPolicy}
	out := mustRun(t, req)
	if _, err := os.Stat(filepath.Join(home, ".bashrc")); err == nil {
		t.Errorf("the checkout planted .bashrc in the home: %+v", out)
	}
	if !strings.Contains(out.NotJudged, "only a person may approve") {
		t.Errorf("not refused: %+v", out)
	}
}

// TestRunnerHoldsTheClassifierToTheEnvironmentItRated: a variable whose
// name the command computes (here BASH_ENV, which makes every bash load
// a file) never appeared to the classifier: the program is refused.
func TestRunnerHoldsTheClassifierToTheEnvironmentItRated(t *testing.T) {
	cmd := `n=$(printf 'BASH_%s' ENV); export "$n=./rc"; env`
	req := request(t, cmd)
	req.Judgement = shellguard.Judge(cmd, shellguard.ByClassifier, nil, "low-risk")
	out := mustRun(t, req)
	if strings.Contains(out.Stdout, "BASH_ENV=") || !strings.Contains(out.NotJudged, "does not spell") {
		t.Errorf("a computed variable reached a program under the classifier's rating: %+v", out)
	}
}
