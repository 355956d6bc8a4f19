package readtools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/jazz-run/jazz/safefile"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/pathres"
)

type grepArgs struct {
	Pattern      string  `json:"pattern"`
	Path         *string `json:"path"`
	Recursive    *bool   `json:"recursive"`
	Regex        bool    `json:"regex"`
	IgnoreCase   *bool   `json:"ignoreCase"`
	MaxResults   *int    `json:"maxResults"`
	FilePattern  *string `json:"filePattern"`
	Exclude      *string `json:"exclude"`
	ExcludeDir   *string `json:"excludeDir"`
	ContextLines *int    `json:"contextLines"`
	OutputMode   string  `json:"outputMode"`
}

type contextLine struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

type grepMatch struct {
	File          string        `json:"file"`
	Line          int           `json:"line"`
	Text          string        `json:"text"`
	ContextBefore []contextLine `json:"contextBefore,omitzero"`
	ContextAfter  []contextLine `json:"contextAfter,omitzero"`
}

// grepContent is content mode's result; optional echoes are omitted when
// not given, as the original's undefined fields are.
type grepContent struct {
	Pattern      string      `json:"pattern"`
	SearchPath   string      `json:"searchPath"`
	Recursive    bool        `json:"recursive"`
	Regex        bool        `json:"regex"`
	IgnoreCase   *bool       `json:"ignoreCase,omitempty"`
	FilePattern  *string     `json:"filePattern,omitempty"`
	Exclude      *string     `json:"exclude,omitempty"`
	ExcludeDir   *string     `json:"excludeDir,omitempty"`
	ContextLines *int        `json:"contextLines,omitempty"`
	OutputMode   string      `json:"outputMode"`
	Backend      string      `json:"backend"`
	Matches      []grepMatch `json:"matches"`
	TotalFound   int         `json:"totalFound"`
	Truncated    bool        `json:"truncated"`
	Message      string      `json:"message"`
}

type fileCount struct {
	File  string `json:"file"`
	Count int    `json:"count"`
}

// grepList is files and count mode's result (Files or Counts set).
type grepList struct {
	Pattern    string      `json:"pattern"`
	SearchPath string      `json:"searchPath"`
	OutputMode string      `json:"outputMode"`
	Backend    string      `json:"backend"`
	Files      []string    `json:"files,omitempty"`
	Counts     []fileCount `json:"counts,omitempty"`
	TotalFound int         `json:"totalFound"`
	Truncated  bool        `json:"truncated"`
	Message    string      `json:"message"`
}

// grepQuery is a validated search, ready to become argv.
type grepQuery struct {
	grepArgs
	search    string // absolute file or directory
	isDir     bool
	recursive bool
	limit     int
	mode      string
	regex     bool
	expr      string
	// targets are what the child searches: the search path, or, when a
	// protected place lies inside it, everything around that place
	// (rgTargets without the dot entries rg would skip).
	targets, rgTargets []string
	guard              *secrets.Guard
	dir                string          // the child's working directory
	seen               map[string]bool // protected(), by reported name
}

func grepHandler(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a grepArgs
	if err := decode(raw, &a); err != nil {
		return badArgs(err)
	}
	q := grepQuery{grepArgs: a, search: env.Cwd(), mode: a.OutputMode, limit: maxResults(a.MaxResults)}
	if a.Path != nil && *a.Path != "" {
		q.search = resolve(env, *a.Path)
	}
	g := guard(env)
	if err := g.CheckSearch(q.search); err != nil {
		return tools.Fail(err.Error())
	}
	fi, err := os.Stat(q.search)
	if err != nil {
		if isMissing(err) && a.Path != nil {
			return tools.Fail(pathres.NotFound(env.Cwd(), *a.Path, q.search))
		}
		return tools.Fail(err.Error())
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		// A FIFO would block the child, a device never end.
		return tools.Fail("grep command failed: " + notRegular(q.search, safefile.KindOf(fi.Mode())))
	}
	q.isDir = fi.IsDir()
	q.targets, q.rgTargets = []string{q.search}, []string{q.search}
	if q.isDir {
		if q.targets, err = searchTargets(g, q.search, false); err != nil {
			return tools.Fail("grep command failed: " + err.Error())
		}
		q.rgTargets, _ = searchTargets(g, q.search, true)
	}
	q.guard = &g
	q.recursive = a.Recursive == nil || *a.Recursive
	if q.mode == "" {
		q.mode = "content"
	}
	body, prefixed := strings.CutPrefix(a.Pattern, "re:")
	q.regex = a.Regex || prefixed
	q.expr = a.Pattern
	if !a.Regex && prefixed {
		q.expr = body
	}

	dir := q.search
	if !q.isDir {
		dir = filepath.Dir(q.search)
	}
	q.dir = dir
	backend := "grep"
	var out childOutput
	if _, err := exec.LookPath("rg"); err == nil {
		backend = "ripgrep"
		out = runCapped(ctx, env.Secrets.Redactor(), dir, "rg", q.ripgrepArgs()...)
		if out.exitCode > 1 || out.err != nil {
			// The spec falls back to grep when rg fails, but keeps
			// reporting the backend it chose first.
			out = runCapped(ctx, env.Secrets.Redactor(), dir, "grep", q.systemGrepArgs()...)
		}
	} else {
		out = runCapped(ctx, env.Secrets.Redactor(), dir, "grep", q.systemGrepArgs()...)
	}
	switch {
	case out.timedOut:
		return tools.Fail(fmt.Sprintf("grep command failed: timed out after %s", ChildTimeout))
	case out.err != nil:
		return tools.Fail("grep command failed: " + out.err.Error())
	case out.exitCode > 1:
		return tools.Fail(withCapNote("grep command failed: "+strings.TrimSpace(out.stderr), out.stderrTruncated))
	}
	return q.result(backend, out)
}

