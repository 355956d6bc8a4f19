package readtools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

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
	fi, err := os.Stat(q.search)
	if err != nil {
		if isMissing(err) && a.Path != nil {
			return tools.Fail(pathres.NotFound(env.Cwd(), *a.Path, q.search))
		}
		return tools.Fail(err.Error())
	}
	q.isDir = fi.IsDir()
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
	backend := "grep"
	var out childOutput
	if _, err := exec.LookPath("rg"); err == nil {
		backend = "ripgrep"
		out = runCapped(ctx, dir, "rg", q.ripgrepArgs()...)
		if out.exitCode > 1 || out.err != nil {
			// The spec falls back to grep when rg fails, but keeps
			// reporting the backend it chose first.
			out = runCapped(ctx, dir, "grep", q.systemGrepArgs()...)
		}
	} else {
		out = runCapped(ctx, dir, "grep", q.systemGrepArgs()...)
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
	if q.isDir && !q.recursive {
		args = append(args, "--max-depth", "1")
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
	return append(args, "-e", q.expr, "--", q.search)
}

func (q *grepQuery) systemGrepArgs() []string {
	args := []string{"-H", "-Z", "--color=never"}
	targets := []string{q.search}
	switch {
	case q.isDir && q.recursive:
		args = append(args, "-r")
	case q.isDir:
		// grep has no depth limit: search the directory's own files.
		args = append(args, "-d", "skip")
		targets = dirFiles(q.search)
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

// dirFiles lists a directory's visible regular files for a flat search;
// /dev/null keeps grep from reading stdin when there are none.
func dirFiles(dir string) []string {
	out := []string{os.DevNull}
	list, _ := os.ReadDir(dir)
	for _, d := range list {
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			out = append(out, filepath.Join(dir, d.Name()))
		}
	}
	return out
}

func (q *grepQuery) result(backend string, out childOutput) tools.Result {
	p := fmt.Sprintf("%q", q.Pattern)
	switch q.mode {
	case "files":
		var files []string
		for _, f := range strings.FieldsFunc(out.stdout, func(r rune) bool { return r == 0 || r == '\n' }) {
			if f = strings.TrimSpace(f); f != "" && len(files) < q.limit {
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
			if ok && err == nil && n > 0 && len(counts) < q.limit {
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
	matches := parseContent(out.stdout, ctxLines > 0)
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
