package shellguard

import (
	"testing"
)

// TestHumanOnlyGitInitOutsideDotGit: git init and clone make a HEAD, and
// a directory holding one is git's own (package escalation): writing a
// HEAD there, or anything beside one, is a person's. Into a new .git
// nothing can be laid first (writing there is a person's too); but with
// --bare, --mirror, --git-dir or GIT_DIR git makes its HEAD in a
// directory the command chooses and keeps what that directory already
// holds (a config naming a pager or fsmonitor, hooks), or what another
// program writes there while git works. And a template or configuration
// the command chooses plants hooks in the new .git, however it is given:
// an abbreviated option (git takes --templ for --template), an attached
// short option (-ccore.hooksPath=…), or the environment (GIT_TEMPLATE_DIR,
// GIT_CONFIG_*, a HOME or XDG_CONFIG_HOME of its own). An alias the
// command defines (-c alias.bi='init --bare', or in GIT_CONFIG_*) is any
// of these under another name.
func TestHumanOnlyGitInitOutsideDotGit(t *testing.T) {
	ws, home := escalationWorkspace(t)
	for _, cmd := range []string{
		"git init --bare d",
		"git init --bare",
		"mkdir d; cd d; git init --bare .",
		"mkdir -p d/hooks && cp src.txt d/config && git init --bare d",
		"git init --ba d",
		"git init -q --bar d",
		"git --bare init d",
		"git --git-dir=d init",
		"git --git-dir d init",
		"git clone --bare src.git d",
		"git clone --mirror src.git d",
		"git clone --mir src.git d",
		"git init --templ=tpl new",
		"git init --sep=d new",
		"git clone --conf=core.hooksPath=h src.git new",
		"git clone -ccore.hooksPath=h src.git new",
		"git clone -qc core.hooksPath=h src.git new",
		"GIT_DIR=d git init",
		"env GIT_DIR=d git init",
		"export GIT_DIR=d; git init",
		"GIT_TEMPLATE_DIR=tpl git init new",
		"export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=init.templateDir GIT_CONFIG_VALUE_0=tpl; git init new",
		"GIT_CONFIG_GLOBAL=g git clone src.git new",
		"XDG_CONFIG_HOME=x git init new",
		"HOME=h git init new",
		"env HOME=h git clone src.git new",
		"git -c alias.bi='init --bare' bi d",
		"git -c ALIAS.bi='init --bare' bi d",
		"git -calias.bi='init --bare' bi d",
		"export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.bi GIT_CONFIG_VALUE_0='init --bare'; git bi d",
		"export GIT_DIR=x GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.bi GIT_CONFIG_VALUE_0='init --bare'; git bi d",
	} {
		if why := HumanOnly(cmd, ws, home); why == "" {
			t.Errorf("HumanOnly(%q) = \"\", want a reason", cmd)
		} else {
			t.Logf("%s: %s", cmd, why)
		}
	}
	for _, cmd := range []string{
		"git init",
		"git init new",
		"git init -q -b main new",
		"git clone src.git new",
		"git clone --depth 1 --branch main src.git new",
		"git clone -q src.git new",
		"git status",
	} {
		if why := HumanOnly(cmd, ws, home); why != "" {
			t.Errorf("HumanOnly(%q) = %q, want \"\"", cmd, why)
		}
	}
}

// TestProtectedGitEnv: at run time the environment a git init or clone
// gets is what the command made it (an export, an inline assignment, env
// X=…): where git puts its HEAD, or takes its template and configuration
// from, must be what the command started with.
func TestProtectedGitEnv(t *testing.T) {
	start := []string{"PATH=/usr/bin", "HOME=/home/u", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.bareRepository", "GIT_CONFIG_VALUE_0=explicit"}
	with := func(kv ...string) []string { return append(append([]string{}, start...), kv...) }
	for _, c := range []struct {
		argv []string
		env  []string
		want bool
	}{
		{[]string{"git", "init"}, with("GIT_DIR=d"), true},
		{[]string{"git", "init", "new"}, with("GIT_TEMPLATE_DIR=tpl"), true},
		{[]string{"/usr/bin/git", "clone", "s", "n"}, with("GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_1=init.templateDir", "GIT_CONFIG_VALUE_1=tpl"), true},
		{[]string{"git", "init"}, with("GIT_CONFIG_PARAMETERS='init.templatedir'='tpl'"), true},
		{[]string{"git", "init"}, with("HOME=/tmp/h"), true},
		{[]string{"git", "init"}, with("XDG_CONFIG_HOME=/tmp/x"), true},
		{[]string{"git", "init"}, start, false},
		{[]string{"git", "init"}, with("FOO=1"), false},
		{[]string{"git", "status"}, with("GIT_DIR=d"), false}, // no HEAD made: the repository check's
		{[]string{"git", "bi", "d"}, with("GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_1=alias.bi", "GIT_CONFIG_VALUE_1=init --bare"), true},
		{[]string{"git", "bi", "d"}, with("GIT_CONFIG_PARAMETERS='Alias.bi'='init --bare'"), true},
	} {
		if got := ProtectedGitEnv(c.argv, c.env, start) != ""; got != c.want {
			t.Errorf("ProtectedGitEnv(%q, %q) = %v, want %v", c.argv, c.env, got, c.want)
		}
	}
	// env's own assignments are argv, for ProtectedArgv.
	for _, argv := range [][]string{{"env", "GIT_DIR=d", "git", "init"}, {"env", "GIT_TEMPLATE_DIR=t", "git", "clone", "s", "n"}, {"git", "init", "--bare", "d"}} {
		if why := ProtectedArgv(argv, t.TempDir(), nil); why == "" {
			t.Errorf("ProtectedArgv(%q) = \"\", want a reason", argv)
		}
	}
}

// TestHumanOnlyGitUnderOtherNames: git's dashed programs (git-init,
// git-config in its exec path) are git under another name, and a word
// that holds a whole command line (env -S, script -c, watch) runs git as
// well; each is judged as git is.
func TestHumanOnlyGitUnderOtherNames(t *testing.T) {
	ws, home := escalationWorkspace(t)
	for _, cmd := range []string{
		"/usr/lib/git-core/git-init --bare d",
		"git-init --templ=tpl new",
		"/usr/lib/git-core/git-config core.pager evil",
		"/usr/lib/git-core/git-clone --mirror src.git d",
		"GIT_DIR=d /usr/lib/git-core/git-init",
		"env -S 'git init --bare d'",
		"env -S 'GIT_DIR=d git init'",
		`env -S "git -c 'alias.x=init --bare' x d"`,
		"env -S 'git config core.pager evil'",
		"script -qc 'git config core.fsmonitor evil' /dev/null",
		"watch -n1 'git init --bare d'",
	} {
		if why := HumanOnly(cmd, ws, home); why == "" {
			t.Errorf("HumanOnly(%q) = \"\", want a reason", cmd)
		}
	}
	for _, argv := range [][]string{
		{"/usr/lib/git-core/git-init", "--bare", "d"},
		{"env", "-S", "git config core.pager evil"},
	} {
		if why := ProtectedArgv(argv, ws, []string{home}); why == "" {
			t.Errorf("ProtectedArgv(%q) = \"\", want a reason", argv)
		}
	}
	if why := ProtectedGitEnv([]string{"/usr/lib/git-core/git-init"}, []string{"GIT_DIR=d"}, nil); why == "" {
		t.Error("ProtectedGitEnv(git-init, GIT_DIR=d) = \"\", want a reason")
	}
	if why := HumanOnly("env -S 'git status'", ws, home); why != "" {
		t.Errorf("env -S 'git status': %q", why)
	}
}