func (q *grepQuery) ripgrepArgs() []string {
	args := []string{"--with-filename", "--null", "--no-heading", "--color=never"}
	targets := q.rgTargets
	if q.isDir && !q.recursive {
		if q.expanded() {
			// Named targets would each get a level of their own: search
			// the directory's own files instead, as grep does.
			targets = dirFiles(q.search, q.guard)
		} else {
			args = append(args, "--max-depth", "1")
		}
	}
	args = append(args, q.commonFlags()...)
	if q.FilePattern != nil && *q.FilePattern != "" {
		args = append(args, "-g", *q.FilePattern)
	}
	if q.Exclude != nil && *q.Exclude != "" {
		args = append(args, "-g", "!"+*q.Exclude)
	}
	if q.ExcludeDir != nil && *q.ExcludeDir != "" {
		args = append(args, "-g", "!"+*q.ExcludeDir+"/")
	}
	if !q.regex {
		args = append(args, "--fixed-strings")
	}
	return append(append(args, "-e", q.expr, "--"), targets...)
}

func (q *grepQuery) systemGrepArgs() []string {
	// -D skip: a FIFO, device or socket met in the tree is not read.
	args := []string{"-H", "-Z", "--color=never", "-D", "skip"}
	targets := q.targets
	switch {
	case q.isDir && q.recursive:
		args = append(args, "-r")
	case q.isDir:
		// grep has no depth limit: search the directory's own files.
		args = append(args, "-d", "skip")
		targets = dirFiles(q.search, q.guard)
	}
	args = append(args, q.commonFlags()...)
	if q.FilePattern != nil && *q.FilePattern != "" {
		args = append(args, "--include", *q.FilePattern)
	}
	if q.Exclude != nil && *q.Exclude != "" {
		args = append(args, "--exclude", *q.Exclude)
	}
	if q.ExcludeDir != nil && *q.ExcludeDir != "" {
		args = append(args, "--exclude-dir", *q.ExcludeDir)
	}
	if q.regex {
		args = append(args, "-E")
	} else {
		args = append(args, "-F")
	}
	args = append(args, "-e", q.expr, "--")
	return append(args, targets...)
}

// expanded says whether the search path had to be split around a
// protected place.
func (q *grepQuery) expanded() bool {
	return len(q.targets) != 1 || q.targets[0] != q.search
}

// commonFlags are spelled the same by rg and grep.
func (q *grepQuery) commonFlags() []string {
	var args []string
	if q.IgnoreCase != nil && *q.IgnoreCase {
		args = append(args, "-i")
	}
	switch q.mode {
	case "files":
		args = append(args, "-l")
	case "count":
		args = append(args, "-c")
	default:
		args = append(args, "-n")
		if c := intOr(q.ContextLines, 0); c > 0 {
			args = append(args, "-C", strconv.Itoa(c))
		}
	}
	return append(args, "-m", strconv.Itoa(q.limit))
}

// dirFiles lists a directory's visible regular files for a flat search,
// less the protected ones; /dev/null keeps grep from reading stdin when
// there are none.
func dirFiles(dir string, g *secrets.Guard) []string {
	out := []string{os.DevNull}
	canon := dir
	if g != nil {
		canon, _ = g.Resolve(dir)
	}
	list, _ := os.ReadDir(dir)
	for _, d := range list {
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") &&
			(g == nil || !g.Excluded(filepath.Join(canon, d.Name()))) {
			out = append(out, filepath.Join(dir, d.Name()))
		}
	}
	return out
}

