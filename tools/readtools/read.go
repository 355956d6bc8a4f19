package readtools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/jazz-run/jazz/tools"
)

type readArgs struct {
	Path      string  `json:"path"`
	StartLine *int    `json:"startLine"`
	EndLine   *int    `json:"endLine"`
	MaxBytes  *int    `json:"maxBytes"`
	Encoding  *string `json:"encoding"`
}

// lineRange is read_file's `range`.
type lineRange struct {
	StartLine int `json:"startLine"`
	EndLine   int `json:"endLine"`
}

type readResult struct {
	Path          string     `json:"path"`
	Encoding      string     `json:"encoding"`
	Content       string     `json:"content"`
	Truncated     bool       `json:"truncated"`
	TotalLines    int        `json:"totalLines"`
	ReturnedLines int        `json:"returnedLines"`
	Range         *lineRange `json:"range,omitempty"`
}

func readFileHandler(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a readArgs
	if err := decode(raw, &a); err != nil {
		return badArgs(err)
	}
	abs, content, fail := loadText(env, a.Path)
	if fail != nil {
		return *fail
	}
	res := readResult{Path: abs, Encoding: "utf-8"}
	if a.Encoding != nil {
		res.Encoding = strings.ToLower(*a.Encoding)
	}
	if a.StartLine != nil || a.EndLine != nil {
		lines := splitLines(content)
		total := len(lines)
		start := max(1, intOr(a.StartLine, 1))
		// The spec keeps end ≥ start even past the file's end, so a start
		// beyond the last line returns no text but reports one line.
		end := max(start, min(intOr(a.EndLine, total), total))
		lo, hi := min(start-1, total), min(end, total)
		content = strings.Join(lines[lo:hi], "\n")
		res.TotalLines, res.ReturnedLines = total, end-start+1
		res.Range = &lineRange{StartLine: start, EndLine: end}
	} else if content != "" {
		res.TotalLines = len(splitLines(content))
		res.ReturnedLines = res.TotalLines
	}
	res.Content, res.Truncated = cutUTF16(content, min(intOr(a.MaxBytes, DefaultMaxBytes), MaxReadBytes))
	return tools.Result{Success: true, Value: res, Truncated: res.Truncated}
}

type headTailArgs struct {
	Path     string `json:"path"`
	Lines    *int   `json:"lines"`
	MaxBytes *int   `json:"maxBytes"`
}

type headResult struct {
	Path           string `json:"path"`
	Content        string `json:"content"`
	Truncated      bool   `json:"truncated"`
	TotalLines     int    `json:"totalLines"`
	ReturnedLines  int    `json:"returnedLines"`
	RequestedLines int    `json:"requestedLines"`
}

type tailResult struct {
	headResult
	StartLine int `json:"startLine"`
	EndLine   int `json:"endLine"`
}

// headTail is what head and tail share: the validated arguments, the
// file's lines, and how many of them the call returns.
func headTail(env *tools.Env, raw json.RawMessage) (a headTailArgs, res headResult, lines []string, fail *tools.Result) {
	if err := decode(raw, &a); err != nil {
		r := badArgs(err)
		return a, res, nil, &r
	}
	abs, content, fail := loadText(env, a.Path)
	if fail != nil {
		return a, res, nil, fail
	}
	lines = splitLines(content)
	want := intOr(a.Lines, 10)
	n := min(want, len(lines))
	return a, headResult{Path: abs, TotalLines: len(lines), ReturnedLines: n, RequestedLines: want}, lines, nil
}

func headHandler(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	a, res, lines, fail := headTail(env, raw)
	if fail != nil {
		return *fail
	}
	res.Content, res.Truncated = cutUTF16(strings.Join(lines[:res.ReturnedLines], "\n"), intOr(a.MaxBytes, DefaultMaxBytes))
	return tools.Result{Success: true, Value: res, Truncated: res.Truncated}
}

func tailHandler(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	a, head, lines, fail := headTail(env, raw)
	if fail != nil {
		return *fail
	}
	first := len(lines) - head.ReturnedLines
	res := tailResult{headResult: head, StartLine: first + 1, EndLine: len(lines)}
	res.Content, res.Truncated = keepLastUTF16(strings.Join(lines[first:], "\n"), intOr(a.MaxBytes, DefaultMaxBytes))
	return tools.Result{Success: true, Value: res, Truncated: res.Truncated}
}

// loadText resolves input and reads it as UTF-8 text with any BOM removed.
// A failure comes back as the result to return.
func loadText(env *tools.Env, input string) (abs, content string, fail *tools.Result) {
	abs = resolve(env, input)
	fi, err := os.Stat(abs)
	switch {
	case isMissing(err):
		r := tools.Fail("Path not found: " + input)
		return abs, "", &r
	case err != nil:
		r := tools.Fail(err.Error())
		return abs, "", &r
	case fi.IsDir():
		r := tools.Fail("Not a file: " + abs)
		return abs, "", &r
	}
	if kind := mediaKind(abs); kind != "" {
		// Attaching media needs a provider path this runtime does not have
		// yet; the spec's fallback says so instead of dumping bytes.
		r := tools.Fail(abs + " is a " + kind + " file, which cannot be read as text. This run has no way to attach media to the conversation.")
		return abs, "", &r
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		r := tools.Fail(err.Error())
		return abs, "", &r
	}
	s := string(b)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return abs, strings.TrimPrefix(s, "\uFEFF"), nil
}

// isMissing says whether a stat error means "nothing there": absent, a
// dangling symlink, or a path through a regular file.
func isMissing(err error) bool {
	return err != nil && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR))
}

// splitLines splits on LF or CRLF, like JavaScript's split(/\r?\n/): a
// trailing newline yields a final empty line.
func splitLines(s string) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// cutUTF16 keeps the first n UTF-16 code units of s (the spec counts
// maxBytes the way JavaScript counts string length), never splitting a
// character.
func cutUTF16(s string, n int) (string, bool) {
	if len(s) <= n { // every code unit takes at least one byte
		return s, false
	}
	units := 0
	for i, r := range s {
		units += utf16Len(r)
		if units > n {
			return s[:i], true
		}
	}
	return s, false
}

// keepLastUTF16 keeps the last n UTF-16 code units of s.
func keepLastUTF16(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	units := 0
	for i := len(s); i > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		units += utf16Len(r)
		if units > n {
			return s[i:], true
		}
		i -= size
	}
	return s, false
}

func utf16Len(r rune) int {
	if r > 0xFFFF {
		return 2
	}
	return 1
}

// mediaKind classifies a path by extension as image, pdf, audio or video;
// "" means text.
func mediaKind(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".ico", ".heic", ".heif", ".avif":
		return "image"
	case ".pdf":
		return "pdf"
	case ".mp3", ".wav", ".ogg", ".oga", ".flac", ".m4a", ".aac", ".opus", ".weba":
		return "audio"
	case ".mp4", ".mov", ".avi", ".mkv", ".webm", ".m4v", ".mpeg", ".mpg":
		return "video"
	}
	return ""
}
