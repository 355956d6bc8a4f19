package shellguard

import "testing"

// TestHumanOnlyJudgesAssignedPaths: a variable's value may be where a
// program writes (git's index and trace files, a shell's history, a
// temporary, cache or configuration directory), so a value naming a
// protected path is a person's, as the same path named as a word is:
// in front of a program, on its own, or exported; when proposed and, on
// the environment a program gets, at run time. Search lists (…PATH),
// plain values and the unchanged environment are not.
func TestHumanOnlyJudgesAssignedPaths(t *testing.T) {
	ws, home := escalationWorkspace(t)
	for _, cmd := range []string{
		"GIT_INDEX_FILE=AGENTS.md git add .",
		"GIT_INDEX_FILE=.git/config git add .",
		"GIT_TRACE=" + ws + "/AGENTS.md git status",
		"export GIT_TRACE=$PWD/AGENTS.md; git status",
		"export GIT_TRACE=" + ws + "/AGENTS.md; git status",
		"declare -x HISTFILE=~/.bashrc; bash -i",
		"TMPDIR=.git/hooks sort -S1 f",
		"XDG_CONFIG_HOME=~/.config some-tool init",
		"cd sub && GIT_INDEX_FILE=../.jazz/x git add .",
		"GOCACHE=$HOME/.ssh go build",
	} {
		if why := HumanOnly(cmd, ws, home); why == "" {
			t.Errorf("HumanOnly(%q) = \"\", want a reason", cmd)
		}
	}
	for _, cmd := range []string{
		"LANG=C ls",
		"export GOFLAGS=-trimpath; go build ./...",
		"PATH=$HOME/.cargo/bin:$PATH cargo build",
		"NODE_ENV=production npm run build",
		"cd sub && CC=gcc make",
		"GIT_INDEX_FILE=/tmp/idx git add .",
	} {
		if why := HumanOnly(cmd, ws, home); why != "" {
			t.Errorf("HumanOnly(%q) = %q, want \"\"", cmd, why)
		}
	}
	start := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "GIT_TRACE=" + ws + "/AGENTS.md"}
	for _, c := range []struct {
		env  []string
		want bool
	}{
		{[]string{"PATH=/usr/bin", "GIT_INDEX_FILE=AGENTS.md"}, true},
		{[]string{"HISTFILE=" + home + "/.bash_history"}, true},
		{[]string{"TMPDIR=.git/x"}, true},
		{[]string{"GIT_TRACE=" + ws + "/AGENTS.md"}, false}, // the user's own, unchanged
		{[]string{"PATH=" + ws + "/.git:/usr/bin"}, false},  // a search list
		{[]string{"PWD=" + ws + "/.git"}, false},            // judged as the directory a program runs in
		{[]string{"LANG=C.UTF-8", "FOO=bar"}, false},
	} {
		if got := ProtectedEnv([]string{"git", "add", "."}, c.env, start, ws, []string{home}) != ""; got != c.want {
			t.Errorf("ProtectedEnv(%q) = %v, want %v", c.env, got, c.want)
		}
	}
}

// TestHumanOnlyJudgesDirectoriesInVariables: a directory a variable
// tells a writing program to work in (GIT_WORK_TREE) is judged as one it
// names: the home directory, or one holding it, takes a checkout's dot
// files; an inspect-only program told so writes nothing there.
func TestHumanOnlyJudgesDirectoriesInVariables(t *testing.T) {
	ws, home := escalationWorkspace(t)
	for _, cmd := range []string{
		"GIT_WORK_TREE=~ git checkout -- .",
		"export GIT_WORK_TREE=$HOME; git checkout -- .",
		"GIT_WORK_TREE=" + home + "/.. git checkout -- .",
	} {
		if why := HumanOnly(cmd, ws, home); why == "" {
			t.Errorf("HumanOnly(%q) = \"\", want a reason", cmd)
		}
	}
	if why := HumanOnly("GIT_WORK_TREE=~ git status", ws, home); why != "" {
		t.Errorf("an inspect-only git told the home: %q", why)
	}
	env := []string{"GIT_WORK_TREE=" + home}
	if why := ProtectedEnv([]string{"git", "checkout", "--", "."}, env, nil, ws, []string{home}); why == "" {
		t.Error("ProtectedEnv of a checkout into the home = \"\", want a reason")
	}
	if why := ProtectedEnv([]string{"git", "status"}, env, nil, ws, []string{home}); why != "" {
		t.Errorf("ProtectedEnv of git status: %q", why)
	}
}

// TestHumanOnlyGitSubcommandsThatWriteConfig: git maintenance register
// and start write git's global configuration (start also the user's
// scheduler, which runs git later), git lfs install its filters and the
// repository's hooks: configuration changes as `git config` is.
func TestHumanOnlyGitSubcommandsThatWriteConfig(t *testing.T) {
	ws, home := escalationWorkspace(t)
	for _, cmd := range []string{"git maintenance start", "git maintenance register", "git lfs install", "git lfs install --local"} {
		if why := HumanOnly(cmd, ws, home); why == "" {
			t.Errorf("HumanOnly(%q) = \"\", want a reason", cmd)
		}
	}
	for _, cmd := range []string{"git maintenance run --task=gc", "git lfs ls-files"} {
		if why := HumanOnly(cmd, ws, home); why != "" {
			t.Errorf("HumanOnly(%q) = %q, want \"\"", cmd, why)
		}
	}
}
