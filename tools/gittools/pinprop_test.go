package gittools

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStagedIndexIsThePreviewedOne is a property over random small trees
// (files in nested directories, executable or not, links, deletions,
// renames, new files): after a git_add or git_rm twin, the index is the
// one git itself makes of the previewed tree (the same command on a
// scratch copy of the index), and a removal without cached leaves none
// of the removed paths in the work tree.
func TestStagedIndexIsThePreviewedOne(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("GITTOOLS_PROPERTY_SEED"), 10, 64); err == nil {
		seed = s // to run a failing case again
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x6a617a7a))
	rounds := 12
	if testing.Short() {
		rounds = 5
	}
	names := []string{"a", "b.sh", "d/c", "d/e/f", "g/h", "link", "d/link"}
	for round := range rounds {
		w := newWorld(t)
		w.withoutSandbox()
		dir := w.repo(fmt.Sprintf("r%d", round))
		w.env.WorkDir = dir
		links := 0
		put := func(name string) {
			p := filepath.Join(dir, name)
			os.RemoveAll(p)
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			if filepath.Base(name) == "link" {
				// Each link made is longer than the last: a link's
				// time cannot be set back (below), its size then tells.
				links++
				must(t, os.Symlink(strings.Repeat("t", links), p))
				return
			}
			must(t, os.WriteFile(p, fmt.Appendf(nil, "%d\n", rng.IntN(4)), 0o644))
			if rng.IntN(2) == 0 {
				must(t, os.Chmod(p, 0o755))
			}
		}
		for _, n := range names {
			if rng.IntN(3) > 0 {
				put(n)
			}
		}
		w.git(dir, "add", "-A")
		w.git(dir, "commit", "-q", "--allow-empty", "-m", "tree")
		// Change the tree: rewrite, chmod, delete, rename, create.
		for _, n := range names {
			p := filepath.Join(dir, n)
			switch rng.IntN(5) {
			case 0:
				put(n)
			case 1:
				if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
					must(t, os.Chmod(p, fi.Mode().Perm()^0o111))
				}
			case 2:
				os.Remove(p)
			case 3:
				if _, err := os.Lstat(p); err == nil && filepath.Base(n) != "link" {
					must(t, os.Rename(p, p+".moved"))
				}
			}
		}
		if rng.IntN(2) == 0 {
			w.git(dir, "add", "--", ".") // some of it staged already
			put(names[rng.IntN(len(names))])
		}
		// Git sees a file as unchanged when its stat matches the entry's,
		// and a rewrite in the same clock tick as the index can match it
		// (same inode, size and time): every file is set back an hour, so
		// git compares contents, and its dry run and its add agree.
		back := time.Now().Add(-time.Hour)
		for _, n := range names {
			for _, p := range []string{filepath.Join(dir, n), filepath.Join(dir, n+".moved")} {
				if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
					must(t, os.Chtimes(p, back, back))
				}
			}
		}
		switch op := rng.IntN(3); op {
		case 0:
			r := w.call("git_add", map[string]any{"files": []string{"."}})
			if r.Approval == nil {
				continue // nothing to add
			}
			want := gitIndexAfter(t, w, dir, "add", "--", ".")
			ok(t, w.approve(r))
			if got := stagedIndex(t, w, dir, ""); got != want {
				t.Fatalf("round %d (seed %d): git_add staged\n%s\ngit add stages\n%s", round, seed, got, want)
			}
		default:
			cached := op == 1
			var pick []string
			for _, n := range strings.Split(w.git(dir, "ls-files"), "\n") {
				if rng.IntN(2) == 0 {
					pick = append(pick, n)
				}
			}
			if len(pick) == 0 {
				continue
			}
			args := map[string]any{"files": pick, "force": true, "cached": cached}
			r := w.call("git_rm", args)
			if r.Approval == nil {
				t.Fatalf("round %d (seed %d): git_rm %v: %q", round, seed, pick, r.Error)
			}
			want := gitIndexAfter(t, w, dir, append([]string{"rm", "-q", "--cached", "-f", "--"}, pick...)...)
			var present []string
			for _, n := range pick {
				if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
					present = append(present, n)
				}
			}
			ok(t, w.approve(r))
			if got := stagedIndex(t, w, dir, ""); got != want {
				t.Fatalf("round %d (seed %d): git_rm %v left\n%s\ngit rm leaves\n%s", round, seed, pick, got, want)
			}
			for _, n := range present {
				_, err := os.Lstat(filepath.Join(dir, n))
				if gone := err != nil; gone == cached {
					t.Fatalf("round %d (seed %d): git_rm cached=%v: %s gone=%v", round, seed, cached, n, gone)
				}
			}
		}
	}
}
