package shellguard

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestCommandKey(t *testing.T) {
	cases := []struct{ cmd, key string }{
		{"git diff --stat", "git diff"},
		{"ls -la", "ls"},
		{"rm -rf /tmp/foo", "rm"},
		{"NODE_ENV=test npm test", "npm test"},
		{"NODE_ENV=test sudo npm test", "sudo"},
		{"npx jest --watch", "npx jest"},
		{"grep -rn pat", "grep"},
		{"env FOO=1 nice make build", "env"},
		{"FOO=1 BAR=2", "FOO=1 BAR=2"},
		{`git commit -m "a b"`, "git commit"},
		{`git -c "a b" log`, "git"},
		{"git -C status tag x", "git"},
		{"git --no-pager -P log -3", "git log"},
		{"npm --prefix x test", "npm"},
		{"himalaya envelope list", "himalaya envelope"},
		{"", ""},
	}
	for _, tc := range cases {
		t.Run(tc.cmd, func(t *testing.T) {
			if got := CommandKey(SplitWords(tc.cmd)); got != tc.key {
				t.Fatalf("CommandKey = %q, want %q", got, tc.key)
			}
		})
	}
}

func TestMatchKey(t *testing.T) {
	cases := []struct {
		key, entry string
		want       bool
	}{
		{"git status", "git status", true},
		{"git statusfoo", "git status", false},
		{"himalaya envelope", "himalaya", true},
		{"git", "git status", false},
		{"gitx status", "git", false},
		{"git status", "", false},
		{"git status", " git status ", true},
	}
	for _, tc := range cases {
		t.Run(tc.key+"|"+tc.entry, func(t *testing.T) {
			if got := MatchKey(tc.key, tc.entry); got != tc.want {
				t.Fatalf("MatchKey = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAllowlistApproves(t *testing.T) {
	git := []string{"git status", "git diff", "git log", "ls", "grep", "echo", "find", "npm test", "cat", "wc"}
	cases := []struct {
		cmd  string
		want bool
	}{
		{"git status", true},
		{"git status --short", true},
		{"git statusfoo", false},
		// A key joins words with spaces: a word holding one must not
		// read as two (the program x in a directory named "ls ").
		{`"ls /x"`, false},
		{`ls\ `, false},
		{`"git status /x"`, false},
		{`'git status' x`, false},
		{`git "status x"`, false},
		{"git $'status\\tx'", false},
		{`npm "test x"`, false},
		{"git status && git diff", true},
		{"git status && rm -rf /", false},
		{"git status; git push", false},
		{"git status || git diff | grep x", true},
		{"(git status) && { git diff; }", true},
		{"if git diff --quiet; then echo clean; else echo dirty; fi", true},
		{"for f in a b; do cat $f; done", true},
		{"while git status; do ls; done", true},
		{"git log | wc -l 2>&1 >/dev/null", true},
		{"git status >&2 </dev/null", true},
		{"git status > out.txt", false},
		{"git status >> out.txt", false},
		{"git status &> log", false},
		{"git status >&out", false},
		{"git diff $(rm -rf x)", false},
		{"git diff `rm x`", false},
		{"cat <(rm x)", false},
		{"x=git; $x status", false},
		{"$CMD status", false},
		{"git $SUB", false},
		{"ls $DIR", true},
		{"git status &", false},
		{"coproc git status", false},
		{"git() { rm -rf x; }; git status", false},
		{"eval git status", false},
		{"sh -c 'git status'", false},
		{"bash -c 'git status'", false},
		{"ls | xargs rm", false},
		{"find . -exec rm {} +", false},
		{"find . -name '*.go' -delete", false},
		{"find . -name '*.go'", true},
		{"env rm -rf x", false},
		{"env git status", false},
		{"command rm x", false},
		{"sudo git status", false},
		{"NODE_ENV=test npm test", false},
		{"LANG=C LC_ALL=C.UTF-8 TZ=UTC NO_COLOR=1 git status", true},
		{"HOME=./x git status", false},
		{"XDG_CONFIG_HOME=. git status", false},
		{"GIT_DIR=x git status", false},
		{"LANG=../../x ls", false},
		{"TZ=/etc/x ls", false},
		{"LANG=$x ls", false},
		{"LANG=~ ls", false},
		{"git -C status tag x", false},
		{"git -C . status", false},
		{"git -c core.fsmonitor=x status", false},
		{"git --git-dir=x status", false},
		{"git --exec-path=. status", false},
		{"git --config-env=core.pager=X status", false},
		{"git --work-tree=/ status", false},
		{"git -p status", false},
		{"git --no-pager status", true},
		{"npx ls", false},
		{"bunx ls", false},
		{"pnpx ls", false},
		{"nice ls", false},
		{"nohup ls", false},
		{"time ls", true},
		{"\\time ls", false},
		{"timeout 5 ls", false},
		{"stdbuf -o0 ls", false},
		{"exec ls", false},
		{"builtin echo x", false},
		{"/usr/bin/env ls", false},
		{"./ls", false},
		{"../bin/git status", false},
		{"/usr/bin/git status", false},
		{"ls {-o,f}", true},
		{"g{i,}t status", false},
		{"git st{a,}tus", false},
		{"git s* ", false},
		{"git ~ ", false},
		{"git \\status", true},
		{"git $'status'", true},
		{"npm --prefix evil test", false},
		{"GIT_PAGER='rm -rf ~' git log", false},
		{"LD_PRELOAD=x.so ls", false},
		{"\\rm x", false},
		{"'git' status", true},
		{"g*t status", false},
		{"echo ${x@P}", false},
		{"echo ${!x}", false},
		{"echo $((1+2))", false},
		{"[[ -f x ]] && ls", false},
		{"export X=1 && ls", false},
		{"X=1; ls", false},
		{"git status 'unterminated", false},
		{"", false},
		{"   ", false},
		{"cat <<EOF\nhello\nEOF", true},
		{"cat <<EOF\n$(rm x)\nEOF", false},
		{"for ((i=0;i<3;i++)); do ls; done", false},
		{"ls\nrm -rf x", false},
		{"ls\ngit status", true},
	}
	for _, tc := range cases {
		t.Run(tc.cmd, func(t *testing.T) {
			got, why := Explain(tc.cmd, git)
			if got != tc.want {
				t.Fatalf("approved = %v (%s), want %v", got, why, tc.want)
			}
			if AllowlistApproves(tc.cmd, git) != got {
				t.Fatal("AllowlistApproves disagrees with Explain")
			}
		})
	}
	t.Run("git status only", func(t *testing.T) {
		if AllowlistApproves("git status && rm -rf /", []string{"git status"}) {
			t.Fatal("approved")
		}
		if AllowlistApproves("git status && git diff", []string{"git status"}) {
			t.Fatal("approved with git diff not allowlisted")
		}
		if !AllowlistApproves("git status && git diff", []string{"git status", "git diff"}) {
			t.Fatal("not approved under both")
		}
	})
}

func TestKeys(t *testing.T) {
	cases := []struct {
		cmd  string
		keys []string
	}{
		{"git status && git diff --stat | grep -v x", []string{"git status", "git diff", "grep"}},
		{"npx jest; nice ls; git -C x status", []string{"npx jest"}},
		{"ls; ls -la", []string{"ls"}},
		{"(cd src && make test)", []string{"cd src", "make test"}},
		{"x=rm; $x -rf /", nil},
	}
	for _, tc := range cases {
		t.Run(tc.cmd, func(t *testing.T) {
			got, err := Keys(tc.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.keys) {
				t.Fatalf("Keys = %q, want %q", got, tc.keys)
			}
		})
	}
	if _, err := Keys("echo 'open"); !errors.Is(err, ErrParse) {
		t.Fatalf("unparsable: err = %v, want ErrParse", err)
	}
}

func BenchmarkAllowlistApproves(b *testing.B) {
	entries := []string{"git status", "git diff", "grep", "wc"}
	cmd := "git status --short && git diff --stat | grep -v vendor | wc -l"
	for b.Loop() {
		if !AllowlistApproves(cmd, entries) {
			b.Fatal("not approved")
		}
	}
}

// A command may not change what a later word or program means: loop
// variables, builtins that assign variables, ${x:=…}.
func TestInterpreterStateIsNotApproved(t *testing.T) {
	entries := []string{"ls", "git status", "read", "mapfile", "cd", "echo", "hash", "getopts"}
	for _, cmd := range []string{
		"for PATH in ./bin; do ls; done", "for HOME in evilhome; do git status; done", "for IFS in x; do ls; done",
		"for http_proxy in x; do ls; done", "read PATH <<< ./bin; ls", "mapfile -t PATH <<< ./bin; ls",
		"getopts a PATH; ls", "hash -p ./bin/ls ls; ls", "echo ${PATH:=./bin}; ls", "select x in a; do ls; done",
	} {
		if ok, _ := Explain(cmd, entries); ok {
			t.Errorf("allowlist approves %q", cmd)
		}
		if ReadOnlyProblem(cmd) == "" {
			t.Errorf("read-only check approves %q", cmd)
		}
	}
	for _, cmd := range []string{"for f in a b; do ls $f; done", "for i in 1 2; do echo $i; done", "cd src && ls"} {
		if ok, why := Explain(cmd, entries); !ok {
			t.Errorf("allowlist refuses %q: %s", cmd, why)
		}
	}
}

// TestAllowlistHoldsReadSetProgramsToTheirGrammar: an entry naming a
// program (or git subcommand) of the read-only set admits only its
// inspect-only forms, at the gate and, for words the shell expands, per
// expanded argv at run time; an entry naming any other program admits it
// whole, and the approval says so.
func TestAllowlistHoldsReadSetProgramsToTheirGrammar(t *testing.T) {
	entries := []string{"git diff", "git log", "git", "sort", "tree", "rg", "find", "sed", "uniq", "npm test", "make", "./bin/sort"}
	cases := []struct {
		cmd string
		ok  bool
	}{
		{"git diff --stat", true},
		{"git diff --output=f", false},
		{"git diff --out=f", false},
		{"git diff --ext-diff", false},
		{"git diff --textconv", false},
		{"git log -3 --oneline", true},
		{"git log --output=f", false},
		{"git -P log -O", false},
		{"git branch new", false},      // entry "git", but branch is an inspecting subcommand here
		{"git branch --list", true},    // its inspect-only form
		{"git push origin main", true}, // entry "git": a subcommand the set does not know is the user's choice
		{"sort -r f", true},
		{"sort -o f g", false},
		{"sort -ro f", false},
		{"sort --o=f g", false},
		{"/usr/bin/sort -o f g", false}, // no entry covers the path
		{"./bin/sort -o f g", false},    // the entry names the path; the program is still sort
		{"tree -L 2", true},
		{"tree -o out", false},
		{"rg -n x", true},
		{"rg --pre=touch x f", false},
		{"find . -name x", true},
		{"find . -delete", false},
		{"sed -n 1p f", true},
		{"sed -i s/a/b/ f", false},
		{"sed 'w out' f", false},
		{"uniq f", true},
		{"uniq f out", false},
		{"npm test -- --anything", true},
		{"make install", true},
		// Words the shell expands are judged at run time.
		{"for x in -o; do sort $x f; done", true},
	}
	for _, tc := range cases {
		t.Run(tc.cmd, func(t *testing.T) {
			ok, why := Explain(tc.cmd, entries)
			if ok != tc.ok {
				t.Fatalf("Explain = %v (%s), want %v", ok, why, tc.ok)
			}
			if !ok && !strings.Contains(why, "entry") && !strings.HasPrefix(why, "find -delete") {
				t.Fatalf("the refusal does not name the entry: %s", why)
			}
		})
	}
	// Run time: the expanded argv of an approved dynamic call.
	j := Judge("for x in -o; do sort $x f g; done", ByAllowlist, entries, "")
	if err := j.CheckExec([]string{"sort", "-o", "f", "g"}); err == nil || !strings.Contains(err.Error(), "-o") {
		t.Fatalf("CheckExec of the expanded sort -o = %v", err)
	}
	if err := j.CheckExec([]string{"sort", "-r", "f", "g"}); err != nil {
		t.Fatalf("CheckExec of sort -r: %v", err)
	}
	j = Judge("git diff $o", ByAllowlist, entries, "")
	if err := j.CheckExec([]string{"git", "diff", "--output=pwn"}); err == nil {
		t.Fatal("CheckExec let git diff --output=pwn through")
	}
	// The note says which entries admitted a program whole.
	if n := AllowlistNote("sort -r f && npm test && make"); !strings.Contains(n, "`npm test`, `make`") || !strings.Contains(n, "allowlisting a program that can write lets it write") || strings.Contains(n, "sort") {
		t.Fatalf("AllowlistNote = %q", n)
	}
	if n := AllowlistNote("git diff --stat | sort"); n != "" {
		t.Fatalf("AllowlistNote of checked programs = %q", n)
	}
}
