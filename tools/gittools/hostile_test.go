package gittools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
)

// canary is a program that records every run in its marker file and
// passes its input through (so it works as a pager, a filter, a hook).
func canary(t *testing.T, dir string) (prog, marker string) {
	t.Helper()
	marker = filepath.Join(dir, "canary-ran")
	prog = filepath.Join(dir, "canary.sh")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho \"$0 $*\" >> '"+marker+"'\nexec cat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return prog, marker
}

func ran(marker string) bool {
	_, err := os.Stat(marker)
	return err == nil
}

// everyCall is one call of each of the 15 tools, arguments valid.
func everyCall() map[string]map[string]any {
	return map[string]map[string]any{
		"git_status":   {},
		"git_log":      {},
		"git_diff":     {},
		"git_branch":   {},
		"git_blame":    {"file": "README"},
		"git_reflog":   {},
		"git_tag_list": {},
		"git_add":      {"files": []string{"README"}},
		"git_commit":   {"message": "m", "all": true},
		"git_push":     {},
		"git_pull":     {"branch": "main"},
		"git_checkout": {"branch": "side"},
		"git_merge":    {"branch": "side"},
		"git_rm":       {"files": []string{"README"}, "cached": true},
		"git_tag":      {"create": "v9"},
	}
}

// hostile makes a repository whose own configuration or hooks run prog.
func (w *world) hostile(name, prog string, setup func(dir string)) string {
	w.t.Helper()
	dir := w.repo(name)
	w.git(dir, "branch", "side")
	w.git(dir, "remote", "add", "origin", filepath.Join(w.home, "nowhere.git"))
	writeFile(w.t, filepath.Join(dir, "README"), "hello\nchanged\n")
	setup(dir)
	return dir
}

func hook(t *testing.T, dir, name, prog string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexec '"+prog+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestHostileRepositoryRunsNothing: one repository whose .git/config sets
// a file-system monitor, a pager, an external diff, a clean/smudge
// filter, a textconv driver and a merge driver, and whose hooks directory
// holds hooks, all pointing at a canary. No git tool runs anything of it
// unless the policy is high-risk.
func TestHostileRepositoryRunsNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	prog, marker := canary(t, t.TempDir())
	dir := w.hostile("evil", prog, func(dir string) {
		for _, kv := range [][2]string{
			{"core.fsmonitor", prog}, {"core.pager", prog}, {"pager.log", prog}, {"diff.external", prog},
			{"filter.evil.clean", prog}, {"filter.evil.smudge", prog}, {"filter.evil.process", prog},
			{"diff.evil.textconv", prog}, {"diff.evil.command", prog}, {"merge.evil.driver", prog},
		} {
			w.git(dir, "config", kv[0], kv[1])
		}
		writeFile(t, filepath.Join(dir, ".gitattributes"), "* filter=evil diff=evil merge=evil\n")
		for _, h := range []string{"pre-commit", "post-checkout", "post-index-change", "reference-transaction", "pre-push", "post-merge", "fsmonitor-watchman"} {
			hook(t, dir, filepath.Join(".git", "hooks", h), prog)
		}
	})
	w.env.WorkDir = dir
	for _, policy := range []string{messages.PolicyNone, messages.PolicyReadOnly, messages.PolicyLowRisk} {
		setPolicy(w, policy)
		for name, args := range everyCall() {
			r := w.call(name, args)
			if r.Success || r.Approval != nil || !strings.Contains(r.Error, "Refused:") || !strings.Contains(r.Error, "core.fsmonitor") {
				t.Errorf("policy %q, %s: want a refusal naming core.fsmonitor, got success=%v approval=%v error=%q", policy, name, r.Success, r.Approval != nil, r.Error)
			}
		}
	}
	if ran(marker) {
		b, _ := os.ReadFile(marker)
		t.Fatalf("the canary ran under a policy below high-risk:\n%s", b)
	}

	// High-risk: the repository's own programs may run, and do.
	setPolicy(w, messages.PolicyHighRisk)
	ok(t, w.call("git_status", map[string]any{}))
	ok(t, w.call("git_log", map[string]any{}))
	c := w.propose("git_commit", map[string]any{"message": "under high-risk", "all": true})
	ok(t, w.approve(c))
	if !ran(marker) {
		t.Fatal("under high-risk the repository's hooks and filters should have run (the canary proves it can see them)")
	}
	b, _ := os.ReadFile(marker)
	if strings.Contains(string(b), "fsmonitor") {
		t.Errorf("the file-system monitor ran even so (it is always off): %s", b)
	}
}

