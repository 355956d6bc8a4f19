package shellguard

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// gitUnderOtherNames is a directory holding git under other names: g, a
// link to it; x, a copy of it; bin/h, a link on a PATH directory; and
// notgit, a copy of true; r and c, links to rm and cp; xa, a copy of
// xargs; and payload/, a tree holding a .git.
func gitUnderOtherNames(t *testing.T) (dir, git string) {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git on PATH")
	}
	dir, err = filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir+"/bin", 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"g": git, "bin/h": git, "r": "/bin/rm", "c": "/bin/cp"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for name, src := range map[string]string{"x": git, "notgit": "/bin/true", "xa": "/usr/bin/xargs"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, content := range map[string]string{"script.sh": "#!/bin/sh\n", "payload/.git/config": "[core]\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, git
}

// TestProgramsByIdentity: a link or copy of git is read as git wherever a word
// of the argv names it (the program, a wrapper's program, a command line
// inside a word), by path from the directory or bare on PATH; other
// programs, and git already named git, stay as they are.
func TestProgramsByIdentity(t *testing.T) {
	dir, git := gitUnderOtherNames(t)
	env := []string{"PATH=" + dir + "/bin:/usr/bin:/bin"}
	cases := []struct{ argv, want []string }{
		{[]string{"./g", "init", "--bare", "d"}, []string{"git", "init", "--bare", "d"}},
		{[]string{dir + "/x", "config", "core.hooksPath", "hooks"}, []string{"git", "config", "core.hooksPath", "hooks"}},
		{[]string{"env", "x/../g", "init"}, []string{"env", "git", "init"}},
		{[]string{"h", "-c", "alias.s=!sh", "s"}, []string{"git", "-c", "alias.s=!sh", "s"}},
		{[]string{"env", "-S", "'./x' init --bare d"}, []string{"env", "-S", "git init --bare d"}},
		{[]string{"./notgit", "init", "--bare", "d"}, []string{"true", "init", "--bare", "d"}}, // a copy of true
		{[]string{"./r", "-rf", "x"}, []string{"rm", "-rf", "x"}},
		{[]string{"env", "./xa", "cp", "f"}, []string{"env", "xargs", "cp", "f"}},
		{[]string{"./script.sh"}, nil},
		{[]string{git, "status"}, nil},
		{[]string{"cat", "./g"}, []string{"cat", "git"}},
		{[]string{"cat", "g"}, nil}, // not on PATH
	}
	for _, c := range cases {
		want := c.want
		if want == nil {
			want = c.argv
		}
		if got := ProgramsByIdentity(c.argv, dir, env); !slices.Equal(got, want) {
			t.Errorf("ProgramsByIdentity(%q) = %q, want %q", c.argv, got, want)
		}
	}
	// What the git rules then make of it: a person's.
	for _, argv := range [][]string{
		{"./g", "init", "--bare", "d"},
		{"./x", "-c", "alias.s=!sh", "s"},
		{"h", "config", "core.fsmonitor", "touch pwn"},
		{"env", "./g", "init", "--bare", "d"},
		{"./xa", "cp", "f"},           // xargs builds command lines from its input
		{"./c", "-r", "payload", "d"}, // cp plants the tree's .git
	} {
		if why := ProtectedArgv(ProgramsByIdentity(argv, dir, env), dir, nil); why == "" {
			t.Errorf("ProtectedArgv(ProgramsByIdentity(%q)) = \"\", want a reason", argv)
		}
	}
	if why := ProtectedGitEnv(ProgramsByIdentity([]string{"./x", "init"}, dir, env), []string{"GIT_DIR=d"}, nil); why == "" {
		t.Error("a copy of git's init with GIT_DIR set: ProtectedGitEnv = \"\", want a reason")
	}
	// When the link is there before the command is proposed, the propose
	// side reads it too.
	for _, cmd := range []string{"./g init --bare d", dir + "/x config core.hooksPath h", "cd bin && ../x init --bare d", "./c -r payload d", "printf x | ./xa cp f"} {
		if why := HumanOnly(cmd, dir, ""); why == "" {
			t.Errorf("HumanOnly(%q) = \"\", want a reason", cmd)
		}
	}
	if why := HumanOnly("./notgit init --bare d", dir, ""); why != "" {
		t.Errorf("HumanOnly of another program: %q", why)
	}
}

// TestCheckProgramIdentifiesTheExecutable: an automatic approval that
// rests on a program's option grammar holds only for that program as the
// system installs it (or a copy of it): a `cat` found first on PATH that
// is git, or a script, is refused; the system's cat and a copy of it
// pass, and so does anything a person or the high-risk policy approved.
func TestCheckProgramIdentifiesTheExecutable(t *testing.T) {
	dir, _ := gitUnderOtherNames(t)
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	b, err := os.ReadFile(cat)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"bin/cat": b, "bin/ls": []byte("#!/bin/sh\ntouch pwn\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	static := Judgement{Command: "cat f", By: ByStatic, Level: "read-only"}
	for _, c := range []struct {
		bin  string
		argv []string
		ok   bool
	}{
		{cat, []string{"cat", "f"}, true},
		{dir + "/bin/cat", []string{"cat", "f"}, true}, // a copy: the same bytes
		{dir + "/x", []string{"cat", "f"}, false},      // git under cat's name
		{dir + "/bin/ls", []string{"ls"}, false},       // a script
		{dir + "/g", []string{"git", "status"}, true},  // a link to the system's git
		{dir + "/notgit", []string{"npm", "test"}, true},
	} {
		if err := static.CheckProgram(c.bin, c.argv); (err == nil) != c.ok {
			t.Errorf("CheckProgram(%s, %q) = %v, want ok %v", c.bin, c.argv, err, c.ok)
		}
	}
	for _, by := range []Approver{ByHuman, ByPolicy} {
		if err := (Judgement{By: by}).CheckProgram(dir+"/bin/ls", []string{"ls"}); err != nil {
			t.Errorf("%s: %v", by, err)
		}
	}
}

// TestCheckRepoKnowsGitByIdentity: a link or copy of git reads the same
// repository configuration as git, so an automatic approval of it is
// held to the same repository check.
func TestCheckRepoKnowsProgramsByIdentity(t *testing.T) {
	dir, _ := gitUnderOtherNames(t)
	repo := filepath.Join(dir, "repo")
	cmd := exec.Command("git", "init", "-q", repo)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(repo, ".git", "config"), []byte("[core]\n\tfsmonitor = touch pwn\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
	j := Judgement{Command: "g status", By: ByAllowlist, Entries: []string{"g"}}
	for _, bin := range []string{dir + "/g", dir + "/x"} {
		if err := j.CheckRepo(context.Background(), bin, repo, env, []string{"g", "status"}); err == nil {
			t.Errorf("CheckRepo(%s) in a repository whose config runs a program: nil, want a refusal", bin)
		}
	}
	if err := j.CheckRepo(context.Background(), dir+"/notgit", repo, env, []string{"notgit", "status"}); err != nil {
		t.Errorf("CheckRepo of another program: %v", err)
	}
}

// TestAsExecuted: a read-only program's name on a file that is another
// program is read as that file's path, which no inspect-only grammar
// admits, so ProtectedArgv judges what it names; the system's program,
// and a program outside the read-only set, keep their name.
func TestAsExecuted(t *testing.T) {
	dir, _ := gitUnderOtherNames(t)
	tee, err := exec.LookPath("tee")
	if err != nil {
		t.Skip("no tee")
	}
	b, err := os.ReadFile(tee)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/bin/cat", b, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := AsExecuted(dir+"/bin/cat", []string{"cat", "AGENTS.md"}); got[0] != dir+"/bin/cat" {
		t.Errorf("tee as cat: %q", got)
	} else if why := ProtectedArgv(got, dir, nil); why == "" {
		t.Error("tee as cat naming AGENTS.md: ProtectedArgv = \"\", want a reason")
	}
	cat, _ := exec.LookPath("cat")
	for _, c := range []struct {
		bin  string
		argv []string
	}{{cat, []string{"cat", "AGENTS.md"}}, {dir + "/notgit", []string{"npm", "test"}}} {
		if got := AsExecuted(c.bin, c.argv); !slices.Equal(got, c.argv) {
			t.Errorf("AsExecuted(%s, %q) = %q", c.bin, c.argv, got)
		}
	}
}

// TestCheckEnvHoldsTheClassifierToItsText: a classifier rated the text,
// so a variable a program gets from the command must be one the text
// spells; a computed name (LD_PRELOAD by way of $n) is refused, a spelled
// one and the shell's own PWD pass, and other approvals are not asked.
func TestCheckEnvHoldsTheClassifierToItsText(t *testing.T) {
	start := []string{"PATH=/usr/bin", "HOME=/h"}
	j := Judgement{Command: `n=LD_PRELOAD; export "$n=/x.so"; export FOO=1; cd sub; ls`, By: ByClassifier, Level: "low-risk"}
	for _, c := range []struct {
		env []string
		ok  bool
	}{
		{[]string{"PATH=/usr/bin", "HOME=/h", "FOO=1", "PWD=/w/sub", "OLDPWD=/w"}, true},
		{[]string{"PATH=/usr/bin", "HOME=/h", "LD_PRELOAD=/x.so"}, true}, // spelled: n=LD_PRELOAD
		{[]string{"PATH=/usr/bin", "HOME=/h", "BASH_ENV=/x"}, false},
		{[]string{"PATH=/tmp", "HOME=/h"}, false}, // PATH changed, not spelled
		{[]string{"PATH=/usr/bin", "HOME=/h", "PRELOAD=1"}, false},
	} {
		if err := j.CheckEnv(c.env, start); (err == nil) != c.ok {
			t.Errorf("CheckEnv(%q) = %v, want ok %v", c.env, err, c.ok)
		}
	}
	if err := (Judgement{By: ByPolicy}).CheckEnv([]string{"BASH_ENV=/x"}, start); err != nil {
		t.Errorf("the high-risk policy: %v", err)
	}
}
