package gittools

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jazz-run/jazz/tools"
)

// userinfoRe finds the credentials of a URL (`https://user:token@host`).
var userinfoRe = regexp.MustCompile(`\b([A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#@"']+@`)

// redactURLs hides the userinfo of every URL in git's text: a remote URL
// with a token in it must not reach the model.
func redactURLs(s string) string { return userinfoRe.ReplaceAllString(s, "${1}<redacted>@") }

// refArg refuses a model-given revision, branch or remote that git would
// read as an option (`--output=…`, `--receive-pack=…`).
func refArg(field, v string) *tools.Result {
	if strings.HasPrefix(v, "-") {
		r := tools.Fail(fmt.Sprintf("%s %q must not start with '-'", field, v))
		return &r
	}
	if strings.ContainsAny(v, "\x00\n") {
		r := tools.Fail(fmt.Sprintf("%s must not contain a newline or NUL", field))
		return &r
	}
	return nil
}

// pathArg is the `path` every read-only tool takes.
type pathArg struct {
	Path string `json:"path"`
}

func (p *pathArg) path() string { return p.Path }

// begin decodes a read-only tool's arguments into a and opens the
// repository its path names.
func (c *call) begin(ctx context.Context, a interface{ path() string }) (*repo, *tools.Result) {
	if f := c.decode(a); f != nil {
		return nil, f
	}
	return c.open(ctx, a.path(), false)
}

// read runs a read-only git command; a failure is the result to return.
func (r *repo) read(ctx context.Context, name string, timeout time.Duration, args ...string) (result, *tools.Result) {
	res := r.cmd(true).run(ctx, timeout, args...)
	if !res.ok() {
		return res, fail(res.failure(name, r.dir))
	}
	return res, nil
}

// lines splits git's output into non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// StatusResult is git_status's result.
type StatusResult struct {
	WorkingDirectory string   `json:"workingDirectory"`
	Branch           string   `json:"branch"`
	HasChanges       bool     `json:"hasChanges"`
	Summary          []string `json:"summary"`
	RawStatus        string   `json:"rawStatus"`
	Truncated        bool     `json:"truncated,omitempty"`
}

func gitStatus(ctx context.Context, c *call) tools.Result {
	var a struct {
		pathArg
	}
	r, f := c.begin(ctx, &a)
	if f != nil {
		return *f
	}
	res, f := r.read(ctx, "git status", DefaultTimeout, "status", "--short", "--branch", "--ignore-submodules=dirty")
	if f != nil {
		return *f
	}
	out := StatusResult{WorkingDirectory: r.dir, Branch: "unknown", RawStatus: redactURLs(res.stdout), Truncated: res.stdoutTruncated}
	for _, l := range lines(res.stdout) {
		if b, ok := strings.CutPrefix(l, "## "); ok {
			out.Branch = b
			continue
		}
		out.Summary = append(out.Summary, l)
	}
	out.HasChanges = len(out.Summary) > 0
	if !out.HasChanges {
		out.Summary = []string{"Working tree clean"}
	}
	return tools.OK(out)
}

// Commit is one git_log entry.
type Commit struct {
	Hash         string `json:"hash"`
	ShortHash    string `json:"shortHash"`
	Author       string `json:"author"`
	RelativeDate string `json:"relativeDate"`
	Subject      string `json:"subject"`
	Oneline      string `json:"oneline,omitempty"`
}

// LogResult is git_log's result.
type LogResult struct {
	WorkingDirectory string   `json:"workingDirectory"`
	CommitCount      int      `json:"commitCount"`
	Commits          []Commit `json:"commits"`
	Truncated        bool     `json:"truncated,omitempty"`
}

func gitLog(ctx context.Context, c *call) tools.Result {
	var a struct {
		pathArg
		Limit   *int `json:"limit"`
		Oneline bool `json:"oneline"`
	}
	r, f := c.begin(ctx, &a)
	if f != nil {
		return *f
	}
	n := 20
	if a.Limit != nil {
		n = *a.Limit
	}
	res, f := r.read(ctx, "git log", DefaultTimeout, "log", "--no-color", "--no-show-signature", fmt.Sprintf("--max-count=%d", n),
		"--pretty=format:%H%x1f%h%x1f%an%x1f%ar%x1f%s%x1e", "--date=relative")
	if f != nil {
		return *f
	}
	out := LogResult{WorkingDirectory: r.dir, Commits: []Commit{}, Truncated: res.stdoutTruncated}
	for _, rec := range strings.Split(res.stdout, "\x1e") {
		f := strings.Split(strings.TrimLeft(rec, "\n"), "\x1f")
		if len(f) != 5 {
			continue // a record cut by the cap
		}
		cm := Commit{Hash: f[0], ShortHash: f[1], Author: f[2], RelativeDate: f[3], Subject: f[4]}
		if a.Oneline {
			cm.Oneline = cm.ShortHash + " " + cm.Subject
		}
		out.Commits = append(out.Commits, cm)
	}
	out.CommitCount = len(out.Commits)
	return tools.OK(out)
}