// TestEachRiskyKeyRefuses checks the refusal key by key: each alone is
// enough, wherever the repository's configuration comes from.
func TestEachRiskyKeyRefuses(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	prog, marker := canary(t, t.TempDir())
	cases := []struct {
		name, key string
		setup     func(dir string)
	}{
		{"fsmonitor", "core.fsmonitor", func(d string) { w.git(d, "config", "core.fsmonitor", prog) }},
		{"pager", "core.pager", func(d string) { w.git(d, "config", "core.pager", prog) }},
		{"hooksPath", "core.hookspath", func(d string) { w.git(d, "config", "core.hooksPath", "/tmp") }},
		{"editor", "core.editor", func(d string) { w.git(d, "config", "core.editor", prog) }},
		{"sshCommand", "core.sshcommand", func(d string) { w.git(d, "config", "core.sshCommand", prog) }},
		{"askPass", "core.askpass", func(d string) { w.git(d, "config", "core.askPass", prog) }},
		{"worktree", "core.worktree", func(d string) { w.git(d, "config", "core.worktree", t.TempDir()) }},
		{"attributesFile", "core.attributesfile", func(d string) { w.git(d, "config", "core.attributesFile", "/etc/passwd") }},
		{"external diff", "diff.external", func(d string) { w.git(d, "config", "diff.external", prog) }},
		{"textconv", "diff.x.textconv", func(d string) { w.git(d, "config", "diff.x.textconv", prog) }},
		{"filter", "filter.x.clean", func(d string) { w.git(d, "config", "filter.x.clean", prog) }},
		{"merge driver", "merge.x.driver", func(d string) { w.git(d, "config", "merge.x.driver", prog) }},
		{"credential helper", "credential.helper", func(d string) { w.git(d, "config", "credential.helper", prog) }},
		{"credential per URL", "credential.https://x.helper", func(d string) { w.git(d, "config", "credential.https://x.helper", prog) }},
		{"gpg", "gpg.program", func(d string) { w.git(d, "config", "gpg.program", prog) }},
		{"signing", "commit.gpgsign", func(d string) { w.git(d, "config", "commit.gpgSign", "true") }},
		{"receive-pack", "remote.origin.receivepack", func(d string) { w.git(d, "config", "remote.origin.receivepack", prog) }},
		{"remote helper", "remote.origin.vcs", func(d string) { w.git(d, "config", "remote.origin.vcs", "evil") }},
		{"url rewrite", "url.ext::sh.insteadof", func(d string) { w.git(d, "config", "url.ext::sh.insteadOf", "https://") }},
		{"merge options", "branch.main.mergeoptions", func(d string) { w.git(d, "config", "branch.main.mergeOptions", "-s evil") }},
		{"submodule update command", "submodule.s.update", func(d string) { w.git(d, "config", "submodule.s.update", "!"+prog) }},
		{"an unknown key", "core.somethingnew", func(d string) { w.git(d, "config", "core.somethingNew", "1") }},
		{"include", "include.path", func(d string) {
			writeFile(t, filepath.Join(d, "shared.gitconfig"), "[core]\n\tfsmonitor = "+prog+"\n")
			w.git(d, "config", "include.path", "../shared.gitconfig")
		}},
		{"conditional include", "includeif.onbranch:other.path", func(d string) {
			w.git(d, "config", "includeIf.onbranch:other.path", "../shared.gitconfig")
		}},
		{"worktree config", "core.fsmonitor", func(d string) {
			w.git(d, "config", "extensions.worktreeConfig", "true")
			w.git(d, "config", "--worktree", "core.fsmonitor", prog)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := w.hostile(strings.ReplaceAll(tc.name, " ", "-"), prog, tc.setup)
			w.env.WorkDir = dir
			setPolicy(w, messages.PolicyLowRisk)
			for _, name := range []string{"git_status", "git_diff", "git_commit"} {
				args := everyCall()[name]
				r := w.call(name, args)
				if r.Success || r.Approval != nil || !strings.Contains(r.Error, tc.key) {
					t.Errorf("%s: want a refusal naming %s, got success=%v error=%q", name, tc.key, r.Success, r.Error)
				}
			}
		})
	}
	if ran(marker) {
		t.Fatal("the canary ran")
	}
}

// TestHooksOnlyRefuseChanges: hooks never run for a read-only tool
// (hooks are off for them), so only the pairs refuse.
func TestHooksOnlyRefuseChanges(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	prog, marker := canary(t, t.TempDir())
	dir := w.hostile("hooked", prog, func(dir string) {
		hook(t, dir, ".git/hooks/post-index-change", prog)
		hook(t, dir, ".git/hooks/pre-commit", prog)
		// A relative hooks path of the user's own points into each
		// repository: those hooks are the repository's.
		hook(t, dir, ".githooks/pre-commit", prog)
	})
	w.env.WorkDir = dir
	for name, args := range everyCall() {
		r := w.call(name, args)
		tl, _ := w.reg.Lookup(name)
		switch {
		case tl.Twin == "" && !r.Success:
			t.Errorf("%s: a read-only tool refused over hooks: %q", name, r.Error)
		case tl.Twin != "" && (r.Approval != nil || !strings.Contains(r.Error, "hook "+filepath.Join(dir, ".git", "hooks"))):
			t.Errorf("%s: want a refusal naming the hook, got %q", name, r.Error)
		}
	}
	writeFile(t, filepath.Join(w.home, ".gitconfig"), "[user]\n\tname = T\n\temail = t@x\n[core]\n\thooksPath = .githooks\n")
	if r := w.call("git_commit", map[string]any{"message": "m", "all": true}); !strings.Contains(r.Error, filepath.Join(dir, ".githooks", "pre-commit")) {
		t.Errorf("relative core.hooksPath: %q", r.Error)
	}
	if ran(marker) {
		t.Fatal("the canary ran")
	}
}

