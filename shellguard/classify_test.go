package shellguard

import (
	"errors"
	"strings"
	"testing"
)

func TestStaticClassify(t *testing.T) {
	readOnly := []string{
		"ls -la", "git status", "git log --oneline -n 5 | head -3", "cat a b | wc -l",
		"grep -rn TODO src && echo done", "rg -n foo", "find . -name '*.go'",
		"git branch -a", "git tag --list", "git branch --format='%(refname:short) %(upstream:track)'",
		"git ls-files --format='%(objectmode) %(path)'", "git tag -l --format='%(contents:subject)'", "sed -n 1,20p f", "sed 's/a/b/g' f",
		"awk '{print $1}' f", "sort -u f | uniq -c", "pwd", "date", "echo hi 2>&1",
		"du -sh .", "df -h", "stat f", "which go", "file x", "cut -d: -f1 f",
		"tr a-z A-Z </dev/null", "git diff --stat", "git show HEAD",
		"LANG=C sort -k2 -n f", "TZ=Europe/Paris date +%H", "head -5 f", "tail -n +3 f",
		"git --no-pager log -3 --format=%h", "git log @{u}..HEAD", "git log HEAD~3", "grep -e -o f",
		"sort -- -o", "find . -maxdepth 2 -type f -newer x -print", "sed -n -e '/a/,/b/p' -e 10q f",
		"awk -F: '$3 > 100 {print $1}' /etc/group", "tree -L 2 -a", "date -d tomorrow +%F",
		`sed 's|a/b|c|g' f`, "git grep -n foo -- '*.go'", `ls 'a b' "c"`, "uniq -f 1 in",
	}
	for _, cmd := range readOnly {
		t.Run(cmd, func(t *testing.T) {
			level, decided := StaticClassify(cmd)
			if !decided || level != "read-only" {
				t.Fatalf("StaticClassify = %q, %v (%s); want read-only", level, decided, ReadOnlyProblem(cmd))
			}
		})
	}
	// Clearly mutating: high-risk before any model is asked.
	highRisk := []string{
		"rm x", "git push", "git commit -m x", "echo hi > f", "sed -i s/a/b/ f", "sort -o out f",
		"sort -uo out f", "find . -delete", "find . -exec rm {} +", "ls; touch x", "cp a b", "mv a b",
		"tee f", "mkdir d", "env X=1 rm f", "npm install", "cat a >> b", "git -c x=y commit",
		"sed -ni.bak p f", "sort --output=f", "rm -rf /",
	}
	for _, cmd := range highRisk {
		t.Run("high-risk/"+cmd, func(t *testing.T) {
			if level, decided := StaticClassify(cmd); !decided || level != "high-risk" {
				t.Fatalf("StaticClassify = %q, %v; want high-risk", level, decided)
			}
		})
	}
	undecided := []string{
		"git branch new", "git tag v1", "sed 's/a/b/w out' f", "sed 1e f",
		"awk '{system(\"rm x\")}' f", "awk '{print > \"f\"}' x",
		`awk 'BEGIN{print "}" > "/tmp/pwn"}'`, `awk 'BEGIN{print ";" > "/tmp/pwn"}'`, `awk 'BEGIN{printf "{" >> "/tmp/pwn"}'`,
		"awk 'BEGIN{print(\"a\",\n\"b\") > \"/tmp/pwn\"}'", `awk '{print /}/ > "f"}' x`,
		"uniq in out", "date -s now", "date 01010000", "cat $(ls)", "ls $DIR", "X=1 ls", "HOME=./x git status",
		"ls &", "python x.py", "git -C other status", "git diff --output=x", "git diff --o=x",
		"git log --outp x", "rg --pre sh x", "hostname evil", "echo `rm x`", "cat <(ls)", "ls; make",
		"/bin/ls", "", "ls 'unterminated", "sort {-o,f}", "sort -{o,}", "ls *", "cat ~/x", "cat ~",
		"sort $'-o' f", "git --git-dir=x log", "git --exec-path=. log", "git -p log", "git --config-env=a=b log",
		"npx ls", "nice ls", "command ls", "exec ls", "builtin echo", "xargs ls", "timeout 5 ls",
		"tail -f x", "less f", "more f", "tar tf x", "file -z x", "file -C -m x", "tree -o f", "tree -Ro f",
		"diff -l a b", "sort -T . f", "sort --compress-program=sh f", "git log --format=%G?",
		"git log --show-signature", "git grep -O foo", "git grep --open-files-in-pager foo", "git describe --dirty",
		"git reflog expire --all", "git branch -D x", "git branch --format='%(signature)'",
		"git tag -l --format='%(signature:key)'", "git ls-tree --format='%(nosuchatom)' HEAD", "git branch --format='%(refname'",
		"git cat-file --batch-check='%(signature)'", "git remote add x y", "rg -z foo", "rg --search-zip foo",
		"sed -f s f", "sed 1p -i f", "sed p f -i", "awk -f p f", "awk -W exec x", "awk 'BEGIN{\"date\" | getline}'",
		"awk '@load \"x\"'", "find . -fprint x", "find -D exec . -delete", "find . -newer", "seq 1 -o",
		"grep --pre x f", "ls --col=never", "git log --no-p", "echo {1..99999999}", "sort $x", "ls ${x}",
		"ls {PATH}>&1", "cat {fd}</dev/null",
	}
	for _, cmd := range undecided {
		t.Run("not-read-only/"+cmd, func(t *testing.T) {
			if level, decided := StaticClassify(cmd); decided && level == "read-only" {
				t.Fatalf("StaticClassify = %q, decided; want not read-only", level)
			}
			if ReadOnlyProblem(cmd) == "" {
				t.Fatal("ReadOnlyProblem gives no reason")
			}
		})
	}
}

