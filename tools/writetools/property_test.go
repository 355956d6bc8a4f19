package writetools

import (
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/pathres"
)

// TestPropertyTwinDoesWhatWasNamedOrRefuses closes the class of issue 10
// item 1: for random trees of directories, files and symbolic links
// (relative, absolute, dangling, loops) and random retargets between
// propose and execute, a twin either does exactly what the approved
// message named, at the real paths it named, and nothing else; or it
// refuses and changes nothing. The oracle reads only the message a
// person approved and the tree before and after.
func TestPropertyTwinDoesWhatWasNamedOrRefuses(t *testing.T) {
	cases := 300
	if testing.Short() {
		cases = 120
	}
	fdsBefore := openFDs(t)
	stats := map[string]int{}
	for seed := range cases {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			tool, outcome := propertyCase(t, uint64(seed))
			stats[outcome]++
			stats[tool+" "+outcome]++
		})
	}
	t.Logf("outcomes: %v", stats)
	if after := openFDs(t); after > fdsBefore {
		t.Errorf("%d descriptors open before the cases, %d after: the walk or a twin leaks them", fdsBefore, after)
	}
	// The generator must reach every outcome, or the property is vacuous.
	for _, k := range []string{"done", "refused"} {
		if stats[k] < cases/20 {
			t.Errorf("only %d cases ended %q: the generator does not exercise it", stats[k], k)
		}
	}
}

// entry is what a path is, links not followed.
type entry struct {
	kind    string // file, dir, link
	content string // a file's
	link    string // a link's target
	mode    fs.FileMode
}

// snapshot maps every path under dir to its entry.
func snapshot(t *testing.T, dir string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{mode: fi.Mode()}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			e.kind = "link"
			e.link, err = os.Readlink(p)
		case fi.IsDir():
			e.kind = "dir"
		case !fi.Mode().IsRegular():
			e.kind = fi.Mode().Type().String() // a FIFO: never opened
		default:
			e.kind = "file"
			var b []byte
			b, err = os.ReadFile(p)
			e.content = string(b)
		}
		out[p] = e
		return err
	})
	must(t, err)
	return out
}

// world builds and disturbs a random tree under root.
type world struct {
	t    *testing.T
	rng  *rand.Rand
	root string
}

var propertyNames = []string{"a", "b", "c", "A", "B", ".git"}

func (w *world) name() string { return propertyNames[w.rng.IntN(len(propertyNames))] }

// randPath is a path under root of 1-3 names, existing or not.
func (w *world) randPath() string {
	parts := []string{w.root}
	for range 1 + w.rng.IntN(3) {
		parts = append(parts, w.name())
	}
	return filepath.Join(parts...)
}

// opPath is a path for an operation: mostly an existing entry, or one
// more name under it, else anything.
func (w *world) opPath() string {
	es := w.entries("")
	if len(es) > 0 && w.rng.IntN(2) == 0 {
		// Through a link: the case that matters.
		var via []string
		for _, p := range es {
			if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil && r != filepath.Dir(p) {
				via = append(via, p)
			}
			if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				via = append(via, p)
			}
		}
		if len(via) > 0 {
			p := via[w.rng.IntN(len(via))]
			if w.rng.IntN(2) == 0 {
				p = filepath.Join(p, w.name()) // through the link
			}
			return p
		}
	}
	if len(es) > 0 && w.rng.IntN(10) < 7 {
		p := es[w.rng.IntN(len(es))]
		if w.rng.IntN(3) == 0 {
			p = filepath.Join(p, w.name())
		}
		return p
	}
	return w.randPath()
}

// pick chooses from list, preferring entries on the way to one of focus
// (the paths the operation acts on), which is where a change matters.
func (w *world) pick(list, focus []string) string {
	var near []string
	for _, p := range list {
		for _, f := range focus {
			if under(f, p) {
				near = append(near, p)
				break
			}
		}
	}
	if len(near) > 0 && w.rng.IntN(4) != 0 {
		return near[w.rng.IntN(len(near))]
	}
	return list[w.rng.IntN(len(list))]
}