// DiffOptions echoes git_diff's options.
type DiffOptions struct {
	Staged   bool     `json:"staged"`
	Branch   *string  `json:"branch"`
	Commit   *string  `json:"commit"`
	Paths    []string `json:"paths"`
	MaxLines *int     `json:"maxLines"`
}

// DiffResult is git_diff's result without nameOnly.
type DiffResult struct {
	WorkingDirectory string      `json:"workingDirectory"`
	Paths            []string    `json:"paths"`
	Diff             string      `json:"diff"`
	HasChanges       bool        `json:"hasChanges"`
	Truncated        bool        `json:"truncated"`
	TotalLines       int         `json:"totalLines"`
	ReturnedLines    int         `json:"returnedLines"`
	Options          DiffOptions `json:"options"`
}

// NameOnlyResult is git_diff's result with nameOnly.
type NameOnlyResult struct {
	WorkingDirectory string   `json:"workingDirectory"`
	Paths            []string `json:"paths"`
	NameOnly         bool     `json:"nameOnly"`
	Count            int      `json:"count"`
	Truncated        bool     `json:"truncated,omitempty"`
}

func gitDiff(ctx context.Context, c *call) tools.Result {
	var a struct {
		pathArg
		Staged   bool     `json:"staged"`
		Branch   *string  `json:"branch"`
		Commit   *string  `json:"commit"`
		Paths    []string `json:"paths"`
		NameOnly bool     `json:"nameOnly"`
		MaxLines *int     `json:"maxLines"`
	}
	r, f := c.begin(ctx, &a)
	if f != nil {
		return *f
	}
	ref := ""
	switch {
	case a.Branch != nil && *a.Branch != "":
		ref = *a.Branch
	case a.Commit != nil && *a.Commit != "":
		ref = *a.Commit
	}
	if f := refArg("branch or commit", ref); f != nil {
		return *f
	}
	args := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty"}
	if a.NameOnly {
		args = append(args, "--name-only")
	}
	if a.Staged {
		args = append(args, "--staged")
	}
	if ref != "" {
		args = append(args, ref)
	}
	if len(a.Paths) > 0 {
		args = append(append(args, "--"), a.Paths...)
	}
	res, f := r.read(ctx, "git diff", DiffTimeout, args...)
	if f != nil {
		return *f
	}
	if a.NameOnly {
		names := lines(res.stdout)
		if names == nil {
			names = []string{}
		}
		return tools.OK(NameOnlyResult{WorkingDirectory: r.dir, Paths: names, NameOnly: true, Count: len(names), Truncated: res.stdoutTruncated})
	}
	text := redactURLs(strings.TrimRight(res.stdout, "\n"))
	all := strings.Split(text, "\n")
	if text == "" {
		all = nil
	}
	kept := all
	truncated := res.stdoutTruncated
	if a.MaxLines != nil && len(kept) > *a.MaxLines {
		kept, truncated = kept[:*a.MaxLines], true
	}
	out := DiffResult{
		WorkingDirectory: r.dir, Paths: a.Paths, Diff: strings.Join(kept, "\n"), HasChanges: len(all) > 0,
		Truncated: truncated, TotalLines: len(all), ReturnedLines: len(kept),
		Options: DiffOptions{Staged: a.Staged, Branch: a.Branch, Commit: a.Commit, Paths: a.Paths, MaxLines: a.MaxLines},
	}
	if out.Diff == "" {
		out.Diff = "No differences"
	}
	return tools.OK(out)
}

// BranchOptions echoes git_branch's options.
type BranchOptions struct {
	List   bool `json:"list"`
	All    bool `json:"all"`
	Remote bool `json:"remote"`
}

