package gitinert

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jazz-run/jazz/tools/capbuf"
)

// Limits of the submodule walk.
const (
	// MaxSubmodules is the most populated submodules one check lists,
	// nested ones included; a repository with more cannot be checked.
	MaxSubmodules = 64
	// maxDepth is how deep nested submodules are followed.
	maxDepth = 4
)

// SubmoduleRisks judges the configuration of every populated submodule
// of the repository git (the program at gitPath) finds in dir, nested
// ones too, as Risks judges the repository's own: git works inside a
// submodule with the submodule's configuration (a status or diff that
// looks into it runs its filters, diff drivers and external diff), and
// what makes git look (.gitmodules' ignore, --submodule=diff) is the
// repository's to choose. Each risk is named with the submodule's path.
// Outside a work tree there are none.
func SubmoduleRisks(ctx context.Context, gitPath, dir string, env []string) ([]string, error) {
	seen := 0
	return submoduleRisks(ctx, gitPath, dir, env, 0, &seen)
}

func submoduleRisks(ctx context.Context, gitPath, dir string, env []string, depth int, seen *int) ([]string, error) {
	top, err := topLevel(ctx, gitPath, dir, env)
	if err != nil || top == "" {
		return nil, err
	}
	paths, err := gitlinks(ctx, gitPath, top, env)
	if err != nil {
		return nil, err
	}
	var risks []string
	for _, p := range paths {
		sub := filepath.Join(top, filepath.FromSlash(p))
		if _, err := os.Lstat(filepath.Join(sub, ".git")); err != nil {
			continue // not populated: git has no repository to enter there
		}
		if *seen++; *seen > MaxSubmodules {
			return nil, fmt.Errorf("%w in %s: more than %d submodules", ErrUnreadable, dir, MaxSubmodules)
		}
		entries, err := List(ctx, gitPath, sub, env)
		if err != nil {
			return nil, err
		}
		if own := Risks(ownWorktree(entries, sub)); len(own) > 0 {
			for _, r := range own {
				risks = append(risks, "submodule "+p+": "+r)
			}
			continue // refused already; what it nests need not be read
		}
		if depth+1 == maxDepth {
			return nil, fmt.Errorf("%w in %s: submodules nested deeper than %d", ErrUnreadable, sub, maxDepth-1)
		}
		nested, err := submoduleRisks(ctx, gitPath, sub, env, depth+1, seen)
		if err != nil {
			return nil, err
		}
		for _, r := range nested {
			risks = append(risks, "submodule "+p+"/"+strings.TrimPrefix(r, "submodule "))
		}
	}
	return risks, nil
}

// ownWorktree drops from entries the core.worktree git writes into an
// absorbed submodule's configuration (.git/modules/<name>/config), which
// names the submodule's own directory, sub: git works there anyway. One
// that names anywhere else stays a risk.
func ownWorktree(entries []Entry, sub string) []Entry {
	out := entries[:0:0]
	for _, e := range entries {
		if e.own() && e.Key == "core.worktree" && strings.HasPrefix(e.Origin, "file:") {
			wt := e.Value
			if !filepath.IsAbs(wt) {
				// Relative to the git directory, where the file is.
				wt = filepath.Join(filepath.Dir(strings.TrimPrefix(e.Origin, "file:")), wt)
			}
			if sameDir(wt, sub) {
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// sameDir reports whether a and b are one directory.
func sameDir(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && sa.IsDir() && os.SameFile(sa, sb)
}

// topLevel is the root of the work tree git finds in dir, or "" when
// there is none (no repository, or a git directory).
func topLevel(ctx context.Context, gitPath, dir string, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, gitPath, "rev-parse", "--is-inside-work-tree", "--show-toplevel")
	cmd.Dir, cmd.Env = dir, env
	out := &capbuf.Buffer{Limit: 64 << 10}
	cmd.Stdout = out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("%w in %s: %w", ErrUnreadable, dir, ctx.Err())
		}
		// Not in a repository (List found only the user's configuration)
		// or not in a work tree: git enters no submodule from here.
		return "", nil
	}
	lines := strings.Split(strings.TrimSpace(out.Text()), "\n")
	if len(lines) < 2 || lines[0] != "true" {
		return "", nil
	}
	return lines[1], nil
}

// gitlinks are the paths (relative to top, slash-separated) of the
// index's submodule entries. The index is streamed: only the entries
// are kept.
func gitlinks(ctx context.Context, gitPath, top string, env []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, gitPath, "ls-files", "--stage", "-z")
	cmd.Dir, cmd.Env = top, env
	stderr := &capbuf.Buffer{Limit: 4096}
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%w in %s: %w", ErrUnreadable, top, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w in %s: %w", ErrUnreadable, top, err)
	}
	var paths []string
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	sc.Split(splitNUL)
	tooMany := false
	for sc.Scan() {
		// "<mode> <object> <stage>\t<path>"
		meta, path, ok := strings.Cut(sc.Text(), "\t")
		if !ok || !strings.HasPrefix(meta, "160000 ") {
			continue
		}
		if len(paths) == MaxSubmodules {
			tooMany = true
			break
		}
		paths = append(paths, path)
	}
	scanErr := sc.Err()
	_, _ = io.Copy(io.Discard, pipe) // let git finish writing
	waitErr := cmd.Wait()
	switch {
	case tooMany:
		return nil, fmt.Errorf("%w in %s: more than %d submodules", ErrUnreadable, top, MaxSubmodules)
	case scanErr != nil:
		return nil, fmt.Errorf("%w in %s: listing the index: %w", ErrUnreadable, top, scanErr)
	case waitErr != nil:
		if msg := strings.TrimSpace(stderr.Text()); msg != "" {
			return nil, fmt.Errorf("%w in %s: %s", ErrUnreadable, top, msg)
		}
		return nil, fmt.Errorf("%w in %s: %w", ErrUnreadable, top, waitErr)
	}
	return paths, nil
}

// splitNUL is a bufio.SplitFunc for NUL-terminated records.
func splitNUL(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return 0, nil, errors.New("a record without its NUL")
	}
	return 0, nil, nil
}