// dirs lists the real directories under root (links not followed).
func (w *world) dirs() []string {
	var out []string
	filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && filepath.Base(p) != "home" {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// entries lists everything under root but root and home.
func (w *world) entries(kind string) []string {
	var out []string
	for p, e := range snapshot(w.t, w.root) {
		if p != w.root && !strings.HasPrefix(p, filepath.Join(w.root, "home")) && (kind == "" || e.kind == kind) {
			out = append(out, p)
		}
	}
	// Map order is random; the world must be reproducible from its seed.
	sortStrings(out)
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// linkTarget is a random target for a link placed in dir: relative or
// absolute, into the tree, dangling, or back to itself.
func (w *world) linkTarget(dir, self string) string {
	target := w.randPath()
	if ds := w.dirs(); w.rng.IntN(2) == 0 {
		target = ds[w.rng.IntN(len(ds))] // an existing directory
	}
	switch w.rng.IntN(6) {
	case 0:
		return target // absolute, maybe dangling
	case 1:
		if w.rng.IntN(2) == 0 {
			return filepath.Base(self) // a loop
		}
		return "."
	}
	rel, err := filepath.Rel(dir, target)
	must(w.t, err)
	return rel // relative, maybe with ..
}

func (w *world) build() {
	for _, d := range []string{"A", "B", "J"} {
		must(w.t, os.Mkdir(filepath.Join(w.root, d), 0o755))
	}
	must(w.t, os.WriteFile(filepath.Join(w.root, "J", "config.json"), []byte("{}\n"), 0o600))
	for range 14 {
		ds := w.dirs()
		dir := ds[w.rng.IntN(len(ds))]
		p := filepath.Join(dir, w.name())
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		switch w.rng.IntN(3) {
		case 0:
			must(w.t, os.Mkdir(p, 0o755))
		case 1:
			must(w.t, os.WriteFile(p, []byte("old "+p+"\n"), 0o644))
		default:
			must(w.t, os.Symlink(w.linkTarget(dir, p), p))
		}
	}
}

// disturb makes n random changes of the kind an attacker races in,
// mostly on the way to focus.
func (w *world) disturb(n int, focus []string) {
	// JAZZ_HOME (J) is out of reach of anything racing the tools: the
	// commands a run starts see it as an empty read-only mount.
	outside := func(list []string) []string {
		return slices.DeleteFunc(list, func(p string) bool { return under(p, filepath.Join(w.root, "J")) })
	}
	for range n {
		switch w.rng.IntN(9) {
		case 0: // retarget a link
			if ls := outside(w.entries("link")); len(ls) > 0 {
				l := w.pick(ls, focus)
				must(w.t, os.Remove(l))
				must(w.t, os.Symlink(w.linkTarget(filepath.Dir(l), l), l))
			}
		case 1: // a directory swapped for a link to it, moved
			if ds := outside(w.dirs()); len(ds) > 1 {
				d := w.pick(ds[1:], focus)

				moved := d + "-moved"
				if os.Rename(d, moved) == nil {
					must(w.t, os.Symlink(moved, d))
				}
			}
		case 2: // a link replaced by a real directory
			if ls := outside(w.entries("link")); len(ls) > 0 {
				l := w.pick(ls, focus)
				must(w.t, os.Remove(l))
				must(w.t, os.Mkdir(l, 0o755))
			}
		case 3: // a file rewritten
			if files := outside(w.entries("file")); len(files) > 0 {
				must(w.t, os.WriteFile(w.pick(files, focus), []byte("rewritten\n"), 0o644))
			}
		case 4: // something appears
			p := w.randPath()
			if under(p, filepath.Join(w.root, "J")) {
				continue
			}
			if fi, err := os.Stat(filepath.Dir(p)); err == nil && fi.IsDir() {
				os.WriteFile(p, []byte("appeared\n"), 0o644) // may fail: p is a dir or a dangling link's target
			}
		case 5: // a file's mode changed, its bytes kept
			if files := outside(w.entries("file")); len(files) > 0 {
				must(w.t, os.Chmod(w.pick(files, focus), fs.FileMode(0o600+w.rng.IntN(2)*0o155)))
			}
		case 6: // a file removed and made again with the same bytes (the
			// freed inode number is often reused)
			if files := outside(w.entries("file")); len(files) > 0 {
				f := w.pick(files, focus)
				b, err := os.ReadFile(f)
				must(w.t, err)
				must(w.t, os.Remove(f))
				must(w.t, os.WriteFile(f, b, 0o644))
			}
		case 7: // a file replaced by a hard link of another with its bytes
			if files := outside(w.entries("file")); len(files) > 0 {
				f := w.pick(files, focus)
				b, err := os.ReadFile(f)
				must(w.t, err)
				other := filepath.Join(filepath.Dir(w.root), fmt.Sprintf("other-%d", w.rng.Int()))
				must(w.t, os.WriteFile(other, b, 0o644))
				must(w.t, os.Remove(f))
				must(w.t, os.Link(other, f))
			}
		case 8: // a file replaced by a FIFO
			if files := outside(w.entries("file")); len(files) > 0 {
				f := w.pick(files, focus)
				must(w.t, os.Remove(f))
				must(w.t, syscall.Mkfifo(f, 0o644))
			}
		}
	}
}

var notePattern = regexp.MustCompile(`Through symbolic links, (.+?) is (.+?)\.(\n|$)`)

// named reads the real paths the approved message names: each path as
// written, through its "Through symbolic links" note when it has one.
func named(msg string, lexical ...string) []string {
	real := map[string]string{}
	for _, m := range notePattern.FindAllStringSubmatch(msg, -1) {
		real[m[1]] = m[2]
	}
	out := make([]string, len(lexical))
	for i, l := range lexical {
		out[i] = l
		if r, ok := real[l]; ok {
			out[i] = r
		}
	}
	return out
}

func under(p, base string) bool { return p == base || strings.HasPrefix(p, base+"/") }

func propertyCase(t *testing.T, seed uint64) (string, string) {
	h := newHarness(t)
	w := &world{t: t, rng: rand.New(rand.NewPCG(seed, 7)), root: h.root}
	w.build()
	jazzHome := filepath.Join(h.root, "J")
	h.env.JazzHome = jazzHome
	rel := func(p string) string { r, _ := filepath.Rel(h.root, p); return r }
	marker := fmt.Sprintf("NEW %d\n", seed)
	var tool string
	var args E
	var lexical []string
	var r tools.Result
	scope := filepath.Dir(h.root) // what a relative link with .. can reach
	// Propose halves mutate nothing, so several tries are free: the first
	// that asks for approval is the case.
	for try := 0; r.Approval == nil; try++ {
		if try == 20 {
			return tool, "no approval"
		}
		src, dst := w.opPath(), w.opPath()
		switch seed % 6 {
		case 0:
			tool, args = "write_file", E{"path": rel(src), "content": marker, "createDirs": w.rng.IntN(2) == 0}
		case 1:
			tool, args = "edit_file", E{"path": rel(src), "edits": []E{{"type": "insert", "line": 0, "content": strings.TrimSuffix(marker, "\n")}}}
		case 2:
			tool, args = "mkdir", E{"path": rel(src)}
		case 3:
			tool, args = "rm", E{"path": rel(src), "recursive": true}
		case 4:
			tool, args = "mv", E{"source": rel(src), "destination": rel(dst), "force": w.rng.IntN(2) == 0}
		case 5:
			tool, args = "cp", E{"source": rel(src), "destination": rel(dst), "force": w.rng.IntN(2) == 0}
		}
		lexical = []string{pathres.Resolve(h.root, h.home, rel(src))}
		if tool == "mv" || tool == "cp" {
			lexical = append(lexical, pathres.Resolve(h.root, h.home, rel(dst)))
		}
		pre := snapshot(t, scope)
		r = h.call(tool, args)
		if got := snapshot(t, scope); !equalSnap(pre, got) {
			t.Fatalf("%s %v: a propose half changed the tree", tool, args)
		}
	}
	names := named(r.Approval.Message, lexical...)
	for _, n := range names {
		if under(n, jazzHome) {
			t.Fatalf("%s %v: asked to approve a change inside JAZZ_HOME:\n%s", tool, args, r.Approval.Message)
		}
	}
	for _, n := range names {
		if !under(n, scope) {
			return tool, "out of scope" // a link leads outside this test's directory
		}
	}
	// What the person approved is a change of the tree as the preview
	// saw it: the oracle compares with that, not with the tree after
	// the race.
	atPreview := snapshot(t, scope)
	w.disturb(min(2, w.rng.IntN(4)), append(names, lexical...))
	before := snapshot(t, scope)
	res := h.approve(&r)
	after := snapshot(t, scope)
	changes := snapDiff(before, after)
	for _, l := range strings.Split(changes, "\n") {
		if l == "" {
			continue
		}
		p := strings.Fields(l)[1]
		if under(p, jazzHome) {
			t.Fatalf("%s %v changed JAZZ_HOME: %s", tool, args, l)
		}
		if r.Approval.HumanOnly == "" && slices.Contains(strings.Split(p, "/"), ".git") {
			t.Fatalf("%s %v changed %s, in a .git directory, with an approval any policy may give:\n%s", tool, args, p, r.Approval.Message)
		}
	}
	for p := range after {
		if strings.Contains(p, ".jazz-") {
			t.Fatalf("left a work file %s (%+v)", p, res)
		}
	}
	if !res.Success {
		if !equalSnap(before, after) {
			t.Fatalf("%s %v refused (%q) but changed the tree:\n%s", tool, args, res.Error, snapDiff(before, after))
		}
		if res.Error == "" {
			t.Fatal("refused without a message")
		}
		return tool, "refused"
	}
	// Done: the effect is at the named paths, and only there.
	expect := maps.Clone(before)
	realSrc := names[0]
	switch tool {
	case "write_file", "edit_file":
		content := marker
		if tool == "edit_file" {
			content = marker + atPreview[realSrc].content
		}
		mode := fs.FileMode(0o644)
		if e, ok := atPreview[realSrc]; ok {
			mode = e.mode
		}
		expect[realSrc] = entry{kind: "file", content: content, mode: mode}
		for d := filepath.Dir(realSrc); under(d, scope) && d != scope; d = filepath.Dir(d) {
			if _, ok := before[d]; ok {
				break
			}
			expect[d] = entry{kind: "dir", mode: fs.ModeDir | 0o755} // created with createDirs
		}
	case "mkdir":
		expect[realSrc] = entry{kind: "dir", mode: fs.ModeDir | 0o755}
	case "rm":
		for p := range before {
			if under(p, realSrc) {
				delete(expect, p)
			}
		}
	case "mv", "cp":
		realDst := names[1]
		for p := range before {
			if under(p, realDst) || tool == "mv" && under(p, realSrc) {
				delete(expect, p)
			}
		}
		for p, e := range before {
			if under(p, realSrc) {
				expect[realDst+strings.TrimPrefix(p, realSrc)] = e
			}
		}
	}
	if !equalSnap(expect, after) {
		t.Fatalf("%s %v did something other than its message named:\n%s\nnamed %v\ndiff expected→after:\n%s",
			tool, args, r.Approval.Message, names, snapDiff(expect, after))
	}
	return tool, "done"
}

func equalSnap(a, b map[string]entry) bool { return snapDiff(a, b) == "" }

func snapDiff(a, b map[string]entry) string {
	var lines []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			lines = append(lines, fmt.Sprintf("- %s %+v", k, v))
		} else if w != v && !(v.kind == "dir" && w.kind == "dir") {
			lines = append(lines, fmt.Sprintf("~ %s %+v → %+v", k, v, w))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			lines = append(lines, fmt.Sprintf("+ %s %+v", k, v))
		}
	}
	sortStrings(lines)
	return strings.Join(lines, "\n")
}

// openFDs counts this process's open descriptors (Linux; elsewhere 0).
func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(es)
}