// BranchResult is git_branch's result.
type BranchResult struct {
	WorkingDirectory string        `json:"workingDirectory"`
	Branches         []string      `json:"branches"`
	CurrentBranch    string        `json:"currentBranch,omitempty"`
	Options          BranchOptions `json:"options"`
	Truncated        bool          `json:"truncated,omitempty"`
}

func gitBranch(ctx context.Context, c *call) tools.Result {
	var a struct {
		pathArg
		BranchOptions
	}
	r, f := c.begin(ctx, &a)
	if f != nil {
		return *f
	}
	args := []string{"branch", "--list", "--no-color", "--no-column"}
	switch {
	case a.Remote:
		args = append(args, "--remotes")
	case a.All:
		args = append(args, "--all")
	}
	res, f := r.read(ctx, "git branch", DefaultTimeout, args...)
	if f != nil {
		return *f
	}
	out := BranchResult{WorkingDirectory: r.dir, Branches: []string{}, Options: a.BranchOptions, Truncated: res.stdoutTruncated}
	for _, l := range lines(res.stdout) {
		name := strings.TrimSpace(l[min(2, len(l)):])
		if strings.HasPrefix(l, "* ") {
			out.CurrentBranch = name
		}
		out.Branches = append(out.Branches, name)
	}
	return tools.OK(out)
}

// BlameLine is one line of git_blame.
type BlameLine struct {
	CommitHash         string `json:"commitHash"`
	Author             string `json:"author"`
	LineNumber         int    `json:"lineNumber"`
	OriginalLineNumber int    `json:"originalLineNumber,omitempty"`
	Content            string `json:"content"`
}

// BlameOptions echoes git_blame's options.
type BlameOptions struct {
	StartLine       *int `json:"startLine"`
	EndLine         *int `json:"endLine"`
	ShowEmail       bool `json:"showEmail"`
	ShowLineNumbers bool `json:"showLineNumbers"`
}

// BlameResult is git_blame's result.
type BlameResult struct {
	WorkingDirectory string       `json:"workingDirectory"`
	File             string       `json:"file"`
	LineCount        int          `json:"lineCount"`
	Lines            []BlameLine  `json:"lines"`
	Options          BlameOptions `json:"options"`
	Truncated        bool         `json:"truncated,omitempty"`
}

func gitBlame(ctx context.Context, c *call) tools.Result {
	var a struct {
		pathArg
		File string `json:"file"`
		BlameOptions
	}
	r, f := c.begin(ctx, &a)
	if f != nil {
		return *f
	}
	if a.StartLine != nil && a.EndLine != nil && *a.StartLine > *a.EndLine {
		return tools.Fail(fmt.Sprintf("Invalid line range: start line (%d) must be <= end line (%d)", *a.StartLine, *a.EndLine))
	}
	abs := a.File
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(r.dir, abs)
	}
	if err := guardOf(c.env).Check(abs); err != nil {
		return tools.Fail(err.Error())
	}
	args := []string{"blame", "--no-textconv", "--line-porcelain"}
	switch {
	case a.StartLine != nil && a.EndLine != nil:
		args = append(args, fmt.Sprintf("-L%d,%d", *a.StartLine, *a.EndLine))
	case a.StartLine != nil:
		args = append(args, fmt.Sprintf("-L%d,%d", *a.StartLine, *a.StartLine))
	case a.EndLine != nil:
		args = append(args, fmt.Sprintf("-L1,%d", *a.EndLine))
	}
	args = append(args, "--", a.File)
	res, f := r.read(ctx, "git blame", DiffTimeout, args...)
	if f != nil {
		return *f
	}
	out := BlameResult{WorkingDirectory: r.dir, File: a.File, Lines: parseBlame(res.stdout, a.ShowEmail, a.ShowLineNumbers),
		Options: a.BlameOptions, Truncated: res.stdoutTruncated}
	out.LineCount = len(out.Lines)
	return tools.OK(out)
}

