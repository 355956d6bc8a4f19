package writetools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf16"

	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/unidiff"
)

type writeFileArgs struct {
	Path          string  `json:"path"`
	Content       string  `json:"content"`
	CreateDirs    bool    `json:"createDirs,omitempty"`
	ExpectedState *string `json:"expectedState,omitempty"`
}

// WriteFileResult is write_file's success result.
type WriteFileResult struct {
	Path         string `json:"path"`
	Message      string `json:"message"`
	IsNewFile    bool   `json:"isNewFile"`
	Diff         string `json:"diff"`
	WasTruncated bool   `json:"wasTruncated"`
	FullDiff     string `json:"fullDiff"`
}

// checkParent applies the parent rule shared by both halves.
func checkParent(abs string, createDirs bool) *tools.Result {
	parent := filepath.Dir(abs)
	if _, err := os.Stat(parent); errors.Is(err, fs.ErrNotExist) && !createDirs {
		r := tools.Fail(fmt.Sprintf("Parent directory does not exist: %s. Pass createDirs: true to create it.", parent))
		return &r
	}
	return nil
}

func proposeWriteFile(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a writeFileArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	abs := resolve(env, a.Path)
	if r := checkParent(abs, a.CreateDirs); r != nil {
		return *r
	}
	state, old, exists, err := fileState(abs)
	if err != nil {
		return tools.Fail(err.Error())
	}
	msg := fmt.Sprintf("About to write %d characters to file: %s", utf16Len(a.Content), abs)
	if a.CreateDirs {
		msg += " (will create parent directories)"
	}
	if exists && len(old) > 0 {
		msg += fmt.Sprintf("\n\n⚠️  WARNING: This will overwrite the existing file (%d lines).\n   Consider using edit_file instead if you only need to modify part of the file.", unidiff.LineCount(string(old)))
	}
	msg += "\n\nPress Ctrl+O to preview changes"
	twin := writeFileArgs{Path: argPath(abs), Content: a.Content, CreateDirs: a.CreateDirs, ExpectedState: &state}
	return approval("write_file", msg, unidiff.Unified(filepath.Base(abs), string(old), a.Content), twin)
}

func executeWriteFile(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a writeFileArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	if a.ExpectedState == nil {
		return noPreview("write_file")
	}
	abs := resolve(env, a.Path)
	if r := checkParent(abs, a.CreateDirs); r != nil {
		return *r
	}
	state, old, exists, err := fileState(abs)
	if err != nil {
		// The preview could read it; failing now means it changed.
		return changed(abs)
	}
	if state != *a.ExpectedState {
		return changed(abs)
	}
	target, err := writeTarget(abs)
	if err != nil {
		return tools.Fail(err.Error())
	}
	if a.CreateDirs {
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return tools.Fail(err.Error())
		}
	}
	if err := writeAtomic(target, []byte(a.Content), 0); err != nil {
		return tools.Fail(err.Error())
	}
	d := unidiff.ForDisplay(abs, string(old), a.Content)
	res := WriteFileResult{Path: abs, IsNewFile: !exists, Diff: d.Diff, WasTruncated: d.WasTruncated, FullDiff: d.FullDiff}
	if exists {
		res.Message = "File written: " + abs
	} else {
		res.Message = "File created: " + abs
	}
	return tools.OK(res)
}

// utf16Len is JavaScript's string length, which the spec's counts use.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += max(1, utf16.RuneLen(r))
	}
	return n
}