func TestSanitizedEnv(t *testing.T) {
	parent := []string{
		"PATH=/opt/bin:/usr/bin", "HOME=/home/u", "USER=u",
		"OPENAI_API_KEY=sk-1", "GITHUB_TOKEN=gh", "DB_PASSWORD=pw", "my_secret=s",
		"SSH_AUTH_SOCK=/run/ssh", "SSH_AGENT_PID=1", "EDITOR=vi", "GOPATH=/go",
		"GIT_TERMINAL_PROMPT=1", "NPM_TOKEN=npm", "LANG=de_DE.UTF-8", "XAUTHORITY=/x",
	}
	env := SanitizedEnv(parent, []string{"NPM_TOKEN", "SSH_AUTH_SOCK", "MISSING_KEY"}, "/work", nil)
	want := map[string]string{
		"PATH": "/opt/bin:/usr/bin", "HOME": "/home/u", "USER": "u", "LOGNAME": "u",
		"SHELL": "/bin/sh", "LANG": "de_DE.UTF-8", "LC_ALL": "C", "LC_CTYPE": "UTF-8",
		"TERM": "xterm-256color", "PWD": "/work", "TMPDIR": "/tmp", "GIT_PAGER": "cat",
		"GIT_TERMINAL_PROMPT": "0", "EDITOR": "vi", "GOPATH": "/go", "NPM_TOKEN": "npm",
	}
	for k, v := range want {
		if got, ok := LookupEnv(env, k); !ok || got != v {
			t.Errorf("%s = %q (set %v), want %q", k, got, ok, v)
		}
	}
	for _, k := range []string{"OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "my_secret", "SSH_AUTH_SOCK", "SSH_AGENT_PID", "MISSING_KEY", "XAUTHORITY", "XDG_RUNTIME_DIR"} {
		if v, ok := LookupEnv(env, k); ok {
			t.Errorf("%s leaked: %q", k, v)
		}
	}
	seen := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if seen[k] {
			t.Errorf("%s appears twice", k)
		}
		seen[k] = true
	}

	bare := SanitizedEnv(nil, nil, "/w", nil)
	for k, v := range map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "USER": "jazz", "LOGNAME": "jazz", "PWD": "/w"} {
		if got, _ := LookupEnv(bare, k); got != v {
			t.Errorf("default %s = %q, want %q", k, got, v)
		}
	}
	if _, ok := LookupEnv(bare, "HOME"); ok {
		t.Error("HOME invented")
	}
}

func TestValidateEnvAllowlist(t *testing.T) {
	ok := [][]string{nil, {"NPM_TOKEN", "A", "A" + strings.Repeat("B", 63)}}
	for _, names := range ok {
		if err := ValidateEnvAllowlist(names); err != nil {
			t.Errorf("%q: %v", names, err)
		}
	}
	many := make([]string, 33)
	for i := range many {
		many[i] = "V" + strings.Repeat("X", i)
	}
	bad := [][]string{{"npm_token"}, {"1A"}, {"A-B"}, {""}, {"A" + strings.Repeat("B", 64)}, many}
	for _, names := range bad {
		err := ValidateEnvAllowlist(names)
		if !errors.Is(err, ErrEnvAllowlist) {
			t.Errorf("%.40q: err = %v, want ErrEnvAllowlist", names, err)
		}
	}
}

