package readtools

import (
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/jazz-run/jazz/safefile"
	"github.com/jazz-run/jazz/secrets"
)

// ignoreRule is one line of a root .gitignore, read the way the original
// hands it to its glob library: `/x` anchors at the root, `x/` matches
// directories only, anything else matches at any depth. Negations are not
// supported there either.
type ignoreRule struct {
	segs     []string
	anchored bool
	dirOnly  bool
}

// maxIgnoreBytes bounds the .gitignore a walk reads.
const maxIgnoreBytes = 1 << 20

// loadIgnore parses root/.gitignore; a missing file (or a FIFO, a device,
// one too big) means no rules.
func loadIgnore(ctx context.Context, root string) []ignoreRule {
	b, _, err := safefile.Read(ctx, filepath.Join(root, ".gitignore"), safefile.Options{MaxBytes: maxIgnoreBytes})
	if err != nil {
		return nil
	}
	var rules []ignoreRule
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!") {
			continue
		}
		r := ignoreRule{anchored: strings.HasPrefix(line, "/"), dirOnly: strings.HasSuffix(line, "/")}
		p := strings.Trim(line, "/")
		if p == "" || p == "**" {
			continue
		}
		r.segs = strings.Split(p, "/")
		rules = append(rules, r)
	}
	return rules
}

// matches says whether the rule ignores the entry at rel (its segments).
// Ancestors need no check: the walk never enters an ignored directory.
func (r ignoreRule) matches(rel []string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	if r.anchored {
		return matchSegs(r.segs, rel)
	}
	for start := range rel {
		if matchSegs(r.segs, rel[start:]) {
			return true
		}
	}
	return false
}

// matchSegs matches glob segments against path segments in full; a `**`
// segment spans any number of them.
func matchSegs(pat, segs []string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	if pat[0] == "**" {
		for k := 0; k <= len(segs); k++ {
			if matchSegs(pat[1:], segs[k:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	if ok, _ := path.Match(pat[0], segs[0]); !ok {
		return false
	}
	return matchSegs(pat[1:], segs[1:])
}

// entry is one walked directory entry, not followed if a symlink.
type entry struct {
	abs, rel, name string
	depth          int // 1 = a direct child of the root
	d              fs.DirEntry
}

// walker lists a tree depth-first in name order, skipping what ls and find
// skip by default: dot entries, node_modules, .git and the root's
// .gitignore patterns (all of them kept when hidden is true).
type walker struct {
	root     string
	maxDepth int
	hidden   bool
	rules    []ignoreRule
	canon    string // the root with symlinks resolved, when guarded
	// prune, if set, drops an entry and its subtree.
	prune func(e entry) bool
	// visit sees each kept entry; returning false stops the walk.
	visit func(e entry) bool
	// guard, if set, keeps the walk out of jazz's own secret places
	// (/proc's process entries, JAZZ_HOME), whatever hidden says.
	guard *secrets.Guard
}

// run walks w.root. It stops early on ctx cancellation and reports it.
func (w *walker) run(ctx context.Context) error {
	if w.guard != nil {
		canon, err := w.guard.Resolve(w.root)
		if err != nil {
			return err
		}
		if w.guard.Excluded(canon) {
			return nil
		}
		w.canon = canon
	}
	if !w.hidden {
		w.rules = loadIgnore(ctx, w.root)
	}
	_, err := w.dir(ctx, w.root, nil, 1)
	return err
}

// dir walks one directory; false means stop everything.
func (w *walker) dir(ctx context.Context, abs string, rel []string, depth int) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	list, err := os.ReadDir(abs)
	if err != nil {
		return true, nil // unreadable subtrees are skipped, as glob libraries do
	}
	for _, d := range list {
		name := d.Name()
		if !w.hidden && (strings.HasPrefix(name, ".") || name == "node_modules") {
			continue
		}
		segs := append(rel[:len(rel):len(rel)], name)
		if w.ignored(segs, d.IsDir()) {
			continue
		}
		// Walks follow no symlinks, so the canonical root plus the
		// relative path is the entry's canonical path.
		if w.guard != nil && w.guard.Excluded(filepath.Join(w.canon, filepath.Join(segs...))) {
			continue
		}
		e := entry{abs: filepath.Join(abs, name), rel: strings.Join(segs, "/"), name: name, depth: depth, d: d}
		if w.prune != nil && w.prune(e) {
			continue
		}
		if !w.visit(e) {
			return false, nil
		}
		if d.IsDir() && depth < w.maxDepth {
			if more, err := w.dir(ctx, e.abs, segs, depth+1); !more || err != nil {
				return more, err
			}
		}
	}
	return true, nil
}

func (w *walker) ignored(segs []string, isDir bool) bool {
	for _, r := range w.rules {
		if r.matches(segs, isDir) {
			return true
		}
	}
	return false
}