// searchTargets is what a recursive search of root may be handed so that
// it never enters a protected place (/proc, JAZZ_HOME, a secret file):
// root itself when none lies inside it; else, level by level down to each
// such place, the entries beside it. Entries passed this way are named
// on the command line, where grep and rg follow symlinks and read FIFOs,
// so symlinks and special files among them are left out (a recursive
// walk would not follow or read them either); so are dot entries when
// skipDot (rg skips them in a walk, but searches them when named).
func searchTargets(g secrets.Guard, root string, skipDot bool) ([]string, error) {
	canon, err := g.Resolve(root)
	if err != nil {
		return nil, err
	}
	var inside []string
	for _, z := range g.Zones() {
		if z != canon && secrets.Within(z, canon) {
			inside = append(inside, z)
		}
	}
	leadsIn := func(p string) bool {
		return slices.ContainsFunc(inside, func(z string) bool { return secrets.Within(z, p) })
	}
	if len(inside) == 0 {
		return []string{root}, nil
	}
	var out []string
	var expand func(dir string)
	expand = func(dir string) {
		list, _ := os.ReadDir(dir)
		for _, d := range list {
			p := filepath.Join(dir, d.Name())
			switch {
			case slices.Contains(inside, p), g.Excluded(p):
				// the protected place itself
			case d.IsDir() && leadsIn(p):
				expand(p)
			case skipDot && strings.HasPrefix(d.Name(), "."):
			case d.IsDir() || d.Type().IsRegular():
				out = append(out, p)
			}
		}
	}
	expand(canon)
	if len(out) == 0 {
		out = []string{os.DevNull} // nothing left to search, and never stdin
	}
	return out, nil
}

func (q *grepQuery) result(backend string, out childOutput) tools.Result {
	p := fmt.Sprintf("%q", q.Pattern)
	switch q.mode {
	case "files":
		var files []string
		for _, f := range strings.FieldsFunc(out.stdout, func(r rune) bool { return r == 0 || r == '\n' }) {
			if f = strings.TrimSpace(f); f != "" && len(files) < q.limit && !q.protected(f) {
				files = append(files, f)
			}
		}
		msg := fmt.Sprintf("Found %d files matching pattern %s", len(files), p)
		if len(files) == 0 {
			msg = "No files found matching pattern " + p
			files = []string{}
		}
		r := grepList{Pattern: q.Pattern, SearchPath: q.search, OutputMode: q.mode, Backend: backend,
			Files: files, TotalFound: len(files), Truncated: out.stdoutTruncated, Message: withCapNote(msg, out.stdoutTruncated)}
		return tools.Result{Success: true, Value: r, Truncated: r.Truncated}
	case "count":
		counts := []fileCount{}
		for _, line := range strings.Split(out.stdout, "\n") {
			file, rest, ok := strings.Cut(line, "\x00")
			n, err := strconv.Atoi(strings.TrimSpace(rest))
			if ok && err == nil && n > 0 && len(counts) < q.limit && !q.protected(file) {
				counts = append(counts, fileCount{File: file, Count: n})
			}
		}
		msg := fmt.Sprintf("Found matches in %d files for pattern %s", len(counts), p)
		if len(counts) == 0 {
			msg = "No matches found for pattern " + p
		}
		r := grepList{Pattern: q.Pattern, SearchPath: q.search, OutputMode: q.mode, Backend: backend,
			Counts: counts, TotalFound: len(counts), Truncated: out.stdoutTruncated, Message: withCapNote(msg, out.stdoutTruncated)}
		if len(counts) == 0 {
			r.Counts = nil
		}
		return tools.Result{Success: true, Value: countView(r), Truncated: r.Truncated}
	}
	ctxLines := intOr(q.ContextLines, 0)
	matches := slices.DeleteFunc(parseContent(out.stdout, ctxLines > 0), func(m grepMatch) bool { return q.protected(m.File) })
	if len(matches) > q.limit {
		matches = matches[:q.limit]
	}
	msg := "No matches found for pattern " + p
	if len(matches) > 0 {
		msg = fmt.Sprintf("Found %d matches for pattern %s", len(matches), p)
		if ctxLines > 0 {
			msg += fmt.Sprintf(" (with %d context lines)", ctxLines)
		}
		if q.MaxResults != nil && *q.MaxResults > q.limit {
			msg += fmt.Sprintf(" (capped at %d)", q.limit)
		}
	}
	r := grepContent{Pattern: q.Pattern, SearchPath: q.search, Recursive: q.recursive, Regex: q.regex,
		IgnoreCase: q.IgnoreCase, FilePattern: q.FilePattern, Exclude: q.Exclude, ExcludeDir: q.ExcludeDir,
		ContextLines: q.ContextLines, OutputMode: q.mode, Backend: backend, Matches: matches,
		TotalFound: len(matches), Truncated: out.stdoutTruncated, Message: withCapNote(msg, out.stdoutTruncated)}
	return tools.Result{Success: true, Value: r, Truncated: r.Truncated}
}

