//go:build unix

package writetools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"unicode/utf16"

	"github.com/jazz-run/jazz/secrets"
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

// openWriteTarget resolves and reads what write_file writes, with the
// rules both halves share. A non-nil Result is the failure to return.
func openWriteTarget(ctx context.Context, g secrets.Guard, abs string, createDirs bool) (*target, *tools.Result) {
	t, err := inspect(ctx, g, abs, true, readContent)
	if err != nil {
		r := tools.Fail(err.Error())
		return nil, &r
	}
	fail := func(msg string) (*target, *tools.Result) {
		t.close()
		r := tools.Fail(msg)
		return nil, &r
	}
	if len(t.missing) > 0 && !createDirs {
		return fail(fmt.Sprintf("Parent directory does not exist: %s. Pass createDirs: true to create it.", filepath.Dir(t.real)))
	}
	switch t.kind {
	case "absent":
		if msg := tooDeep(t.real, 0); msg != "" {
			return fail(msg)
		}
		return t, nil
	case "file":
		return t, nil
	case "dir":
		return fail("Cannot write " + shown(t) + ": it is a directory.")
	}
	return fail("Cannot write " + shown(t) + ": it is a " + kindName(t.st) + ", not a regular file; write_file writes regular files only.")
}

func proposeWriteFile(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a writeFileArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	abs := resolve(env, a.Path)
	if r := contentTooLarge(abs, a.Content); r != nil {
		return *r
	}
	t, fail := openWriteTarget(ctx, guardOf(env), abs, a.CreateDirs)
	if fail != nil {
		return *fail
	}
	defer t.close()
	msg := fmt.Sprintf("About to write %d characters to file: %s", utf16Len(a.Content), disp(abs))
	if a.CreateDirs {
		msg += " (will create parent directories)"
	}
	msg += resolvedNote(t) + hardLinkNote(t)
	if len(t.content) > 0 {
		msg += fmt.Sprintf("\n\n⚠️  WARNING: This will overwrite the existing file (%d lines).\n   Consider using edit_file instead if you only need to modify part of the file.", unidiff.Lines(string(t.content)))
	}
	why := personOnly(env, t)
	state := t.sealed(why)
	twin := writeFileArgs{Path: argPath(abs), Content: a.Content, CreateDirs: a.CreateDirs, ExpectedState: &state}
	return approvalBy("write_file", msg, previewHeader(t)+unidiff.Unified(filepath.Base(abs), string(t.content), a.Content), why, twin)
}

func executeWriteFile(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a writeFileArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	if a.ExpectedState == nil {
		return noPreview("write_file")
	}
	abs := resolve(env, a.Path)
	if r := contentTooLarge(abs, a.Content); r != nil {
		return *r
	}
	t, fail := openWriteTarget(ctx, guardOf(env), abs, a.CreateDirs)
	if fail != nil {
		// The preview could read it; failing now means it changed.
		return unlessStopped(ctx, "write_file", changed(abs))
	}
	defer t.close()
	if t.sealed(personOnly(env, t)) != *a.ExpectedState {
		return unlessStopped(ctx, "write_file", changed(abs))
	}
	if err := replaceFile(ctx, t, []byte(a.Content)); err != nil {
		switch {
		case errors.Is(err, errChanged):
			return changed(abs)
		case isStop(err):
			return stopped("write_file", err, "Nothing was written: "+shown(t)+" is as it was.")
		}
		return tools.Fail(err.Error())
	}
	old := string(t.content)
	d := unidiff.ForDisplay(abs, old, a.Content)
	res := WriteFileResult{Path: abs, IsNewFile: t.st == nil, Diff: d.Diff, WasTruncated: d.WasTruncated, FullDiff: d.FullDiff}
	if t.st != nil {
		res.Message = "File written: " + shown(t)
	} else {
		res.Message = "File created: " + shown(t)
	}
	return tools.OK(res)
}

// contentTooLarge refuses content past maxWriteBytes, before anything
// is read or diffed.
func contentTooLarge(abs, content string) *tools.Result {
	if len(content) <= maxWriteBytes {
		return nil
	}
	r := tools.Fail(fmt.Sprintf("Cannot write %s: the content is %s, more than the %s write_file and edit_file write; nothing was changed. Generate a file that large with a command instead.", disp(abs), formatSize(int64(len(content))), formatSize(maxWriteBytes)))
	return &r
}

// previewHeader opens a preview diff with the real target when symbolic
// links make it differ from the path shown; git apply skips such a line.
func previewHeader(t *target) string {
	if t.real == t.lexical {
		return ""
	}
	return "Writes " + disp(t.real) + " (through symbolic links from " + disp(t.lexical) + ")\n"
}

// utf16Len is JavaScript's string length, which the spec's counts use.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += max(1, utf16.RuneLen(r))
	}
	return n
}
