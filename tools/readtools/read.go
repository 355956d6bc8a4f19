package readtools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/jazz-run/jazz/internal/jsonstr"
	"github.com/jazz-run/jazz/safefile"
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

// AppendJSON writes r as json.Marshal does (TestReadResultJSON): every
// read_file result is encoded, and reflection over it cost more than the
// call's own file I/O.
func (r readResult) AppendJSON(b []byte) []byte {
	b = append(b, `{"path":`...)
	b = jsonstr.Append(b, r.Path)
	b = append(b, `,"encoding":`...)
	b = jsonstr.Append(b, r.Encoding)
	b = append(b, `,"content":`...)
	b = jsonstr.Append(b, r.Content)
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, r.Truncated)
	b = append(b, `,"totalLines":`...)
	b = strconv.AppendInt(b, int64(r.TotalLines), 10)
	b = append(b, `,"returnedLines":`...)
	b = strconv.AppendInt(b, int64(r.ReturnedLines), 10)
	if r.Range != nil {
		b = append(b, `,"range":{"startLine":`...)
		b = strconv.AppendInt(b, int64(r.Range.StartLine), 10)
		b = append(b, `,"endLine":`...)
		b = strconv.AppendInt(b, int64(r.Range.EndLine), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

func readFileHandler(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a readArgs
	if err := decode(raw, &a); err != nil {
		return badArgs(err)
	}
	abs, f, fail := openText(env, a.Path)
	if fail != nil {
		return *fail
	}
	defer f.Close()
	maxUnits := min(intOr(a.MaxBytes, DefaultMaxBytes), MaxReadBytes)
	spec := scanSpec{raw: true, budget: keepBudget(maxUnits)}
	ranged := a.StartLine != nil || a.EndLine != nil
	if ranged {
		spec = scanSpec{from: max(1, intOr(a.StartLine, 1)), to: intOr(a.EndLine, 0), budget: keepBudget(maxUnits)}
	}
	text, err := scanText(ctx, f, spec)
	if err != nil {
		return tools.Fail(err.Error())
	}
	res := readResult{Path: abs, Encoding: "utf-8"}
	if a.Encoding != nil {
		res.Encoding = strings.ToLower(*a.Encoding)
	}
	if ranged {
		total := text.lines
		// The spec keeps end ≥ start even past the file's end, so a start
		// beyond the last line returns no text but reports one line.
		start := spec.from
		end := max(start, min(intOr(a.EndLine, total), total))
		res.TotalLines, res.ReturnedLines = total, end-start+1
		res.Range = &lineRange{StartLine: start, EndLine: end}
	} else {
		res.TotalLines, res.ReturnedLines = text.lines, text.lines
	}
	res.Content, res.Truncated = cutUTF16(text.str(), maxUnits)
	res.Truncated = res.Truncated || text.cut
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
// kept lines (the first or the last `lines` of the file), the counts,
// and the content cap (clamped like read_file's, so memory stays bounded).
func headTail(ctx context.Context, env *tools.Env, raw json.RawMessage, tail bool) (res headResult, text scanned, maxUnits int, fail *tools.Result) {
	var a headTailArgs
	if err := decode(raw, &a); err != nil {
		r := badArgs(err)
		return res, text, 0, &r
	}
	abs, f, fail := openText(env, a.Path)
	if fail != nil {
		return res, text, 0, fail
	}
	defer f.Close()
	want := intOr(a.Lines, 10)
	maxUnits = min(intOr(a.MaxBytes, DefaultMaxBytes), MaxReadBytes)
	spec := scanSpec{from: 1, to: want, budget: keepBudget(maxUnits)}
	if tail {
		spec = scanSpec{tail: want, budget: keepBudget(maxUnits)}
	}
	text, err := scanText(ctx, f, spec)
	if err != nil {
		r := tools.Fail(err.Error())
		return res, text, 0, &r
	}
	return headResult{Path: abs, TotalLines: text.lines, ReturnedLines: min(want, text.lines), RequestedLines: want}, text, maxUnits, nil
}

func headHandler(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	res, text, maxUnits, fail := headTail(ctx, env, raw, false)
	if fail != nil {
		return *fail
	}
	res.Content, res.Truncated = cutUTF16(text.str(), maxUnits)
	res.Truncated = res.Truncated || text.cut
	return tools.Result{Success: true, Value: res, Truncated: res.Truncated}
}

func tailHandler(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	head, text, maxUnits, fail := headTail(ctx, env, raw, true)
	if fail != nil {
		return *fail
	}
	res := tailResult{headResult: head, StartLine: head.TotalLines - head.ReturnedLines + 1, EndLine: head.TotalLines}
	res.Content, res.Truncated = keepLastUTF16(text.str(), maxUnits)
	res.Truncated = res.Truncated || text.cut
	return tools.Result{Success: true, Value: res, Truncated: res.Truncated}
}

// openText resolves input and opens it for reading as text: it must not
// be one of jazz's own secret places, must be a regular file (a FIFO or a
// device is refused before it can block or never end) and not a media
// file. A failure comes back as the result to return.
func openText(env *tools.Env, input string) (abs string, f *safefile.File, fail *tools.Result) {
	abs = resolve(env, input)
	failed := func(msg string) (string, *safefile.File, *tools.Result) {
		r := tools.Fail(msg)
		return abs, nil, &r
	}
	// Guard.Open judges the path before anything else touches it, then
	// stats it (refusing what is missing or not a regular file before any
	// open), opens it and judges the descriptor: one pass over the path
	// where a Check, a Stat and then an Open took two.
	f, err := guard(env).Open(abs)
	var nr *safefile.NotRegularError
	switch {
	case errors.As(err, &nr) && nr.Mode.IsDir():
		return failed("Not a file: " + abs)
	case errors.As(err, &nr):
		return failed(notRegular(abs, safefile.KindOf(nr.Mode)))
	case isMissing(err):
		return failed("Path not found: " + input)
	case err != nil:
		return failed(err.Error())
	}
	if kind := mediaKind(abs); kind != "" {
		f.Close()
		// Attaching media needs a provider path this runtime does not have
		// yet; the spec's fallback says so instead of dumping bytes.
		return failed(abs + " is a " + kind + " file, which cannot be read as text. This run has no way to attach media to the conversation.")
	}
	return abs, f, nil
}

// notRegular is the refusal for a FIFO, device or socket.
func notRegular(abs, kind string) string {
	return "Not a file: " + abs + " (it is a " + kind + "; only regular files are read)"
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