// protected says whether a file the child reported is one the Guard
// refuses: what it says about such a file is dropped, so not even a count
// tells whether a secret there starts with the pattern. The child is kept
// out of protected places to begin with (searchTargets); this catches
// what a path cannot show, such as a hard link of a protected file.
func (q *grepQuery) protected(file string) bool {
	if q.guard == nil {
		return false
	}
	if v, ok := q.seen[file]; ok {
		return v
	}
	abs := file
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(q.dir, file)
	}
	refused := q.guard.Check(abs) != nil
	if q.seen == nil {
		q.seen = map[string]bool{}
	}
	q.seen[file] = refused
	return refused
}

// countView makes count mode always carry `counts`, even when empty.
func countView(r grepList) any {
	type view struct {
		Pattern    string      `json:"pattern"`
		SearchPath string      `json:"searchPath"`
		OutputMode string      `json:"outputMode"`
		Backend    string      `json:"backend"`
		Counts     []fileCount `json:"counts"`
		TotalFound int         `json:"totalFound"`
		Truncated  bool        `json:"truncated"`
		Message    string      `json:"message"`
	}
	if r.Counts == nil {
		r.Counts = []fileCount{}
	}
	return view{r.Pattern, r.SearchPath, r.OutputMode, r.Backend, r.Counts, r.TotalFound, r.Truncated, r.Message}
}

func withCapNote(msg string, truncated bool) string {
	if !truncated {
		return msg
	}
	return msg + " Output truncated at 262144 bytes; narrow the path or pattern."
}

// outLine is one parsed `file\0line:text` (match) or `file\0line-text`
// (context) line; the NUL after the name (-Z / --null) keeps names and
// text with colons or digits unambiguous.
type outLine struct {
	file    string
	line    int
	text    string
	isMatch bool
}

func parseLine(s string) (outLine, bool) {
	file, rest, ok := strings.Cut(s, "\x00")
	if !ok || file == "" {
		return outLine{}, false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || i == len(rest) || (rest[i] != ':' && rest[i] != '-') {
		return outLine{}, false
	}
	n, _ := strconv.Atoi(rest[:i])
	return outLine{file: file, line: n, text: rest[i+1:], isMatch: rest[i] == ':'}, true
}

// parseContent turns content-mode output into matches. Within a
// `--`-separated block, the context lines (same file) between two matches
// are both the "after" context of the first and the "before" context of
// the second, as in the original. Each (file, line) match appears once.
func parseContent(stdout string, withContext bool) []grepMatch {
	matches := []grepMatch{}
	seen := map[string]bool{}
	var block []outLine
	flush := func() {
		defer func() { block = block[:0] }()
		var idx []int
		for i, l := range block {
			if l.isMatch {
				idx = append(idx, i)
			}
		}
		for k, mi := range idx {
			m := block[mi]
			key := m.file + "\x00" + strconv.Itoa(m.line)
			if seen[key] {
				continue
			}
			seen[key] = true
			gm := grepMatch{File: m.file, Line: m.line, Text: m.text}
			if withContext {
				prev, next := -1, len(block)
				if k > 0 {
					prev = idx[k-1]
				}
				if k+1 < len(idx) {
					next = idx[k+1]
				}
				gm.ContextBefore, gm.ContextAfter = []contextLine{}, []contextLine{}
				for j := prev + 1; j < mi; j++ {
					if c := block[j]; c.file == m.file {
						gm.ContextBefore = append(gm.ContextBefore, contextLine{c.line, c.text})
					}
				}
				for j := mi + 1; j < next; j++ {
					if c := block[j]; c.file == m.file {
						gm.ContextAfter = append(gm.ContextAfter, contextLine{c.line, c.text})
					}
				}
			}
			matches = append(matches, gm)
		}
	}
	for _, s := range strings.Split(stdout, "\n") {
		if s == "--" {
			flush()
			continue
		}
		if l, ok := parseLine(s); ok {
			block = append(block, l)
		}
	}
	flush()
	return matches
}
