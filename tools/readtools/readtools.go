// Package readtools owns the read-only built-in file tools of
// tool-schemas.md §3: pwd, cd, read_file, head, tail, stat, ls, find (and
// its alias glob) and grep. Each is a tools.Tool with its JSON Schema and
// handler; results and messages follow the spec to the letter. Paths are
// resolved with pathres and are not confined: a read tool may read any
// file the process can.
package readtools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/pathres"
)

// Limits from tool-schemas.md §1 and §3.
const (
	// DefaultMaxBytes is read_file/head/tail's default content cap (UTF-16 units).
	DefaultMaxBytes = 131072
	// MaxReadBytes caps read_file's maxBytes.
	MaxReadBytes = 524288
	// DefaultMaxResults and MaxResults bound ls, find and grep.
	DefaultMaxResults = 200
	MaxResults        = 2000
	// StreamCap is the per-stream byte cap of grep/find children.
	StreamCap = 262144
	// ChildTimeout bounds a grep child process and a find walk.
	ChildTimeout = 30 * time.Second
)

// Tools returns every read-only file tool, ready for tools.NewRegistry.
func Tools() []tools.Tool {
	find := tool("find", findDesc, findSchema, findHandler)
	glob := find
	glob.Name = "glob"
	return []tools.Tool{
		tool("pwd", "Print the current working directory.", `{"type":"object","properties":{},"additionalProperties":false}`, pwdHandler),
		tool("cd", "Change the working directory for later tool calls. Relative paths, ~ and .. are accepted.", cdSchema, cdHandler),
		tool("read_file", readDesc, readSchema, readFileHandler),
		tool("head", "Read the first N lines of a text file (default 10).", headTailSchema, headHandler),
		tool("tail", "Read the last N lines of a text file (default 10), e.g. the end of a log.", headTailSchema, tailHandler),
		tool("stat", "Show whether a path exists, its type (File, Directory, …), size in bytes and modification/access times. Follows symlinks.", pathOnlySchema, statHandler),
		tool("ls", lsDesc, lsSchema, lsHandler),
		find,
		glob,
		tool("grep", grepDesc, grepSchema, grepHandler),
	}
}

func tool(name, desc, schema string, h tools.Handler) tools.Tool {
	return tools.Tool{
		Name:        name,
		Description: desc,
		Schema:      json.RawMessage(schema),
		Level:       messages.LevelReadOnly,
		Handler:     h,
	}
}

const (
	readDesc = "Read a text file. Optional 1-based startLine/endLine select a line range. " +
		"Content is capped at maxBytes (default 131072, max 524288) and `truncated` says so. " +
		"A UTF-8 BOM is stripped. Prefer a line range over reading huge files whole."
	lsDesc = "List one directory (default: the working directory, 200 entries). " +
		"Hidden entries, node_modules, .git and .gitignore'd paths are skipped unless showHidden. " +
		"recursive descends up to maxDepth (default 10). pattern is a substring of the name, " +
		"or re:<regex>; it is not a glob (use find for globs)."
	findDesc = "Find files and directories by name. Without path it searches the working directory, " +
		"then up to 3 parent directories, then $HOME, stopping once enough is found (smart:false = working directory only). " +
		"name: a glob if it has * ? [ {, re:<regex>, else a substring. Filters: type, maxDepth (default 25), minDepth, " +
		"pathPattern, excludePaths, size (+100M, -10k), mtime (days: -7 newer, +30 older). Newest first; default 200 results."
	grepDesc = "Search file contents (ripgrep, else grep). pattern is literal unless regex:true or prefixed re:. " +
		"outputMode: content (matching lines, default), files (file names) or count (matches per file). " +
		"filePattern/exclude are file globs, excludeDir a directory name; contextLines adds surrounding lines. Default 200 results, cap 2000."
)

