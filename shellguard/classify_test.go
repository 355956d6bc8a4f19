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
		"git branch -a", "git tag --list", "sed -n 1,20p f", "sed 's/a/b/g' f",
		"awk '{print $1}' f", "sort -u f | uniq -c", "pwd", "date", "echo hi 2>&1",
		"du -sh .", "df -h", "stat f", "which go", "file x", "cut -d: -f1 f",
		"tr a-z A-Z </dev/null", "git diff --stat", "git show HEAD",
	}
	for _, cmd := range readOnly {
		t.Run(cmd, func(t *testing.T) {
			level, decided := StaticClassify(cmd)
			if !decided || level != "read-only" {
				t.Fatalf("StaticClassify = %q, %v; want read-only", level, decided)
			}
		})
	}
	undecided := []string{
		"rm -rf x", "git push", "git branch new", "git branch -D x", "git tag v1",
		"echo hi > f", "sed -i s/a/b/ f", "sed 's/a/b/w out' f", "sed 1e f",
		"awk '{system(\"rm x\")}' f", "awk '{print > \"f\"}' x", "sort -o out f", "sort -uo out f",
		"uniq in out", "date -s now", "find . -delete", "find . -exec rm {} +",
		"cat $(ls)", "ls $DIR", "X=1 ls", "ls &", "npm test", "python x.py",
		"git -C other status", "git diff --output=x", "rg --pre sh x", "hostname evil",
		"echo `rm x`", "cat <(ls)", "ls; make", "/bin/ls", "", "ls 'unterminated",
		"tee f", "cp a b", "mv a b", "touch f", "mkdir d",
	}
	for _, cmd := range undecided {
		t.Run("undecided/"+cmd, func(t *testing.T) {
			if level, decided := StaticClassify(cmd); decided {
				t.Fatalf("StaticClassify = %q, decided; want undecided", level)
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
	env := SanitizedEnv(parent, []string{"NPM_TOKEN", "SSH_AUTH_SOCK", "MISSING_KEY"}, "/work")
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

	bare := SanitizedEnv(nil, nil, "/w")
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