func BenchmarkStaticClassify(b *testing.B) {
	cmd := "git log --oneline -n 5 | head -3 && grep -rn TODO src | sort -u | wc -l"
	for b.Loop() {
		if level, _ := StaticClassify(cmd); level != "read-only" {
			b.Fatal("not read-only")
		}
	}
}

// TestProgramsThatReachOut holds the read-only set to forms that neither
// reach the network, run a child, write a transient file nor wait
// forever, under both the static pass and an allowlist entry naming the
// program (the entry admits only inspect-only forms). Each row was
// approved before its fix; the controls must stay approved.
func TestProgramsThatReachOut(t *testing.T) {
	entries := []string{"awk", "gawk", "tail", "git log", "git show", "git shortlog", "git branch", "git tag"}
	refused := []struct{ class, cmd string }{
		// gawk opens an operand named /inet/… as a socket, and the
		// program can add such operands through ARGV (or SYMTAB).
		{"gawk network operand", "awk 1 /inet/tcp/0/example.com/80"},
		{"gawk network operand", "gawk '{print}' f /inet6/udp/0/example.com/53"},
		{"awk rewrites its operands", `gawk 'BEGIN{ARGV[1]="/inet/tcp/0/example.com/80";ARGC=2}1'`},
		{"awk rewrites its operands", `awk '{ARGV[ARGC++]="/inet/tcp/0/" $0 ".example.com/80"}' f`},
		{"awk rewrites its operands", `gawk 'BEGIN{SYMTAB["AR" "GC"]=3}1' f`},
		// GNU tail's obsolete +NUMf form follows forever.
		{"tail obsolete follow", "tail +1f f"},
		{"tail obsolete follow", "tail +5 f"},
		// Pretty-format placeholders that make git start a child.
		{"git format runs a child", "git log '--format=%(describe)' -1"},
		{"git format runs a child", "git show '--pretty=tformat:%(describe:tags)'"},
		{"git format runs a child", "git shortlog '--group=format:%(describe)' HEAD"},
		{"git format runs a child", "git shortlog '--group=format:%GG' HEAD"},
		{"git format runs a child", "git log '--format=%(nosuch)'"},
		{"git format runs a child", "git branch '--format=%(describe)'"},
		{"git format runs a child", "git tag -l '--format=%(describe:tags)'"},
		{"git sort key runs gpg", "git branch --sort=signature"},
		{"git sort key runs gpg", "git tag -l --sort=-signature:key"},
		// remerge writes objects under .git/objects/tmp_objdir-*.
		{"git remerge writes objects", "git log --diff-merges=remerge -p"},
		{"git remerge writes objects", "git show --diff-merges=r HEAD"},
		{"git remerge writes objects", "git log --diff-merges="},
	}
	for _, tc := range refused {
		t.Run(tc.class+"/"+tc.cmd, func(t *testing.T) {
			if ReadOnlyProblem(tc.cmd) == "" {
				t.Error("the static read-only pass approves it")
			}
			if ok, _ := Explain(tc.cmd, entries); ok {
				t.Error("an allowlist entry naming the program approves it")
			}
			argv := SplitWords(tc.cmd)
			j := Judge("true", ByAllowlist, entries, "")
			if err := j.CheckExec(argv); err == nil {
				t.Errorf("the run-time check admits %q", argv)
			}
		})
	}
	for _, cmd := range []string{
		"awk '{print $1}' f", "awk -F: '$3 > 100 {print $1}' /etc/group", "tail -n +3 f", "tail -5 f",
		"git log '--format=%(trailers:key=Signed-off-by)' -1", "git log --diff-merges=first-parent -p",
		"git show --diff-merges=cc", "git shortlog -s --group=author HEAD", "git branch --sort=-committerdate",
		"git tag -l --sort=-v:refname", "git tag -l --sort=version:refname", "git branch --format='%(refname:short)'",
	} {
		t.Run("control/"+cmd, func(t *testing.T) {
			if why := ReadOnlyProblem(cmd); why != "" {
				t.Errorf("not read-only: %s", why)
			}
			if ok, why := Explain(cmd, entries); !ok {
				t.Errorf("not approved by the allowlist: %s", why)
			}
		})
	}
}
