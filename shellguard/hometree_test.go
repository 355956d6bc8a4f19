package shellguard

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// homeTreeWorkspace is a home directory at root/users/u with dot
// entries, a workspace beside it (root/ws) holding a tree laid out as a
// copy of the home's parent (x/u/.bashrc), and links in the workspace to
// the home's parent and to the home.
func homeTreeWorkspace(t *testing.T) (ws, home string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, ws = root+"/users/u", root+"/ws"
	for _, d := range []string{home + "/.ssh", ws + "/x/u", ws + "/empty", ws + "/sub"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, content := range map[string]string{home + "/.bashrc": "# rc\n", ws + "/x/u/.bashrc": "evil\n", ws + "/src.txt": "x\n"} {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"people": root + "/users", "halias": home} {
		if err := os.Symlink(target, ws+"/"+link); err != nil {
			t.Fatal(err)
		}
	}
	return ws, home
}

// TestHumanOnlyTakesTheHome: a program that removes, moves away or
// replaces the home directory, or a directory holding it, takes the
// home's dot entries with it (or plants new ones: a tree copied or
// extracted over the home's parent brings u/.bashrc along), however it
// names the directory: by `..`, absolute, through a link (which the
// kernel follows with a trailing slash, and cp or tar -C without one),
// from a directory a cd reached. Each is a person's, as removing one dot
// entry is, at propose time and, on the expanded argv, at run time. A
// tree beside the home and inspect-only reads are not.
func TestHumanOnlyTakesTheHome(t *testing.T) {
	ws, home := homeTreeWorkspace(t)
	users := filepath.Dir(home)
	humanOnly := []string{
		"mv ../users gone",
		"mv " + users + " /tmp/gone",
		"mv people/ gone",
		"cp -r x/u people",        // cp follows the link and merges x/u into the home
		"tar -xf a.tar -C people", // tar changes into the link's target
		"rmdir ../users",
		"find ../users -delete",
		"find ../users -name .bashrc -delete",
		"find people/ -delete",
		"find ~ -name .bashrc -delete",
		"find $HOME -delete",
		"find ~/.. -delete",
		"find halias/ -delete",
		"cd .. && find . -delete",
		"cd .. && mv users gone",
		"cd / && find " + users[1:] + " -delete",
		"cp -r x/. ../users",
		"cp -rT x ../users",
		"rsync -a x/ ../users/",
		"rsync -a --delete empty/ ../users/",
		"rsync -a --delete empty/ ~/",
		"tar -xf a.tar -C ../users",
		"chmod -R 777 ../users",
	}
	for _, cmd := range humanOnly {
		if why := HumanOnly(cmd, ws, home); why == "" {
			t.Errorf("HumanOnly(%q) = \"\", want a reason", cmd)
		} else {
			t.Logf("%s: %s", cmd, why)
		}
	}
	ordinary := []string{
		"rm -d empty",
		"find . -name '*.o' -delete",
		"cp -r x copy",
		"mv sub ../users/u-notes", // into the parent: the home stays
		"ls -la ../users ~",
		"find ~ -name '*.go'",
		"echo x > ~/notes.txt",
		"cp src.txt ~/notes.txt",
	}
	for _, cmd := range ordinary {
		if why := HumanOnly(cmd, ws, home); why != "" {
			t.Errorf("HumanOnly(%q) = %q, want \"\"", cmd, why)
		}
	}

	// At run time, on the argv expansion made (a glob, a variable).
	homes := []string{home}
	for _, argv := range [][]string{
		{"find", users, "-delete"},
		{"find", home, "-delete"},
		{"mv", ws + "/people/", ws + "/gone"},
		{"rsync", "-a", "--delete", "empty/", "../users/"},
		{"tar", "-xf", "a.tar", "-C", "/" + users[1:]},
	} {
		if why := ProtectedArgv(argv, ws, homes); why == "" {
			t.Errorf("ProtectedArgv(%q) = \"\", want a reason", argv)
		}
	}
	for _, argv := range [][]string{
		{"find", ws, "-delete"},
		{"mv", "sub", users + "/notes"},
	} {
		if why := ProtectedArgv(argv, ws, homes); why != "" {
			t.Errorf("ProtectedArgv(%q) = %q, want \"\"", argv, why)
		}
	}
}

// TestHumanOnlyFollowsAProgramsOwnDirectory: a program that changes into
// a directory of its own before it takes its other words (env -C, git
// -C, make -C, tar -C) resolves their relative paths from there, so
// ../../users/u/.bashrc from elsewhere/deep is the home's .bashrc though
// from the shell's directory it names nothing; and a bare repository's
// config beside it is git's own.
func TestHumanOnlyFollowsAProgramsOwnDirectory(t *testing.T) {
	ws, home := homeTreeWorkspace(t)
	root := filepath.Dir(ws)
	deep := root + "/elsewhere/deep"
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root+"/elsewhere/bare", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root+"/elsewhere/bare/HEAD", []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{
		"env -C " + deep + " cp " + ws + "/src.txt ../../users/u/.bashrc",
		"env --chdir=" + deep + " mv ../../users gone",
		"env -C" + deep + " find ../../users/u -name .bashrc -delete",
		"git -C " + deep + " mv x ../../users/u/.profile",
		"make -C " + deep + " -f ../../users/u/.bashrc",
		"env -C " + deep + " cp " + ws + "/src.txt ../bare/config",
	} {
		if why := HumanOnly(cmd, ws, home); why == "" {
			t.Errorf("HumanOnly(%q) = \"\", want a reason", cmd)
		}
	}
	if why := ProtectedArgv([]string{"env", "-C", deep, "cp", "x", "../../users/u/.bashrc"}, ws, []string{home}); why == "" {
		t.Error("ProtectedArgv of env -C … cp x ../../users/u/.bashrc = \"\", want a reason")
	}
	if why := HumanOnly("env -C "+deep+" cp "+ws+"/src.txt ../notes.txt", ws, home); why != "" {
		t.Errorf("a plain file from a program's own directory: %q", why)
	}
}

// TestHumanOnlyBoundsAProgramsDirectories: judging every relative word
// from every directory a call names grows with their product; past a
// bound the call is a person's instead of slow to judge (60 directories
// and 60 relative words took seconds per reachable directory).
func TestHumanOnlyBoundsAProgramsDirectories(t *testing.T) {
	ws, home := homeTreeWorkspace(t)
	cmd := "cp -r"
	for i := range 60 {
		d := filepath.Join(ws, "many", strconv.Itoa(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd += " " + d + " f" + strconv.Itoa(i)
	}
	if why := HumanOnly(cmd+" dest", ws, home); why == "" {
		t.Error("a call naming 60 directories and 60 relative paths: not human-only")
	}
	if why := HumanOnly("cp -r x/ sub/ empty/ "+ws+"/x/u dest/", ws, home); why != "" {
		t.Errorf("a call naming a few directories: %q", why)
	}
}

// TestHumanOnlyJudgesTheDirectoryAProgramRuns: what a program writes
// without naming it (an archive's entries, a clone, a build) lands in
// the directory it runs in, so a writing program run in the home
// directory or one holding it is a person's as `tar -C ~` is: however
// the shell got there (cd, pushd, a subshell, `..`, a link, /), from the
// call's own working directory, and at run time from the interpreter's.
// Inspect-only programs there, and writers elsewhere, are not.
func TestHumanOnlyJudgesTheDirectoryAProgramRuns(t *testing.T) {
	ws, home := homeTreeWorkspace(t)
	users := filepath.Dir(home)
	for _, cmd := range []string{
		"cd ~ && tar -xf /tmp/a.tar",
		"cd " + users + " && tar -xf /tmp/a.tar",
		"cd ../users && unzip /tmp/a.zip",
		"cd .. && unzip /tmp/a.zip",
		"cd / && unzip /tmp/a.zip",
		"cd people && unzip /tmp/a.zip",
		"cd halias && git clone /tmp/r",
		"pushd ~ && make",
		"(cd ~; ./configure)",
		"cd $HOME; python3 x.py",
		"env -C ~ unzip /tmp/a.zip",
		"git -C" + home + " init",
		"make -C" + users,
		"tar -xf /tmp/a.tar -C" + users,
		"tar --directory=" + home + " -xf /tmp/a.tar",
	} {
		if why := HumanOnly(cmd, ws, home); why == "" {
			t.Errorf("HumanOnly(%q) = \"\", want a reason", cmd)
		}
	}
	for _, dir := range []string{home, users, "/", ws + "/halias", ws + "/people"} {
		if why := HumanOnly("tar -xf /tmp/a.tar", dir, home); why == "" {
			t.Errorf("tar -xf run in %s: HumanOnly = \"\", want a reason", dir)
		}
		if why := ProtectedArgv([]string{"tar", "-xf", "/tmp/a.tar"}, dir, []string{home}); why == "" {
			t.Errorf("tar -xf run in %s: ProtectedArgv = \"\", want a reason", dir)
		}
	}
	for _, cmd := range []string{
		"cd ~ && ls -la && cat .bashrc && grep -r x .",
		"cd sub && tar -xf /tmp/a.tar",
		"cd ~/.. && wc -l u/.bashrc",
	} {
		if why := HumanOnly(cmd, ws, home); why != "" {
			t.Errorf("HumanOnly(%q) = %q, want \"\"", cmd, why)
		}
	}
	if why := ProtectedArgv([]string{"tar", "-xf", "/tmp/a.tar"}, ws+"/sub", []string{home}); why != "" {
		t.Errorf("tar -xf run in the workspace: %q", why)
	}
}

// TestHumanOnlyLetsReadsRunInTheHome: a call the read-only grammar keeps
// inspect-only with computed operands (`cat *.json`) writes nothing in
// the directory it runs in, the home included.
func TestHumanOnlyLetsReadsRunInTheHome(t *testing.T) {
	ws, home := homeTreeWorkspace(t)
	for _, cmd := range []string{"cd ~ && cat *.json", "cd ~ && wc -l \"$f\"", "cd .. && grep -r x *"} {
		if why := HumanOnly(cmd, ws, home); why != "" {
			t.Errorf("HumanOnly(%q) = %q, want \"\"", cmd, why)
		}
	}
	if why := HumanOnly("cd ~ && tar -xf $a", ws, home); why == "" {
		t.Error("a writer with a computed word in the home: not human-only")
	}
}
