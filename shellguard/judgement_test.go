package shellguard

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestJudgementCheckExec(t *testing.T) {
	cases := []struct {
		name string
		j    Judgement
		argv []string
		ok   bool
	}{
		{"zero judgement refuses", Judgement{}, []string{"ls"}, false},
		{"unknown step refuses", Judgement{Command: "ls", By: "magic"}, []string{"ls"}, false},
		{"human passes anything", Judge("ls", ByHuman, nil, ""), []string{"rm", "x"}, true},
		{"policy passes anything", Judge("ls", ByPolicy, nil, ""), []string{"rm", "x"}, true},
		{"static: the judged argv", Judge("ls -la && cat f", ByStatic, nil, "read-only"), []string{"cat", "f"}, true},
		{"static: another argv", Judge("ls -la", ByStatic, nil, "read-only"), []string{"ls", "-la", "x"}, false},
		{"static: expanded into a write", Judge("sort a", ByStatic, nil, "read-only"), []string{"sort", "-o", "f"}, false},
		{"allowlist: the judged argv", Judge("git status", ByAllowlist, []string{"git status", "ls"}, ""), []string{"git", "status"}, true},
		{"allowlist: dynamic args under the binary", Judge("ls $d", ByAllowlist, []string{"ls"}, ""), []string{"ls", "-la", "/tmp"}, true},
		{"allowlist: expanded to another program", Judge("ls $d", ByAllowlist, []string{"ls"}, ""), []string{"rm", "x"}, false},
		{"classifier: named program", Judge("wc -l $f", ByClassifier, nil, "read-only"), []string{"wc", "-l", "a"}, true},
		{"classifier: unnamed program", Judge("wc -l $f", ByClassifier, nil, "read-only"), []string{"rm", "a"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.j.CheckExec(tc.argv)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckExec(%q) = %v, want ok=%v", tc.argv, err, tc.ok)
			}
			if err != nil && (!errors.Is(err, ErrNotJudged) || !strings.HasPrefix(err.Error(), "not auto-approved: ")) {
				t.Fatalf("refusal %q is not a not-auto-approved error", err)
			}
		})
	}
}

func TestJudgementJSON(t *testing.T) {
	j := Judge("git status && ls -la", ByAllowlist, []string{"ls", "git status", "cat"}, "")
	if !slices.Equal(j.Entries, []string{"ls", "git status"}) {
		t.Fatalf("entries = %q, want the two that cover the command", j.Entries)
	}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var back Judgement
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Command != j.Command || back.By != j.By || !slices.Equal(back.Entries, j.Entries) {
		t.Fatalf("round trip: %+v, want %+v", back, j)
	}
	if err := back.CheckExec([]string{"git", "status"}); err != nil {
		t.Fatal(err)
	}
}

func TestHardenEnv(t *testing.T) {
	env := HardenEnv([]string{"PATH=/bin", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=a.b", "GIT_CONFIG_VALUE_0=c"})
	want := []string{"PATH=/bin", "GIT_CONFIG_KEY_0=a.b", "GIT_CONFIG_VALUE_0=c",
		"GIT_CONFIG_KEY_1=safe.bareRepository", "GIT_CONFIG_VALUE_1=explicit", "GIT_CONFIG_COUNT=2"}
	if !slices.Equal(env, want) {
		t.Fatalf("HardenEnv = %q", env)
	}
	if env := HardenEnv([]string{"PATH=/usr/bin::.:node_modules/.bin:/bin"}); env[0] != "PATH=/usr/bin:/bin" {
		t.Fatalf("relative PATH entries kept: %q", env)
	}
	if env := HardenEnv([]string{"GIT_CONFIG_COUNT=bogus"}); !slices.Equal(env, []string{"GIT_CONFIG_KEY_0=safe.bareRepository", "GIT_CONFIG_VALUE_0=explicit", "GIT_CONFIG_COUNT=1"}) {
		t.Fatalf("HardenEnv = %q", env)
	}
}