const (
	pathOnlySchema = `{"type":"object","properties":{"path":{"type":"string","minLength":1,"description":"File path (absolute, relative to the working directory, or ~/…)"}},"required":["path"],"additionalProperties":false}`
	cdSchema       = `{"type":"object","properties":{"path":{"type":"string","minLength":1,"description":"Directory to change to"}},"required":["path"],"additionalProperties":false}`
	readSchema     = `{"type":"object","properties":{
"path":{"type":"string","minLength":1,"description":"File to read"},
"startLine":{"type":"integer","minimum":1,"description":"First line to return (1-based, inclusive)"},
"endLine":{"type":"integer","minimum":1,"description":"Last line to return (1-based, inclusive)"},
"maxBytes":{"type":"integer","minimum":1,"description":"Content cap (default 131072, max 524288)"},
"encoding":{"type":"string","description":"Text encoding; only utf-8 is read"}},
"required":["path"],"additionalProperties":false}`
	headTailSchema = `{"type":"object","properties":{
"path":{"type":"string","minLength":1,"description":"File to read"},
"lines":{"type":"integer","minimum":1,"description":"Number of lines (default 10)"},
"maxBytes":{"type":"integer","minimum":1,"description":"Content cap (default 131072)"}},
"required":["path"],"additionalProperties":false}`
	lsSchema = `{"type":"object","properties":{
"path":{"type":"string","description":"Directory to list (default: working directory)"},
"showHidden":{"type":"boolean","description":"Include dot entries, node_modules, .git and .gitignore'd paths"},
"recursive":{"type":"boolean","description":"Descend into subdirectories"},
"pattern":{"type":"string","description":"Name substring, or re:<regex>"},
"maxResults":{"type":"integer","minimum":1,"description":"Max entries (default 200, cap 2000)"},
"maxDepth":{"type":"integer","minimum":1,"description":"Levels to descend when recursive (default 10)"}},
"additionalProperties":false}`
	findSchema = `{"type":"object","properties":{
"path":{"type":"string","description":"Directory to search; omit for the smart search. Never '/'"},
"name":{"type":"string","description":"Glob (*.go), re:<regex>, or substring of the name"},
"type":{"type":"string","enum":["file","dir","all","symlink"],"description":"Entry type (default all)"},
"maxDepth":{"type":"integer","minimum":0,"description":"Max depth (default 25)"},
"minDepth":{"type":"integer","minimum":0,"description":"Min depth (1 = direct children)"},
"maxResults":{"type":"integer","minimum":1,"description":"Max results (default 200, cap 2000)"},
"includeHidden":{"type":"boolean","description":"Include dot entries, node_modules, .git and .gitignore'd paths"},
"smart":{"type":"boolean","description":"Search cwd, parents, then $HOME when path is omitted (default true)"},
"pathPattern":{"type":"string","description":"Glob or substring matched against the full path"},
"excludePaths":{"type":"array","items":{"type":"string"},"description":"Names, globs or relative paths to skip"},
"caseSensitive":{"type":"boolean","description":"Case-sensitive name and pathPattern matching (default false)"},
"size":{"type":"string","description":"File size: +100M larger, -10k smaller, 4k about equal (units c k M G)"},
"mtime":{"type":"string","description":"Modified days ago: -7 within 7 days, +30 more than 30 days"}},
"additionalProperties":false}`
	grepSchema = `{"type":"object","properties":{
"pattern":{"type":"string","minLength":1,"description":"Text to find; re:<regex> or regex:true for a regex"},
"path":{"type":"string","description":"File or directory to search (default: working directory)"},
"recursive":{"type":"boolean","description":"Search subdirectories (default true)"},
"regex":{"type":"boolean","description":"Treat pattern as a regex"},
"ignoreCase":{"type":"boolean","description":"Case-insensitive"},
"maxResults":{"type":"integer","minimum":1,"description":"Max results, also per file (default 200, cap 2000)"},
"filePattern":{"type":"string","description":"Only files matching this glob, e.g. *.go"},
"exclude":{"type":"string","description":"Skip files matching this glob"},
"excludeDir":{"type":"string","description":"Skip directories with this name"},
"contextLines":{"type":"integer","minimum":0,"description":"Lines of context around each match"},
"outputMode":{"type":"string","enum":["content","files","count"],"description":"content (default), files or count"}},
"required":["pattern"],"additionalProperties":false}`
)

// decode unmarshals schema-valid args; a failure means the registry was
// bypassed, so the message names the tool rather than a field.
func decode(args json.RawMessage, v any) error {
	if len(args) == 0 {
		return nil
	}
	return json.Unmarshal(args, v)
}

func badArgs(err error) tools.Result { return tools.Fail("invalid arguments: " + err.Error()) }

// guard is the run's secrets guard: JAZZ_HOME (else the default
// ~/.jazz, so a bare Env still protects it), /proc and the run's other
// secret files.
func guard(env *tools.Env) secrets.Guard {
	home := env.JazzHome
	if home == "" && env.Home != "" {
		home = filepath.Join(env.Home, ".jazz")
	}
	return env.Secrets.Guard(home)
}

// resolve resolves a tool's path argument against the agent's cwd.
func resolve(env *tools.Env, input string) string {
	return pathres.Resolve(env.Cwd(), env.Home, input)
}

func pwdHandler(_ context.Context, env *tools.Env, _ json.RawMessage) tools.Result {
	return tools.OK(env.Cwd())
}

func cdHandler(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a struct {
		Path string `json:"path"`
	}
	if err := decode(raw, &a); err != nil {
		return badArgs(err)
	}
	abs := resolve(env, a.Path)
	if err := guard(env).Check(abs); err != nil {
		return tools.Fail(err.Error())
	}
	fi, err := os.Stat(abs)
	if err != nil {
		if os.IsNotExist(err) {
			return tools.Fail("Path not found: " + a.Path)
		}
		return tools.Fail(err.Error())
	}
	if !fi.IsDir() {
		return tools.Fail("Not a directory: " + abs)
	}
	// The agent owns its directory: it moves there after this batch.
	r := tools.OK(abs)
	r.Chdir = abs
	return r
}

// intOr returns *p, or def when p is nil.
func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// maxResults applies the default-200, cap-2000 rule of ls, find and grep.
func maxResults(p *int) int { return min(intOr(p, DefaultMaxResults), MaxResults) }