// parseBlame reads `git blame --line-porcelain`: per line a header
// `<hash> <orig> <final> [<n>]`, `key value` lines, then the content
// after a tab.
func parseBlame(s string, email, numbers bool) []BlameLine {
	out := []BlameLine{}
	var cur BlameLine
	var name, mail string
	header := true
	for _, l := range strings.Split(s, "\n") {
		if content, ok := strings.CutPrefix(l, "\t"); ok {
			cur.Author = name
			if email && mail != "" {
				cur.Author += " " + mail
			}
			cur.Content = content
			if !numbers {
				cur.OriginalLineNumber = 0
			}
			out = append(out, cur)
			header = true
			continue
		}
		if header {
			f := strings.Fields(l)
			if len(f) >= 3 {
				cur = BlameLine{CommitHash: f[0]}
				cur.OriginalLineNumber, _ = strconv.Atoi(f[1])
				cur.LineNumber, _ = strconv.Atoi(f[2])
				name, mail = "", ""
				header = false
			}
			continue
		}
		switch k, v, _ := strings.Cut(l, " "); k {
		case "author":
			name = v
		case "author-mail":
			mail = v
		}
	}
	return out
}

// ReflogEntry is one git_reflog entry.
type ReflogEntry struct {
	Hash      string `json:"hash"`
	ShortHash string `json:"shortHash"`
	Ref       string `json:"ref"`
	Action    string `json:"action"`
	Summary   string `json:"summary"`
	Oneline   string `json:"oneline,omitempty"`
}

// ReflogOptions echoes git_reflog's options.
type ReflogOptions struct {
	Limit   int     `json:"limit"`
	Branch  *string `json:"branch"`
	All     bool    `json:"all"`
	Oneline bool    `json:"oneline"`
}

// ReflogResult is git_reflog's result.
type ReflogResult struct {
	WorkingDirectory string        `json:"workingDirectory"`
	EntryCount       int           `json:"entryCount"`
	Entries          []ReflogEntry `json:"entries"`
	Options          ReflogOptions `json:"options"`
	Truncated        bool          `json:"truncated,omitempty"`
}

func gitReflog(ctx context.Context, c *call) tools.Result {
	var a struct {
		pathArg
		Limit   *int    `json:"limit"`
		Branch  *string `json:"branch"`
		All     bool    `json:"all"`
		Oneline bool    `json:"oneline"`
	}
	r, f := c.begin(ctx, &a)
	if f != nil {
		return *f
	}
	if a.Branch != nil {
		if f := refArg("branch", *a.Branch); f != nil {
			return *f
		}
	}
	n := 20
	if a.Limit != nil {
		n = *a.Limit
	}
	args := []string{"reflog", "show", "--no-color", "--format=%H%x1f%h%x1f%gd%x1f%gs", fmt.Sprintf("-n%d", n)}
	switch {
	case a.All:
		args = append(args, "--all")
	case a.Branch != nil && *a.Branch != "":
		args = append(args, *a.Branch)
	}
	res, f := r.read(ctx, "git reflog", DefaultTimeout, args...)
	if f != nil {
		return *f
	}
	out := ReflogResult{WorkingDirectory: r.dir, Entries: []ReflogEntry{}, Truncated: res.stdoutTruncated,
		Options: ReflogOptions{Limit: n, Branch: a.Branch, All: a.All, Oneline: a.Oneline}}
	for _, l := range lines(res.stdout) {
		f := strings.Split(l, "\x1f")
		if len(f) != 4 {
			continue
		}
		e := ReflogEntry{Hash: f[0], ShortHash: f[1], Ref: f[2], Summary: redactURLs(f[3])}
		if act, sum, ok := strings.Cut(e.Summary, ": "); ok {
			e.Action, e.Summary = act, sum
		}
		if a.Oneline {
			e.Oneline = fmt.Sprintf("%s %s: %s", e.ShortHash, e.Ref, redactURLs(f[3]))
		}
		out.Entries = append(out.Entries, e)
	}
	out.EntryCount = len(out.Entries)
	return tools.OK(out)
}

// TagListResult is git_tag_list's result.
type TagListResult struct {
	WorkingDirectory string   `json:"workingDirectory"`
	Tags             []string `json:"tags"`
	TagCount         int      `json:"tagCount"`
	Truncated        bool     `json:"truncated,omitempty"`
}

func gitTagList(ctx context.Context, c *call) tools.Result {
	var a struct {
		pathArg
	}
	r, f := c.begin(ctx, &a)
	if f != nil {
		return *f
	}
	res, f := r.read(ctx, "git tag list", DefaultTimeout, "tag", "--list", "--sort=-creatordate", "--no-column")
	if f != nil {
		return *f
	}
	tags := lines(res.stdout)
	if tags == nil {
		tags = []string{}
	}
	return tools.OK(TagListResult{WorkingDirectory: r.dir, Tags: tags, TagCount: len(tags), Truncated: res.stdoutTruncated})
}
