package shellguard

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestHumanOnlyReadsCommandLinesInWords: a word a program hands to a
// shell (flock -c, script -c, watch, git rebase --exec, an attached or
// long option's value) is a command of its own, run from where the
// program runs: its quotes, cds, redirections and git calls are read as
// the shell reads them, so quoting inside it (`.gi""t`) hides no
// protected path and a `cd` inside it is followed. Judged when proposed
// and at run time on the expanded argv. Ordinary command lines in words,
// and messages that are not one, are not a person's.
func TestHumanOnlyReadsCommandLinesInWords(t *testing.T) {
	ws, home := escalationWorkspace(t)
	for _, cmd := range []string{
		`flock f -c 'cp /tmp/x .gi""t/hooks/pre-commit'`,
		`flock f -c 'cd .gi""t/hooks; cp /tmp/x pre-commit'`,
		`flock f -c 'echo x > .gi""t/config'`,
		`flock f -c 'cd ..; cp /tmp/x .bas""hrc'`,
		`flock f -c 'cd; tar -xf /tmp/a.tar'`,
		`flock f -c 'cd $HOME && unzip /tmp/a.zip'`,
		`script -qc 'cd && make' /dev/null`,
		`script -qc'cd && make' /dev/null`,
		`watch -n1 'cd; make'`,
		`git rebase --exec='cp /tmp/x AGEN""TS.md' HEAD~1`,
		`flock f -c 'g""it config core.pager x'`,
		`flock f -c 'git in""it --bare d'`,
		`flock f -c "flock g -c 'cp /tmp/x .gi\"\"t/config'"`,
		`timeout 5 flock f -c 'ln -s /tmp/x .j""azz'`,
	} {
		if why := HumanOnly(cmd, ws, home); why == "" {
			t.Errorf("HumanOnly(%q) = \"\", want a reason", cmd)
		}
	}
	for _, argv := range [][]string{
		{"flock", "f", "-c", `cp /tmp/x .gi""t/hooks/pre-commit`},
		{"script", "-qc", "cd; tar -xf /tmp/a.tar", "/dev/null"},
	} {
		if why := ProtectedArgv(argv, ws, []string{home}); why == "" {
			t.Errorf("ProtectedArgv(%q) = \"\", want a reason", argv)
		}
	}
	for _, cmd := range []string{
		`flock f -c 'make test'`,
		`watch -n1 'ls -la; git status'`,
		`git rebase --exec='go test ./...' HEAD~2`,
		`git commit -m 'fix the parser (again)'`,
		`git commit -m 'then: it works'`,
		`flock f -c 'cd sub && cp a.txt b.txt'`,
	} {
		if why := HumanOnly(cmd, ws, home); why != "" {
			t.Errorf("HumanOnly(%q) = %q, want \"\"", cmd, why)
		}
	}
}

// TestHumanOnlyBoundsNestedCommandLines: each nested command line is
// judged from every directory its program may run in, so the judgements
// multiply at each level (ten directories four levels deep took 20 s);
// past a bound the command is a person's instead of slow to judge.
func TestHumanOnlyBoundsNestedCommandLines(t *testing.T) {
	ws, home := escalationWorkspace(t)
	var dirs []string
	for i := range 10 {
		d := filepath.Join(ws, "d"+strconv.Itoa(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	flock := "flock " + strings.Join(dirs, " ") + " -c "
	cmd := flock + `'` + flock + `"` + flock + `\"` + flock + `\\\"touch a\\\"\""'`
	if why := HumanOnly(cmd, ws, home); !strings.Contains(why, "judgements of them cover") {
		t.Errorf("HumanOnly of command lines nested four deep, each from ten directories: %q", why)
	}
	if why := HumanOnly(flock+`'touch a'`, ws, home); why != "" {
		t.Errorf("one command line from ten directories: %q", why)
	}
}
