package gittools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jazz-run/jazz/safefile"
	"github.com/jazz-run/jazz/tools"
)

// git_add's plan proves the files were what the preview showed a moment
// ago, but `git add` reads them again when it runs: whatever rewrote one
// in between (an auto-approved command of the same batch, a process
// started earlier) would have its bytes staged under the approval. So the
// twin does not let git read the work tree. It pins the index (pin.go),
// reads each approved path once, derives the path's preview state again
// from exactly the bytes and mode it read, and refuses unless every path
// is as the preview showed it; what it stages is those bytes, written as
// blobs by `git hash-object` from its own stdin and entered into the
// pinned copy by `git update-index --index-info`, which reads no file.

// indexEntry is one line of `git update-index -z --index-info`: the mode
// "0" removes the path.
type indexEntry struct {
	mode, oid, path string
}

const nullOid = "0000000000000000000000000000000000000000"

// stagingRules are the settings that decide the mode `git add` gives a
// file: without core.fileMode the executable bit is not trusted (an entry
// keeps its mode, a new file is 100644).
type stagingRules struct {
	fileMode, symlinks bool
}

func (r *repo) stagingRules(ctx context.Context) (stagingRules, *tools.Result) {
	get := func(key string) (bool, *tools.Result) {
		res := r.cmd(true).run(ctx, DefaultTimeout, "config", "--type=bool", "--default=true", "--get", key)
		if !res.ok() {
			return false, fail(res.failure("git config", r.dir))
		}
		return strings.TrimSpace(res.stdout) == "true", nil
	}
	fm, f := get("core.fileMode")
	if f != nil {
		return stagingRules{}, f
	}
	sl, f := get("core.symlinks")
	if f != nil {
		return stagingRules{}, f
	}
	return stagingRules{fileMode: fm, symlinks: sl}, nil
}

// entriesOf is the pinned index's entries at exactly paths (stage 0 and
// conflict stages alike), by path: their modes, as `ls-files --stage`
// prints them.
func (p *pinnedIndex) entriesOf(ctx context.Context, paths []string) (map[string][]string, *tools.Result) {
	out := map[string][]string{}
	if len(paths) == 0 {
		return out, nil
	}
	g := p.r.cmdWith(p.file)
	g.readOnly = true
	res := g.run(ctx, DefaultTimeout, append([]string{"--literal-pathspecs", "ls-files", "--stage", "-z", "--"}, paths...)...)
	if !res.ok() {
		return nil, fail(res.failure("git ls-files", p.r.dir))
	}
	if res.stdoutTruncated {
		return nil, fail(fmt.Sprintf("the index entries of the paths to stage are over %d bytes; name fewer files.", StreamCap))
	}
	for _, rec := range strings.Split(strings.TrimSuffix(res.stdout, "\x00"), "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		mode, _, _ := strings.Cut(meta, " ")
		out[path] = append(out[path], mode)
	}
	return out, nil
}

// readOnce reads the work-tree path p once, as git_add would stage it:
// its state as contentState describes it, derived from the bytes read,
// and the entry staging those bytes (their blob written by git from the
// same read). A path that is gone is staged as a removal; a directory (a
// submodule or another repository), a FIFO or a device is refused, as is
// a path whose parent is not a directory of the work tree.
func (p *pinnedIndex) readOnce(ctx context.Context, path string, rules stagingRules, modes []string) (state string, e indexEntry, f *tools.Result) {
	abs := filepath.Join(p.r.top, path)
	e.path = path
	fi, err := os.Lstat(abs)
	if err != nil {
		if !os.IsNotExist(err) {
			return "", e, fail(fmt.Sprintf("read %s: %v; nothing was changed.", disp(abs), err))
		}
		e.mode, e.oid = "0", nullOid
		return "missing", e, nil
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		if !rules.symlinks {
			return "", e, fail(fmt.Sprintf("%s is a symbolic link and core.symlinks is off here; git_add stages no link it would store as a file. Nothing was changed.", disp(path)))
		}
		target, err := os.Readlink(abs)
		if err != nil {
			return "", e, fail(fmt.Sprintf("read the link %s: %v; nothing was changed.", disp(abs), err))
		}
		oid, f := p.blob(ctx, strings.NewReader(target), "")
		if f != nil {
			return "", e, f
		}
		e.mode, e.oid = "120000", oid
		return linkState(target), e, nil
	case fi.Mode().IsRegular():
		file, err := safefile.OpenStated(abs, fi)
		if err != nil {
			return "", e, fail(fmt.Sprintf("read %s: %v; nothing was changed.", disp(abs), err))
		}
		defer file.Close()
		// The descriptor's own mode: the one of the bytes read.
		mode := file.Info.Mode()
		h := sha256.New()
		oid, f := p.blob(ctx, io.TeeReader(file, h), path)
		if f != nil {
			return "", e, f
		}
		e.mode, e.oid = "100644", oid
		if rules.fileMode && mode&0o100 != 0 {
			e.mode = "100755"
		}
		if !rules.fileMode && len(modes) == 1 && (modes[0] == "100644" || modes[0] == "100755") {
			e.mode = modes[0] // the executable bit is not trusted: the entry keeps its mode
		}
		if len(modes) == 1 && modes[0] == "120000" && !rules.symlinks {
			return "", e, fail(fmt.Sprintf("%s is a symbolic link in the index and core.symlinks is off here; git_add does not stage it. Nothing was changed.", disp(path)))
		}
		return fileState(mode, h.Sum(nil)), e, nil
	}
	what := safefile.KindOf(fi.Mode())
	if fi.IsDir() {
		what = "directory (a submodule or a repository of its own)"
	}
	return "", e, fail(fmt.Sprintf("%s is a %s; git_add stages only files and symbolic links. Nothing was changed.", disp(path), what))
}

