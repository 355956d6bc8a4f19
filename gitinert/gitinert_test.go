package gitinert_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/gitinert"
)

func TestInertKey(t *testing.T) {
	for key, want := range map[string]bool{
		"core.filemode": true, "core.fsmonitor": false, "core.pager": false, "core.hookspath": false,
		"core.sshcommand": false, "diff.external": false, "diff.evil.textconv": false, "filter.lfs.clean": false,
		"credential.helper": false, "credential.https://x.helper": false, "remote.origin.url": true,
		"remote.origin.uploadpack": false, "include.path": false, "includeif.gitdir:/x/.path": false,
		"alias.st": true, "user.name": true, "extensions.worktreeconfig": true, "extensions.objectformat": true,
		"extensions.partialclone": false, "extensions.somethingnew": false, "remote.origin.promisor": false,
		"remote.origin.partialclonefilter": false, "gpg.program": false, "bogus": false, "newsection.key": false,
	} {
		if got := gitinert.InertKey(key); got != want {
			t.Errorf("InertKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestWithConfig(t *testing.T) {
	env := gitinert.WithConfig([]string{"A=1", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=a.b", "GIT_CONFIG_VALUE_0=c"}, "core.pager=cat", "x.y=a=b")
	want := []string{"A=1", "GIT_CONFIG_KEY_0=a.b", "GIT_CONFIG_VALUE_0=c", "GIT_CONFIG_KEY_1=core.pager", "GIT_CONFIG_VALUE_1=cat",
		"GIT_CONFIG_KEY_2=x.y", "GIT_CONFIG_VALUE_2=a=b", "GIT_CONFIG_COUNT=3"}
	if !slices.Equal(env, want) {
		t.Fatalf("WithConfig = %q", env)
	}
	if env := gitinert.WithConfig([]string{"GIT_CONFIG_COUNT=5", "GIT_CONFIG_COUNT=bogus"}, "a.b=c"); !slices.Equal(env, []string{"GIT_CONFIG_KEY_0=a.b", "GIT_CONFIG_VALUE_0=c", "GIT_CONFIG_COUNT=1"}) {
		t.Fatalf("the last GIT_CONFIG_COUNT does not count: %q", env)
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
}

// List reads what git itself reads: a repository found upward from a
// subdirectory, the file a .git file points to, with each setting's scope
// and file; Risks and AliasRisks judge the repository's own settings
// only. An include is a risk of its own, and the file it names is not
// read: it may be one jazz hides, and the listing runs outside the
// isolation.
func TestListJudgesTheRepositoryGitFinds(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	home := filepath.Join(root, "home")
	repo := filepath.Join(root, "repo")
	for _, d := range []string{home, filepath.Join(repo, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "init", "-q")
	git(t, repo, "config", "core.fsmonitor", "touch pwn")
	git(t, repo, "config", "alias.st", "!touch pwn")
	git(t, repo, "config", "include.path", filepath.Join(root, "inc"))
	const secret = "sk-included-secret-0123456789"
	if err := os.WriteFile(filepath.Join(root, "inc"), []byte("[diff]\n\texternal = touch pwn\n[jazz]\n\tapikey = "+secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\tpager = less\n[alias]\n\tlg = log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Elsewhere, a work tree whose .git file points at repo's directory.
	linked := filepath.Join(root, "linked")
	os.MkdirAll(linked, 0o755)
	os.WriteFile(filepath.Join(linked, ".git"), []byte("gitdir: "+filepath.Join(repo, ".git")+"\n"), 0o644)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1"}
	for _, dir := range []string{filepath.Join(repo, "sub"), linked} {
		entries, err := gitinert.List(context.Background(), "git", dir, env)
		if err != nil {
			t.Fatal(err)
		}
		risks := strings.Join(gitinert.Risks(entries), ", ")
		if !strings.Contains(risks, "core.fsmonitor (") || !strings.Contains(risks, "include.path (") || strings.Contains(risks, "core.pager") {
			t.Fatalf("%s: risks %s", dir, risks)
		}
		for _, e := range entries {
			if strings.Contains(e.Origin, filepath.Join(root, "inc")) || strings.Contains(e.Value, secret) {
				t.Fatalf("%s: the included file outside the repository was read: %+v", dir, e)
			}
		}
		if a := gitinert.AliasRisks(entries, []string{"status", "ST", "lg"}); len(a) != 1 || !strings.HasPrefix(a[0], "alias.st (") {
			t.Fatalf("%s: alias risks %q", dir, a)
		}
	}
	// Outside any repository only the user's settings apply.
	entries, err := gitinert.List(context.Background(), "git", home, env)
	if err != nil {
		t.Fatal(err)
	}
	if r := gitinert.Risks(entries); len(r) != 0 {
		t.Fatalf("risks outside a repository: %q", r)
	}
	// A configuration git cannot read is an error, not "nothing".
	os.WriteFile(filepath.Join(repo, ".git", "config"), []byte("[core\n"), 0o644)
	if _, err := gitinert.List(context.Background(), "git", repo, env); err == nil {
		t.Fatal("a broken configuration listed without error")
	}
}

// SubmoduleRisks judges each populated submodule's own configuration,
// nested ones too, from anywhere in the superproject's work tree: git's
// own core.worktree in an absorbed submodule's config is not a risk, one
// naming another directory is, and so is a knob of a nested submodule.
func TestSubmoduleRisks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "GIT_CONFIG_NOSYSTEM=1"}
	commit := func(dir string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(dir+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, dir, "add", "-A")
		git(t, dir, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "c")
	}
	repo := func(name string) string {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		git(t, d, "init", "-q")
		commit(d)
		return d
	}
	leaf, mid, top := repo("leaf"), repo("mid"), repo("top")
	git(t, mid, "-c", "protocol.file.allow=always", "submodule", "add", "-q", leaf, "leaf")
	commit(mid)
	git(t, top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", mid, "mid")
	git(t, top, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "--recursive")
	commit(top)
	ctx := context.Background()
	for _, dir := range []string{top, filepath.Join(top, "mid")} {
		if r, err := gitinert.SubmoduleRisks(ctx, "git", dir, env); err != nil || len(r) != 0 {
			t.Fatalf("git's own submodules in %s: %q %v", dir, r, err)
		}
	}
	git(t, filepath.Join(top, "mid", "leaf"), "config", "diff.external", "touch pwn")
	r, err := gitinert.SubmoduleRisks(ctx, "git", top, env)
	if err != nil || len(r) != 1 || !strings.HasPrefix(r[0], "submodule mid/leaf: diff.external (") {
		t.Fatalf("a nested submodule's knob: %q %v", r, err)
	}
	git(t, filepath.Join(top, "mid", "leaf"), "config", "--unset", "diff.external")
	git(t, filepath.Join(top, "mid"), "config", "core.worktree", root)
	if r, err := gitinert.SubmoduleRisks(ctx, "git", top, env); err != nil || len(r) != 1 || !strings.HasPrefix(r[0], "submodule mid: core.worktree (") {
		t.Fatalf("a submodule's work tree elsewhere: %q %v", r, err)
	}
	// Outside any work tree, none.
	if r, err := gitinert.SubmoduleRisks(ctx, "git", filepath.Join(top, ".git"), env); err != nil || len(r) != 0 {
		t.Fatalf("in a git directory: %q %v", r, err)
	}
}
