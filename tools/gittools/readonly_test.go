package gittools

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/messages"
)

func TestRegistryShape(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var visible, hidden []string
	for _, n := range w.reg.Names() {
		tl, _ := w.reg.Lookup(n)
		if tl.Hidden {
			hidden = append(hidden, n)
			continue
		}
		visible = append(visible, n)
		wantLevel := messages.LevelReadOnly
		if tl.Twin != "" {
			wantLevel = messages.LevelHighRisk
		}
		if tl.Level != wantLevel {
			t.Errorf("%s: level %s, want %s", n, tl.Level, wantLevel)
		}
	}
	if len(visible) != 15 || len(hidden) != 8 {
		t.Fatalf("want 15 visible and 8 hidden tools, got %v and %v", visible, hidden)
	}
	for _, n := range hidden {
		if !strings.HasPrefix(n, "execute_git_") {
			t.Errorf("twin %s", n)
		}
	}
	// Strict: unknown keys fail.
	if err := w.reg.Validate("git_status", []byte(`{"bogus":1}`)); err == nil {
		t.Error("git_status accepted an unknown key")
	}
	// expectedState exists only for the twins.
	if err := w.reg.Validate("git_commit", []byte(`{"message":"m","expectedState":"x"}`)); err == nil {
		t.Error("git_commit accepted expectedState")
	}
}

func TestReadOnlyTools(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.repo("r")
	w.env.WorkDir = dir
	writeFile(t, filepath.Join(dir, "README"), "hello\nworld\n")
	writeFile(t, filepath.Join(dir, "new.txt"), "n\n")
	w.git(dir, "tag", "v1")
	w.git(dir, "branch", "feature")

	st := asMap(t, w.call("git_status", map[string]any{}).Value)
	if st["workingDirectory"] != dir || st["branch"] != "main" || st["hasChanges"] != true {
		t.Fatalf("git_status: %v", st)
	}
	if s := st["summary"].([]any); len(s) != 2 || s[0] != " M README" || s[1] != "?? new.txt" {
		t.Errorf("summary %v", s)
	}

	lg := asMap(t, w.call("git_log", map[string]any{"limit": 5, "oneline": true}).Value)
	commits := lg["commits"].([]any)
	if lg["commitCount"].(float64) != 1 || len(commits) != 1 {
		t.Fatalf("git_log: %v", lg)
	}
	c := commits[0].(map[string]any)
	if c["subject"] != "first" || c["author"] != "Tester" || len(c["hash"].(string)) != 40 || !strings.HasSuffix(c["oneline"].(string), " first") {
		t.Errorf("commit %v", c)
	}

	df := asMap(t, w.call("git_diff", map[string]any{}).Value)
	if !strings.Contains(df["diff"].(string), "+world") || df["hasChanges"] != true || df["truncated"] != false {
		t.Errorf("git_diff: %v", df)
	}
	cut := asMap(t, w.call("git_diff", map[string]any{"maxLines": 2}).Value)
	if cut["returnedLines"].(float64) != 2 || cut["truncated"] != true || cut["totalLines"].(float64) <= 2 {
		t.Errorf("maxLines: %v", cut)
	}
	names := asMap(t, w.call("git_diff", map[string]any{"nameOnly": true}).Value)
	if names["count"].(float64) != 1 || names["paths"].([]any)[0] != "README" {
		t.Errorf("nameOnly: %v", names)
	}
	none := asMap(t, w.call("git_diff", map[string]any{"staged": true}).Value)
	if none["diff"] != "No differences" || none["hasChanges"] != false {
		t.Errorf("staged: %v", none)
	}
	if r := w.call("git_diff", map[string]any{"branch": "--output=" + filepath.Join(dir, "pwned")}); r.Success || !strings.Contains(r.Error, "must not start with '-'") {
		t.Errorf("option injection: %+v", r)
	}

	br := asMap(t, w.call("git_branch", map[string]any{}).Value)
	if br["currentBranch"] != "main" || len(br["branches"].([]any)) != 2 {
		t.Errorf("git_branch: %v", br)
	}

	bl := asMap(t, w.call("git_blame", map[string]any{"file": "README", "showEmail": true}).Value)
	lines := bl["lines"].([]any)
	if bl["lineCount"].(float64) != 2 || len(lines) != 2 {
		t.Fatalf("git_blame: %v", bl)
	}
	l0 := lines[0].(map[string]any)
	if l0["content"] != "hello" || l0["author"] != "Tester <tester@example.com>" || l0["lineNumber"].(float64) != 1 {
		t.Errorf("blame line %v", l0)
	}
	if r := w.call("git_blame", map[string]any{"file": "README", "startLine": 3, "endLine": 1}); r.Error != "Invalid line range: start line (3) must be <= end line (1)" {
		t.Errorf("range: %q", r.Error)
	}

	rl := asMap(t, w.call("git_reflog", map[string]any{"limit": 5}).Value)
	e := rl["entries"].([]any)[0].(map[string]any)
	if e["ref"] != "HEAD@{0}" || e["action"] != "commit (initial)" || e["summary"] != "first" {
		t.Errorf("git_reflog: %v", rl)
	}

	tl := asMap(t, w.call("git_tag_list", map[string]any{}).Value)
	if tl["tagCount"].(float64) != 1 || tl["tags"].([]any)[0] != "v1" {
		t.Errorf("git_tag_list: %v", tl)
	}

	// A file path runs in its directory; a missing path and a directory
	// outside any repository fail plainly.
	if st := asMap(t, w.call("git_status", map[string]any{"path": filepath.Join(dir, "README")}).Value); st["workingDirectory"] != dir {
		t.Errorf("file path: %v", st)
	}
	if r := w.call("git_status", map[string]any{"path": "nope"}); r.Error != "Path not found: nope" {
		t.Errorf("missing path: %q", r.Error)
	}
	if r := w.call("git_status", map[string]any{"path": t.TempDir()}); r.Success || !strings.Contains(r.Error, "not a git repository") {
		t.Errorf("no repository: %+v", r)
	}
}

func TestReadOnlyToolsWriteNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.repo("r")
	w.env.WorkDir = dir
	writeFile(t, filepath.Join(dir, "README"), "changed\n")
	before := w.git(dir, "ls-files", "--debug")
	idx := statOf(t, filepath.Join(dir, ".git", "index"))
	for _, name := range []string{"git_status", "git_diff", "git_log", "git_branch", "git_reflog", "git_tag_list"} {
		ok(t, w.call(name, map[string]any{}))
	}
	if got := statOf(t, filepath.Join(dir, ".git", "index")); got != idx {
		t.Errorf("the index was rewritten by a read-only tool")
	}
	if after := w.git(dir, "ls-files", "--debug"); after != before {
		t.Errorf("index entries changed")
	}
}

func TestSecretsInURLsAreRedacted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.repo("r")
	w.env.WorkDir = dir
	w.git(dir, "remote", "add", "origin", "https://alice:s3cr3t-token@git.example.invalid/x.git")
	r := w.propose("git_push", map[string]any{})
	all := r.Approval.Message + r.Approval.PreviewDiff
	if strings.Contains(all, "s3cr3t") || strings.Contains(all, "alice") || !strings.Contains(all, "https://<redacted>@git.example.invalid/x.git") {
		t.Errorf("push preview leaks or lacks the URL:\n%s", all)
	}
	if got := redactURLs("fetch from ssh://bob:pw@h/x and https://tok@h/y"); got != "fetch from ssh://<redacted>@h/x and https://<redacted>@h/y" {
		t.Errorf("redactURLs: %q", got)
	}
}

func TestRepositoryHoldingSecretsIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// A dotfiles repository at HOME would hold JAZZ_HOME.
	w.git(w.home, "init", "-q")
	writeFile(t, filepath.Join(w.home, ".jazz", "config.json"), `{"llm":{"openai":{"api_key":"sk-x"}}}`)
	r := w.call("git_status", map[string]any{"path": w.home})
	if r.Success || !strings.Contains(r.Error, "where jazz keeps secrets") {
		t.Fatalf("want a refusal, got %+v", r)
	}
	r = w.call("git_status", map[string]any{"path": filepath.Join(w.home, ".jazz")})
	if r.Success || !strings.Contains(r.Error, "Refused") {
		t.Fatalf("inside JAZZ_HOME: %+v", r)
	}
}
