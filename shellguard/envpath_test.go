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
		if got := ProtectedEnv(c.env, start, ws, []string{home}) != ""; got != c.want {
			t.Errorf("ProtectedEnv(%q) = %v, want %v", c.env, got, c.want)
		}
	}
}
