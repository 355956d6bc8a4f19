package agentsmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/secrets"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDiscoverOutermostFirst(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	repo := filepath.Join(base, "src", "repo")
	cwd := filepath.Join(repo, "pkg", "deep")
	write(t, filepath.Join(home, ".agents", Name), "user-wide")
	write(t, filepath.Join(base, "src", Name), "above the repo: not read")
	write(t, filepath.Join(repo, ".git", "HEAD"), "ref: main")
	write(t, filepath.Join(repo, Name), "repo root")
	write(t, filepath.Join(repo, "pkg", Name), "pkg")
	write(t, filepath.Join(cwd, Name), "deep")
	files, warns := Discover(context.Background(), Options{Home: home, Cwd: cwd, Guard: secrets.NewGuard(filepath.Join(home, ".jazz"))})
	var got []string
	for _, f := range files {
		got = append(got, f.Content)
	}
	if strings.Join(got, ",") != "user-wide,repo root,pkg,deep" || len(warns) != 0 {
		t.Fatalf("got %v, warnings %v", got, warns)
	}
	sec := Section(files)
	if strings.Index(sec, "user-wide") > strings.Index(sec, "deep") || !strings.Contains(sec, "## "+filepath.Join(cwd, Name)) {
		t.Errorf("section:\n%s", sec)
	}
	if Section(nil) != "" {
		t.Error("no files, no section")
	}
}

func TestDirsWithoutRepo(t *testing.T) {
	d := t.TempDir()
	if got := Dirs(d); len(got) != 1 || got[0] != d {
		t.Errorf("outside a repository only the cwd counts: %v", got)
	}
	// A .git file (a worktree) marks a root as well.
	write(t, filepath.Join(d, ".git"), "gitdir: elsewhere")
	sub := filepath.Join(d, "a", "b")
	if got := Dirs(sub); len(got) != 3 || got[0] != d || got[2] != sub {
		t.Errorf("dirs %v", got)
	}
}

// TestJazzSecretsAreNotInstructions: an AGENTS.md that is (a link to)
// one of jazz's own files is refused, and secret values inside an
// ordinary one are redacted.
func TestJazzSecretsAreNotInstructions(t *testing.T) {
	base := t.TempDir()
	jazzHome := filepath.Join(base, "jazzhome")
	write(t, filepath.Join(jazzHome, "config.json"), `{"llm":{"openai":{"api_key":"sk-TOPSECRET-123456"}}}`)
	repo := filepath.Join(base, "repo")
	write(t, filepath.Join(repo, ".git", "HEAD"), "x")
	if err := os.Symlink(filepath.Join(jazzHome, "config.json"), filepath.Join(repo, Name)); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(repo, "sub", Name), "token is sk-TOPSECRET-123456, keep it")
	set := secrets.NewSet([]string{"sk-TOPSECRET-123456"})
	files, warns := Discover(context.Background(), Options{Cwd: filepath.Join(repo, "sub"), Guard: set.Guard(jazzHome), Redact: set.Redact})
	if len(warns) != 1 || !strings.Contains(warns[0], "not used") {
		t.Errorf("warnings %v", warns)
	}
	if len(files) != 1 || strings.Contains(Section(files), "TOPSECRET") {
		t.Fatalf("files %+v", files)
	}
}

func TestBounded(t *testing.T) {
	d := t.TempDir()
	big := strings.Repeat("é", MaxBytes) // two bytes a rune: the cut falls mid-rune
	write(t, filepath.Join(d, Name), big)
	files, _ := Discover(context.Background(), Options{Cwd: d, Guard: secrets.NewGuard("")})
	if len(files) != 1 || !files[0].Truncated || len(files[0].Content) > MaxBytes || !strings.HasSuffix(files[0].Content, "é") {
		t.Fatalf("%d bytes, truncated %v", len(files[0].Content), files[0].Truncated)
	}
	if !strings.Contains(Section(files), "longer than 32 KB") {
		t.Error("the cut must be said")
	}
	if err := os.Remove(filepath.Join(d, Name)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(d, Name), 0o700); err != nil {
		t.Fatal(err)
	}
	if files, warns := Discover(context.Background(), Options{Cwd: d, Guard: secrets.NewGuard("")}); len(files) != 0 || len(warns) != 1 {
		t.Errorf("a directory named AGENTS.md: %v %v", files, warns)
	}
}

// TestProjectLinksOutAreNotRead: a repository's AGENTS.md that is a link
// out of the repository (to a credentials file, a key) is not read into
// the system prompt, and a warning says why; one that links to another
// file of the repository is read, and the user's own ~/.agents/AGENTS.md
// may link anywhere.
func TestProjectLinksOutAreNotRead(t *testing.T) {
	base := t.TempDir()
	home, repo := filepath.Join(base, "home"), filepath.Join(base, "repo")
	write(t, filepath.Join(home, ".aws", "credentials"), "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n")
	write(t, filepath.Join(home, "notes", "mine.md"), "the user's own notes\n")
	write(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(repo, "docs", "agents.md"), "shared project rules\n")
	link := func(target, name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(home, ".aws", "credentials"), filepath.Join(repo, Name))
	link(filepath.Join("..", "docs", "agents.md"), filepath.Join(repo, "sub", Name))
	link(filepath.Join(home, "notes", "mine.md"), filepath.Join(home, ".agents", Name))
	files, warns := Discover(context.Background(), Options{Home: home, Cwd: filepath.Join(repo, "sub"), Guard: secrets.NewGuard(filepath.Join(home, ".jazz"))})
	var got []string
	for _, f := range files {
		if strings.Contains(f.Content, "wJalrXUtnFEMI") {
			t.Fatalf("the credentials reached the instructions through %s", f.Path)
		}
		got = append(got, strings.TrimSpace(f.Content))
	}
	if strings.Join(got, "|") != "the user's own notes|shared project rules" {
		t.Errorf("read %q, want the user's own file and the in-project link", got)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "link out of the project") || !strings.Contains(warns[0], filepath.Join(repo, Name)) {
		t.Errorf("warnings %q, want one naming the link out", warns)
	}
}