// blob writes what src holds as a blob, through the conversions git add
// applies to a file at path (end of line, the attributes' filters; none
// when path is "", as for a link's target), and returns its id. src is
// read to its end by git, or the call fails.
func (p *pinnedIndex) blob(ctx context.Context, src io.Reader, path string) (string, *tools.Result) {
	args := []string{"hash-object", "-w", "--stdin"}
	if path != "" {
		args = append(args, "--path="+path)
	}
	res := p.r.cmdWith(p.file).exec(ctx, DefaultTimeout, src, nil, args)
	if !res.ok() {
		return "", fail(res.failure("git hash-object", p.r.dir) + "; nothing was changed.")
	}
	oid := strings.TrimSpace(res.stdout)
	if (len(oid) != 40 && len(oid) != 64) || strings.Trim(oid, "0123456789abcdef") != "" {
		return "", fail(fmt.Sprintf("git hash-object in %s answered %q, not an object id; nothing was changed.", disp(p.r.top), firstLine(res.stdout)))
	}
	return oid, nil
}

// enter writes entries into the pinned copy, reading no file.
func (p *pinnedIndex) enter(ctx context.Context, entries []indexEntry) *tools.Result {
	var in bytes.Buffer
	for _, e := range entries {
		oid := e.oid
		if e.mode == "0" && len(oid) == 0 {
			oid = nullOid
		}
		fmt.Fprintf(&in, "%s %s\t%s\x00", e.mode, oid, e.path)
	}
	res := p.r.cmdWith(p.file).runInput(ctx, DefaultTimeout, in.String(), "update-index", "-z", "--index-info")
	if !res.ok() {
		return fail(res.failure("git update-index", p.r.dir) + "; nothing was changed.")
	}
	return nil
}

// stagePaths reads each of paths once (readOnce), checks that together
// they are the content the preview fingerprinted (want, a contentState
// line) and stages exactly what was read into the pinned copy.
func (p *pinnedIndex) stagePaths(ctx context.Context, paths []string, want string) *tools.Result {
	rules, f := p.r.stagingRules(ctx)
	if f != nil {
		return f
	}
	modes, f := p.entriesOf(ctx, paths)
	if f != nil {
		return f
	}
	states := make([]string, len(paths))
	entries := make([]indexEntry, len(paths))
	for i, path := range paths {
		if ms := modes[path]; len(ms) == 1 && ms[0] == "160000" {
			return fail(fmt.Sprintf("%s is a submodule; git_add does not stage a submodule's commit. Nothing was changed.", disp(path)))
		}
		if states[i], entries[i], f = p.readOnce(ctx, path, rules, modes[path]); f != nil {
			return f
		}
	}
	if got := contentLine(paths, states); got != want {
		return fail(changedMessage(p.r) + " (a file to stage differs from the preview)")
	}
	return p.enter(ctx, entries)
}

// namesFit refuses a repository holding a name that a dry run's
// line-per-path list cannot show as it is: a name with a line break
// prints as two lines, which can read as other paths (`x'`, a newline,
// `add 'README`), and the twin stages the paths the list showed. Only the
// names git could list are looked at: tracked ones and untracked ones
// that are not ignored.
func (r *repo) namesFit(ctx context.Context, cmd string) *tools.Result {
	res := r.cmd(true).run(ctx, DefaultTimeout, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*\n*")
	if !res.ok() {
		return fail(res.failure("git ls-files", r.dir))
	}
	if name, _, _ := strings.Cut(res.stdout, "\x00"); name != "" {
		return fail(fmt.Sprintf("%s cannot show the path %q in a preview (a line break in a name reads as two paths); rename it first.", cmd, name))
	}
	return nil
}
