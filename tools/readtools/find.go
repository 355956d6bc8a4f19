package readtools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/pattern"
)

type findArgs struct {
	Path          *string  `json:"path"`
	Name          string   `json:"name"`
	Type          string   `json:"type"`
	MaxDepth      *int     `json:"maxDepth"`
	MinDepth      *int     `json:"minDepth"`
	MaxResults    *int     `json:"maxResults"`
	IncludeHidden bool     `json:"includeHidden"`
	Smart         *bool    `json:"smart"`
	PathPattern   string   `json:"pathPattern"`
	ExcludePaths  []string `json:"excludePaths"`
	CaseSensitive bool     `json:"caseSensitive"`
	Size          string   `json:"size"`
	Mtime         string   `json:"mtime"`
}

type findItem struct {
	Path string `json:"path"`
	Name string `json:"name"`
	Type string `json:"type"` // file, dir or symlink
}

type findResult struct {
	Results    []findItem `json:"results"`
	TotalFound int        `json:"totalFound"`
	Truncated  bool       `json:"truncated"`
	Message    string     `json:"message,omitempty"`
}

// findCapMessage is the spec's message when the listing hit the stream cap.
const findCapMessage = "Output truncated at 262144 bytes; more matches may exist. Narrow the path or pattern."

func findHandler(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a findArgs
	if err := decode(raw, &a); err != nil {
		return badArgs(err)
	}
	keep, err := findFilter(a, time.Now())
	if err != nil {
		return tools.Fail(err.Error())
	}
	roots, fail := findRoots(env, a)
	if fail != nil {
		return *fail
	}
	g := guard(env)
	limit := maxResults(a.MaxResults)
	maxDepth := max(intOr(a.MaxDepth, 25), 1) // 0 lists the root's children, like the glob backend
	ctx, cancel := context.WithTimeout(ctx, ChildTimeout)
	defer cancel()

	type hit struct {
		findItem
		mtime time.Time
	}
	var hits []hit
	seen := map[string]bool{}
	bytes, capped := 0, false
	enough := math.Min(float64(limit)/2, 10)
	for i, root := range roots {
		if i > 0 && float64(len(hits)) >= enough {
			break
		}
		w := walker{root: root, maxDepth: maxDepth, hidden: a.IncludeHidden, prune: excluder(a.ExcludePaths), guard: &g}
		w.visit = func(e entry) bool {
			if seen[e.abs] || !keep(e) {
				return true
			}
			seen[e.abs] = true
			// Count the bytes a find child would have printed, so the
			// cap and its message mean the same thing as with a child.
			if bytes += len(e.abs) + 1; bytes > StreamCap {
				capped = true
				return false
			}
			var mt time.Time
			if info, err := e.d.Info(); err == nil {
				mt = info.ModTime()
			}
			hits = append(hits, hit{findItem{Path: e.abs, Name: e.name, Type: entryType(e)}, mt})
			return true
		}
		if err := w.run(ctx); err != nil {
			return tools.Fail("find command failed: " + err.Error())
		}
		if capped {
			break
		}
	}
	slices.SortStableFunc(hits, func(x, y hit) int { return y.mtime.Compare(x.mtime) })
	res := findResult{Results: []findItem{}, TotalFound: len(hits), Truncated: capped || len(hits) > limit}
	for _, h := range hits[:min(limit, len(hits))] {
		res.Results = append(res.Results, h.findItem)
	}
	switch {
	case capped:
		res.Message = findCapMessage
	case len(hits) > limit:
		res.Message = fmt.Sprintf("Showing the %d most recently modified of %d matches. Narrow the path or pattern, or raise maxResults.", limit, len(hits))
	}
	return tools.Result{Success: true, Value: res, Truncated: res.Truncated}
}

// findRoots lists where to search: path, else (smart) the cwd unless it
// is $HOME, up to three ancestors short of `/`, then $HOME.
func findRoots(env *tools.Env, a findArgs) ([]string, *tools.Result) {
	if a.Path != nil && *a.Path != "" {
		abs := resolve(env, *a.Path)
		if err := guard(env).Check(abs); err != nil {
			r := tools.Fail(err.Error())
			return nil, &r
		}
		fi, err := os.Stat(abs)
		if err != nil {
			r := tools.Fail("find command failed: " + err.Error())
			return nil, &r
		}
		if !fi.IsDir() {
			r := tools.Fail("find command failed: " + abs + ": Not a directory")
			return nil, &r
		}
		return []string{abs}, nil
	}
	cwd := env.Cwd()
	if a.Smart != nil && !*a.Smart {
		return []string{cwd}, nil
	}
	var roots []string
	if cwd != env.Home {
		roots = append(roots, cwd)
	}
	for dir, i := cwd, 0; i < 3; i++ {
		parent := filepath.Dir(dir)
		if parent == dir || parent == "/" {
			break
		}
		roots = append(roots, parent)
		dir = parent
	}
	if env.Home != "" && !slices.Contains(roots, env.Home) {
		roots = append(roots, env.Home)
	}
	return roots, nil
}

func entryType(e entry) string {
	switch {
	case e.d.Type()&os.ModeSymlink != 0:
		return "symlink"
	case e.d.IsDir():
		return "dir"
	}
	return "file"
}

// excluder drops entries named by excludePaths: a name or glob matched
// against the basename, or a path relative to the root (or absolute).
func excluder(excl []string) func(entry) bool {
	if len(excl) == 0 {
		return nil
	}
	return func(e entry) bool {
		for _, x := range excl {
			x = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(x), "./"), "/")
			if x == "" {
				continue
			}
			if ok, _ := path.Match(x, e.name); ok || x == e.rel || x == e.abs {
				return true
			}
		}
		return false
	}
}

