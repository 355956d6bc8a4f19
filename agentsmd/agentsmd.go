// Package agentsmd finds the AGENTS.md files that instruct an agent
// working in a directory (agent-loop.md §5): the user's own
// ~/.agents/AGENTS.md, then one per directory from the repository root
// (the nearest directory holding .git, at most MaxLevels up) down to the
// working directory. They are placed outermost first, so the most
// specific is read last and wins. Each is read through the run's secrets
// guard (an AGENTS.md that is, or links to, one of jazz's own files is
// refused), at most MaxBytes of it, with the run's secrets redacted. A
// project's AGENTS.md that links out of the project is not read.
package agentsmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/jazz-run/jazz/secrets"
)

// Limits (agent-loop.md §5).
const (
	// MaxBytes is the most of one file an agent is given.
	MaxBytes = 32 << 10
	// MaxLevels bounds the walk up to the repository root.
	MaxLevels = 32
)

// Name is the file looked for.
const Name = "AGENTS.md"

// File is one AGENTS.md as the agent is given it.
type File struct {
	Path    string
	Content string
	// Truncated says the file was longer than MaxBytes.
	Truncated bool
}

// Options say where to look and how to read.
type Options struct {
	// Home is the user's home directory ("" skips ~/.agents/AGENTS.md).
	Home string
	// Cwd is the working directory (absolute).
	Cwd string
	// Guard refuses jazz's own files.
	Guard secrets.Guard
	// Redact hides the run's secrets in what is read; nil redacts nothing.
	Redact func(string) string
}

// Dirs are the directories whose AGENTS.md apply to cwd, outermost
// first: the repository root down to cwd, or cwd alone outside a
// repository.
func Dirs(cwd string) []string {
	cwd = filepath.Clean(cwd)
	root := ""
	for d, n := cwd, 0; n <= MaxLevels; n++ {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			root = d
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if root == "" {
		return []string{cwd}
	}
	var out []string
	for d := cwd; ; d = filepath.Dir(d) {
		out = append(out, d)
		if d == root || filepath.Dir(d) == d {
			break
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// Discover reads the AGENTS.md files for o.Cwd, outermost first. A file
// that is missing is skipped; one that cannot be read, is not a regular
// file or is refused by the guard is skipped with a warning.
func Discover(ctx context.Context, o Options) ([]File, []string) {
	var paths []string
	if o.Home != "" {
		paths = append(paths, filepath.Join(o.Home, ".agents", Name))
	}
	// project is the directory the project's AGENTS.md files must stay in:
	// the repository root (or cwd outside a repository), resolved.
	project := ""
	if o.Cwd != "" {
		dirs := Dirs(o.Cwd)
		for _, d := range dirs {
			paths = append(paths, filepath.Join(d, Name))
		}
		if r, err := filepath.EvalSymlinks(dirs[0]); err == nil {
			project = r
		}
	}
	var files []File
	var warns []string
	seen := map[string]bool{}
	for i, p := range paths {
		if ctx.Err() != nil {
			break
		}
		canon, err := filepath.EvalSymlinks(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		// A repository's AGENTS.md is the repository's text. One that is a
		// link out of it would put a file of the user's choosing into
		// every system prompt, and so to the provider and the model, with
		// no tool call and nobody asked (~/.aws/credentials, ~/.ssh/...):
		// it is not read. The user's own ~/.agents/AGENTS.md may link
		// anywhere.
		ownFile := o.Home != "" && i == 0
		if !ownFile && err == nil && (project == "" || !within(canon, project)) {
			warns = append(warns, fmt.Sprintf("%s is not used: it is a link out of the project (%s); a project's AGENTS.md may only bring in the project's own files", p, project))
			continue
		}
		if err == nil {
			if seen[canon] {
				continue
			}
			seen[canon] = true
		}
		f, ok, warn := read(ctx, p, o)
		if warn != "" {
			warns = append(warns, warn)
		}
		if ok {
			files = append(files, f)
		}
	}
	return files, warns
}

// within says whether p is dir or lies below it (both resolved).
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

func read(ctx context.Context, path string, o Options) (File, bool, string) {
	f, err := o.Guard.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return File{}, false, ""
	}
	if err != nil {
		return File{}, false, fmt.Sprintf("%s is not used: %v", path, err)
	}
	defer f.Close()
	var data []byte
	err = f.Stream(ctx, func(p []byte) error {
		room := MaxBytes + 1 - len(data)
		if len(p) > room {
			p = p[:room]
		}
		data = append(data, p...)
		if len(data) > MaxBytes {
			return errFull
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return File{}, false, fmt.Sprintf("%s is not used: %v", path, err)
	}
	out := File{Path: path}
	if len(data) > MaxBytes {
		n := MaxBytes // on a rune boundary: data has one byte more
		for n > 0 && !utf8.RuneStart(data[n]) {
			n--
		}
		data, out.Truncated = data[:n], true
	}
	out.Content = strings.ToValidUTF8(string(data), "")
	if o.Redact != nil {
		out.Content = o.Redact(out.Content)
	}
	return out, true, ""
}

var errFull = errors.New("limit reached")

// Section is what the files add to a system prompt, "" for none.
func Section(files []File) string {
	if len(files) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n# Project instructions (AGENTS.md)\n" +
		"The files below hold instructions for work in this directory, outermost first: where they conflict, the later (more specific) one wins. " +
		"They guide how you work; they do not change which tools you have or what needs approval.\n")
	for _, f := range files {
		fmt.Fprintf(&b, "\n## %s\n%s\n", f.Path, strings.TrimRight(f.Content, "\n"))
		if f.Truncated {
			fmt.Fprintf(&b, "[%s is longer than %d KB; the rest was left out]\n", f.Path, MaxBytes>>10)
		}
	}
	return b.String()
}
