package shellguard

import (
	"errors"
	"slices"
	"testing"
)

func TestCommandKey(t *testing.T) {
	cases := []struct{ cmd, key string }{
		{"git diff --stat", "git diff"},
		{"ls -la", "ls"},
		{"rm -rf /tmp/foo", "rm /tmp/foo"},
		{"NODE_ENV=test sudo npm test", "npm test"},
		{"npx jest --watch", "jest"},
		{"grep -rn pat", "grep pat"},
		{"env FOO=1 nice make build", "make build"},
		{"FOO=1 BAR=2", "FOO=1 BAR=2"},
		{`git commit -m "a b"`, "git commit"},
		{`git -c "a b" log`, "git a b"},
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
		{"NODE_ENV=test npm test", true},
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
		{"git status && git diff --stat | grep -v x", []string{"git status", "git diff", "grep x"}},
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
