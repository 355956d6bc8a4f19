package shellguard

import (
	"os"
	"path/filepath"
	"testing"
)

// escalationWorkspace is a home directory holding a workspace that is a
// git repository with AGENTS.md, .jazz, a bare repository under a plain
// name, and links that reach the protected places under other names.
func escalationWorkspace(t *testing.T) (ws, home string) {
	t.Helper()
	home = t.TempDir()
	ws = filepath.Join(home, "ws")
	for _, d := range []string{".git/hooks", ".git/objects", ".git/refs", ".jazz", "sub", "store/objects", "store/refs", "payload/.git"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".git/HEAD", ".git/config", "AGENTS.md", "store/HEAD", "src.txt", "sub/a.txt", "payload/.git/config"} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"meta": ".git", "readme": "AGENTS.md", "h": home, "up": ".."} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	return ws, home
}

// TestHumanOnlyCommands: a command that could plant a hook, a git
// config, an AGENTS.md, jazz's config or a dotfile is for a person only,
// however it spells the path; ordinary work and inspect-only reads of
// those places are not.
func TestHumanOnlyCommands(t *testing.T) {
	ws, home := escalationWorkspace(t)
	humanOnly := []string{
		"echo x > .git/hooks/pre-commit",
		"echo x >> .git/config",
		"echo x >| AGENTS.md",
		"echo x &> .jazz/config.json",
		"echo x >& AGENTS.md",
		"tee -a ~/.bashrc < /dev/null",
		"tee -a $HOME/.bashrc",
		`tee -a "${HOME}/.bashrc"`,
		"cat src.txt > ~//.bashrc",
		"cp src.txt .git/hooks/post-checkout",
		"cp src.txt .git//hooks/",
		"cp -t .git/hooks src.txt",
		"cp src.txt --target-directory=.git/hooks",
		"git config core.hooksPath x",
		"git -C sub config --global core.fsmonitor x",
		"git config set core.pager x",
		"git init --template=tpl new",
		"git -c init.templateDir=tpl init new",
		"sed -i s/a/b/ AGENTS.md",
		"sed -i s/a/b/ agents.MD",
		"mkdir -p .jazz && echo x > .jazz/c",
		"mkdir -p .agents",
		"ln -s src.txt .git/hooks/pre-push",
		"ln -sf /bin/true ./.GIT/hooks/pre-push",
		"mv src.txt AGENTS.md",
		"install -m 755 src.txt .git/hooks/pre-commit",
		"dd if=src.txt of=.git/hooks/pre-commit",
		"sort -o.git/hooks/pre-commit src.txt",
		"f=.git/hooks/pre-commit; echo x > $f",
		`echo x > "$(echo .git)/hooks/pre-commit"`,
		"cp src.txt $f",
		"cd .git/hooks && cat > pre-commit < /dev/null",
		"cd .git && cd hooks && cp ../../src.txt pre-commit",
		"cd sub && echo x > ../AGENTS.md",
		"cd sub; echo x > ../.git/hooks/x",
		"echo x > sub/../AGENTS.md",
		"echo x > meta/hooks/pre-commit",
		"echo x > readme",
		"cp src.txt h/.profile",
		"cp src.txt up/.bashrc",
		"cd up && echo x > .bashrc",
		"cd && echo x > .bashrc",
		"cd ~ && echo x > .bashrc",
		"cd $HOME; touch .bashrc",
		"cd $d && echo x > pre-commit",
		"for d in a b; do cd ..; done; echo x > .bashrc",
		"echo x > store/hooks/pre-receive",
		"cp -r payload/. ./",
		"cp src.txt ~",
		"rsync -a payload/ dst/",
		"echo .git/hooks/x | xargs -n1 cp src.txt",
		"HOME=.git/hooks; cp src.txt ~/pre-commit",
		"export HOME=$PWD/.git/hooks; cd; cp ../src.txt pre-commit",
		"find . -name src.txt -exec cp {} .git/hooks/ ;",
		"env cp src.txt AGENTS.md",
		"$c src.txt .git/hooks/x",
		"cd .git/hooks && make",
		"rm AGENTS.md",
		"cp src.txt ~/.$$",
		"exec 3> .git/hooks/pre-commit; echo x >&3",
		"f() { cp \"$1\" \"$2\"; }; f src.txt .git/hooks/x",
		"cp src.txt .git/hooks/{pre-commit,x}",
		"cat <<EOF > AGENTS.md\nx\nEOF",
		"echo x > .git/hooks/pre-commit$((1))",
		"if true; then cd .git; fi; touch hooks/pre-commit",
		"(cd .git/hooks) ; touch pre-commit",
		"echo x > .git/hooks/pre-commit\\",
	}
	for _, cmd := range humanOnly {
		if why := HumanOnly(cmd, ws, home); why == "" {
			t.Errorf("HumanOnly(%q) = \"\", want a reason", cmd)
		} else {
			t.Logf("%s: %s", cmd, why)
		}
	}
	ordinary := []string{
		"echo x > out.txt",
		"echo x > /dev/null 2>&1",
		"cp src.txt sub/b.txt",
		"cat AGENTS.md",
		"ls -la .git/hooks",
		"git status",
		"git log --oneline -5",
		"git config --get user.name",
		"git config get user.name",
		"git config --list",
		"git commit -m 'update docs'",
		"go test ./...",
		"cd sub && echo x > b.txt",
		"grep -rn pattern .",
		"echo x > $HOME/notes.txt",
		"mkdir -p build && cp src.txt build/",
		"for f in a b; do echo $f; done",
		"cd .git/hooks && ls",
		"echo $$; env kill -TERM $$",
		"echo x > out.$$.txt",
		"cd sub && cp a.txt b.txt",
	}
	for _, cmd := range ordinary {
		if why := HumanOnly(cmd, ws, home); why != "" {
			t.Errorf("HumanOnly(%q) = %q, want \"\"", cmd, why)
		}
	}
}
