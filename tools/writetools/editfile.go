package writetools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/unidiff"
)

type editFileArgs struct {
	Path          string            `json:"path"`
	Edits         []json.RawMessage `json:"edits"`
	ExpectedState *string           `json:"expectedState,omitempty"`
}

// EditFailure is the result of a failed edit_file call.
type EditFailure struct {
	ErrorType string `json:"errorType"`
	Path      string `json:"path"`
}

// EditFileResult is edit_file's success result.
type EditFileResult struct {
	Path          string   `json:"path"`
	EditsApplied  []string `json:"editsApplied"`
	TotalEdits    int      `json:"totalEdits"`
	OriginalLines int      `json:"originalLines"`
	NewLines      int      `json:"newLines"`
	Diff          string   `json:"diff"`
	WasTruncated  bool     `json:"wasTruncated"`
	FullDiff      string   `json:"fullDiff"`
}

func editFail(kind, abs, msg string) tools.Result {
	return tools.Result{Value: EditFailure{ErrorType: kind, Path: abs}, Error: msg}
}

// prepareEdit reads the file and simulates the edits: the part both
// halves share. A non-nil Result is the failure to return.
func prepareEdit(env *tools.Env, raw json.RawMessage) (a editFileArgs, abs, state, old string, sim simulation, fail *tools.Result) {
	failWith := func(r tools.Result) { fail = &r }
	if r := decode(raw, &a); r != nil {
		fail = r
		return
	}
	ops := make([]editOp, len(a.Edits))
	for i, e := range a.Edits {
		if err := json.Unmarshal(e, &ops[i]); err != nil {
			failWith(tools.Fail(fmt.Sprintf("edits.%d: %v", i, err)))
			return
		}
	}
	if issues := validateOps(ops); len(issues) > 0 {
		failWith(tools.Fail(strings.Join(issues, "; ")))
		return
	}
	abs = resolve(env, a.Path)
	if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
		failWith(editFail(FileNotFoundError, abs, "File does not exist: "+abs+". Cannot edit a file that doesn't exist."))
		return
	}
	state, content, _, err := fileState(abs)
	if err != nil {
		failWith(editFail(FileReadError, abs, "File exists but cannot be read: "+abs+". Cause: "+err.Error()))
		return
	}
	old = string(content)
	sim, eerr := simulate(old, ops)
	if eerr != nil {
		failWith(editFail(eerr.kind, abs, eerr.msg))
		return
	}
	return a, abs, state, old, sim, nil
}

func proposeEditFile(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	a, abs, state, old, sim, fail := prepareEdit(env, raw)
	if fail != nil {
		return *fail
	}
	msg := fmt.Sprintf("About to edit file: %s (%d lines total)\n\nEdits to perform:\n%s\n\nPress Ctrl+O to preview changes",
		abs, unidiff.LineCount(old), strings.Join(sim.items, "\n"))
	twin := editFileArgs{Path: argPath(abs), Edits: a.Edits, ExpectedState: &state}
	return approval("edit_file", msg, unidiff.Unified(baseName(abs), old, sim.text), twin)
}

func executeEditFile(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var probe editFileArgs
	if r := decode(raw, &probe); r != nil {
		return *r
	}
	if probe.ExpectedState == nil {
		return noPreview("edit_file")
	}
	a, abs, state, old, sim, fail := prepareEdit(env, raw)
	if fail != nil {
		// The file changed enough for the edits to fail: still a change.
		if abs != "" {
			if now, _, _, err := fileState(abs); err != nil || now != *probe.ExpectedState {
				return changed(abs)
			}
		}
		return *fail
	}
	if state != *a.ExpectedState {
		return changed(abs)
	}
	target, err := writeTarget(abs)
	if err == nil {
		err = writeAtomic(target, []byte(sim.text), 0)
	}
	if err != nil {
		return editFail(FileWriteError, abs, "Failed to write file: "+abs+". Cause: "+err.Error())
	}
	d := unidiff.ForDisplay(abs, old, sim.text)
	return tools.OK(EditFileResult{
		Path:          abs,
		EditsApplied:  sim.applied,
		TotalEdits:    len(sim.applied),
		OriginalLines: unidiff.LineCount(old),
		NewLines:      unidiff.LineCount(sim.text),
		Diff:          d.Diff,
		WasTruncated:  d.WasTruncated,
		FullDiff:      d.FullDiff,
	})
}

func baseName(abs string) string {
	if i := strings.LastIndexByte(abs, '/'); i >= 0 {
		return abs[i+1:]
	}
	return abs
}