// findFilter compiles name, type, minDepth, pathPattern, size and mtime
// into one predicate.
func findFilter(a findArgs, now time.Time) (func(entry) bool, error) {
	fold := func(s string) string {
		if a.CaseSensitive {
			return s
		}
		return strings.ToLower(s)
	}
	name, err := nameMatcher(strings.TrimSpace(a.Name), fold)
	if err != nil {
		return nil, err
	}
	full, err := pathMatcher(a.PathPattern, a.CaseSensitive)
	if err != nil {
		return nil, err
	}
	size, err := sizeTest(a.Size)
	if err != nil {
		return nil, err
	}
	age, err := ageTest(a.Mtime, now)
	if err != nil {
		return nil, err
	}
	minDepth := intOr(a.MinDepth, 0)
	return func(e entry) bool {
		switch t := entryType(e); {
		case e.depth < minDepth:
			return false
		case a.Type == "file" && t != "file", a.Type == "dir" && t != "dir", a.Type == "symlink" && t != "symlink":
			return false
		case !name(e.name) || !full(e.abs):
			return false
		}
		if size == nil && age == nil {
			return true
		}
		info, err := e.d.Info()
		if err != nil {
			return false
		}
		return (size == nil || (info.Mode().IsRegular() && size(info.Size()))) && (age == nil || age(info.ModTime()))
	}, nil
}

// nameMatcher: a glob if the name has * ? [ {, a regex with re:, else a
// substring (the glob `*name*`). Globs and substrings honour fold.
func nameMatcher(name string, fold func(string) string) (func(string) bool, error) {
	switch {
	case name == "":
		return func(string) bool { return true }, nil
	case strings.HasPrefix(name, pattern.Prefix):
		m, err := pattern.Compile(name)
		return m, err
	case strings.ContainsAny(name, "*?[{"):
		globs := expandBraces(fold(name))
		return func(s string) bool {
			s = fold(s)
			for _, g := range globs {
				if ok, _ := path.Match(g, s); ok {
					return true
				}
			}
			return false
		}, nil
	}
	needle := fold(name)
	return func(s string) bool { return strings.Contains(fold(s), needle) }, nil
}

// expandBraces expands the first {a,b} group recursively: x.{go,md} →
// x.go, x.md. Unbalanced braces stay literal.
func expandBraces(g string) []string {
	open := strings.IndexByte(g, '{')
	if open < 0 {
		return []string{g}
	}
	end := strings.IndexByte(g[open:], '}')
	if end < 0 {
		return []string{g}
	}
	end += open
	var out []string
	for _, alt := range strings.Split(g[open+1:end], ",") {
		out = append(out, expandBraces(g[:open]+alt+g[end+1:])...)
	}
	return out
}

// pathMatcher matches the absolute path: a glob (where * also crosses /,
// as with find -path) if it has glob characters, else a substring.
func pathMatcher(p string, caseSensitive bool) (func(string) bool, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return func(string) bool { return true }, nil
	}
	flags := ""
	if !caseSensitive {
		flags = "(?i)"
	}
	var expr string
	if strings.ContainsAny(p, "*?[") {
		var b strings.Builder
		for i := 0; i < len(p); i++ {
			switch c := p[i]; c {
			case '*':
				b.WriteString(".*")
			case '?':
				b.WriteString(".")
			case '[':
				j := strings.IndexByte(p[i:], ']')
				if j < 0 {
					b.WriteString(`\[`)
					continue
				}
				b.WriteString(strings.Replace(p[i:i+j+1], "[!", "[^", 1))
				i += j
			default:
				b.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		expr = "^" + b.String() + "$"
	} else {
		expr = regexp.QuoteMeta(p)
	}
	re, err := regexp.Compile(flags + expr)
	if err != nil {
		return nil, fmt.Errorf("find command failed: invalid pathPattern %q: %w", p, err)
	}
	return re.MatchString, nil
}

var (
	sizeRe  = regexp.MustCompile(`^([+-]?)(\d+)([ckMG]?)$`)
	mtimeRe = regexp.MustCompile(`^([+-]?)(\d+)$`)
)

// sizeTest parses find's -size: +n larger, -n smaller, n equal, counted
// in units (c bytes, k KiB, M MiB, G GiB; bytes if none) rounded up.
func sizeTest(s string) (func(int64) bool, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	m := sizeRe.FindStringSubmatch(s)
	if m == nil {
		return nil, fmt.Errorf("find command failed: invalid size %q (use +100M, -10k or 4096c)", s)
	}
	n, _ := strconv.ParseInt(m[2], 10, 64)
	unit := map[string]int64{"": 1, "c": 1, "k": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m[3]]
	return func(size int64) bool { return compare(m[1], (size+unit-1)/unit, n) }, nil
}

// ageTest parses find's -mtime in whole days: -n newer, +n older, n exact.
func ageTest(s string, now time.Time) (func(time.Time) bool, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	m := mtimeRe.FindStringSubmatch(s)
	if m == nil {
		return nil, fmt.Errorf("find command failed: invalid mtime %q (days, e.g. -7 or +30)", s)
	}
	n, _ := strconv.ParseInt(m[2], 10, 64)
	return func(t time.Time) bool { return compare(m[1], int64(now.Sub(t)/(24*time.Hour)), n) }, nil
}

func compare(sign string, v, n int64) bool {
	switch sign {
	case "+":
		return v > n
	case "-":
		return v < n
	}
	return v == n
}
