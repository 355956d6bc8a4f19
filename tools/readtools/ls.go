package readtools

import (
	"context"
	"encoding/json"
	"os"

	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/pattern"
)

type lsArgs struct {
	Path       *string `json:"path"`
	ShowHidden bool    `json:"showHidden"`
	Recursive  bool    `json:"recursive"`
	Pattern    string  `json:"pattern"`
	MaxResults *int    `json:"maxResults"`
	MaxDepth   *int    `json:"maxDepth"`
}

// lsEntry is one item of ls's bare array result.
type lsEntry struct {
	Path string `json:"path"`
	Name string `json:"name"`
	Type string `json:"type"` // "file" or "dir"; symlinks are "file"
}

func lsHandler(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a lsArgs
	if err := decode(raw, &a); err != nil {
		return badArgs(err)
	}
	abs := env.Cwd()
	if a.Path != nil && *a.Path != "" {
		abs = resolve(env, *a.Path)
	}
	g := guard(env)
	if err := g.Check(abs); err != nil {
		return tools.Fail(err.Error())
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return tools.Fail("Path not found: " + abs + ". " + err.Error())
	}
	if !fi.IsDir() {
		return tools.Fail("Not a directory: " + abs)
	}
	match, err := pattern.Compile(a.Pattern)
	if err != nil {
		return tools.Fail(err.Error())
	}
	limit := maxResults(a.MaxResults)
	depth := 1
	if a.Recursive {
		depth = intOr(a.MaxDepth, 10)
	}
	out := []lsEntry{}
	w := walker{root: abs, maxDepth: depth, hidden: a.ShowHidden, guard: &g, visit: func(e entry) bool {
		if !match(e.name) {
			return true
		}
		typ := "file"
		if e.d.IsDir() {
			typ = "dir"
		}
		out = append(out, lsEntry{Path: e.abs, Name: e.name, Type: typ})
		return len(out) < limit
	}}
	if err := w.run(ctx); err != nil {
		return tools.Fail("ls failed: " + err.Error())
	}
	return tools.OK(out)
}