// TestUsersOwnConfigIsTrustedButNoPagerRuns: a pager in the user's
// global configuration is theirs (not refused) and still never runs.
func TestUsersOwnConfigIsTrustedButNoPagerRuns(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	prog, marker := canary(t, t.TempDir())
	dir := w.repo("mine")
	writeFile(t, filepath.Join(dir, "README"), "x\n")
	// Written after the set-up, whose own git would run them.
	writeFile(t, filepath.Join(w.home, ".gitconfig"), "[user]\n\tname = T\n\temail = t@x\n[core]\n\tpager = "+prog+"\n\tfsmonitor = "+prog+"\n[pager]\n\tlog = "+prog+"\n")
	w.env.WorkDir = dir
	for _, name := range []string{"git_status", "git_log", "git_diff", "git_branch", "git_reflog"} {
		ok(t, w.call(name, map[string]any{}))
	}
	if ran(marker) {
		t.Fatal("a pager or file-system monitor ran")
	}
}

// TestEnvironmentIsScrubbed: a hook (allowed under high-risk) sees no
// secret of the parent and none of its GIT_* redirections, nor a variable
// of innocent name and shape holding a secret the run knows.
func TestEnvironmentIsScrubbed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out := filepath.Join(t.TempDir(), "env")
	dir := w.repo("r")
	other := w.repo("other")
	if err := os.WriteFile(filepath.Join(dir, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\nenv > '"+out+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	setup := w.environ
	w.environ = append(append([]string(nil), w.environ[1:]...), "PATH=relbin:"+os.Getenv("PATH"), "OPENAI_API_KEY=sk-live-123456789", "GIT_DIR="+filepath.Join(other, ".git"),
		"GIT_WORK_TREE="+other, "GIT_CONFIG_PARAMETERS='core.hooksPath=/dev/null'", "GIT_TRACE_CURL=1", "SSH_AUTH_SOCK=/x", "HARMLESS=1", "FOO=plainknownvalue0123")
	w.env.Secrets = secrets.NewSet([]string{"plainknownvalue0123"}, w.env.Secrets.Files()...)
	w.env.WorkDir = dir
	setPolicy(w, messages.PolicyHighRisk)
	writeFile(t, filepath.Join(dir, "README"), "changed\n")
	c := w.propose("git_commit", map[string]any{"message": "env", "all": true})
	ok(t, w.approve(c))
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the hook did not run: %v", err)
	}
	env := string(b)
	for _, bad := range []string{"OPENAI_API_KEY", "GIT_WORK_TREE", "GIT_TRACE_CURL", "SSH_AUTH_SOCK", other, "relbin", "plainknownvalue0123"} {
		if strings.Contains(env, bad) {
			t.Errorf("the child saw %s:\n%s", bad, env)
		}
	}
	for _, want := range []string{"GIT_TERMINAL_PROMPT=0", "HARMLESS=1", "LC_ALL=C"} {
		if !strings.Contains(env, want) {
			t.Errorf("the child lacks %s", want)
		}
	}
	w.environ = setup
	if got := w.git(dir, "log", "-1", "--format=%s"); got != "env" {
		t.Errorf("committed to the wrong repository? HEAD of %s is %q", dir, got)
	}
}

// TestNestedAndForeignRepositories: git works in the innermost repository
// and that is the one judged; one owned by another user fails as git
// makes it fail (jazz never adds safe.directory).
func TestNestedAndForeignRepositories(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	prog, marker := canary(t, t.TempDir())
	outer := w.repo("outer")
	inner := filepath.Join(outer, "vendor", "inner")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	w.git(inner, "init", "-q")
	w.git(inner, "config", "core.fsmonitor", prog)
	ok(t, w.call("git_status", map[string]any{"path": outer}))
	if r := w.call("git_status", map[string]any{"path": inner}); r.Success || !strings.Contains(r.Error, "core.fsmonitor") {
		t.Errorf("the inner repository: %+v", r)
	}
	// A `.git` file pointing at another repository's git directory brings
	// that repository's configuration, which is judged.
	elsewhere := filepath.Join(outer, "elsewhere")
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(elsewhere, ".git"), "gitdir: "+filepath.Join(inner, ".git")+"\n")
	if r := w.call("git_status", map[string]any{"path": elsewhere}); r.Success || !strings.Contains(r.Error, "core.fsmonitor") {
		t.Errorf(".git file: %+v", r)
	}
	if ran(marker) {
		t.Fatal("the canary ran")
	}
	if os.Geteuid() != 0 {
		return
	}
	foreign := w.repo("foreign")
	if err := filepath.Walk(foreign, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	}); err != nil {
		t.Fatal(err)
	}
	if r := w.call("git_status", map[string]any{"path": foreign}); r.Success || !strings.Contains(r.Error, "dubious ownership") {
		t.Errorf("a repository owned by another user: %+v", r)
	}
}
