//go:build unix

package writetools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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
// halves share. A non-nil Result is the failure to return; otherwise the
// caller closes t.
func prepareEdit(ctx context.Context, env *tools.Env, a editFileArgs) (abs string, t *target, sim simulation, fail *tools.Result) {
	failWith := func(r tools.Result) { fail = &r }
	if len(a.Edits) > maxEdits {
		// Before any edit is decoded: simulate would refuse them anyway.
		failWith(tools.Fail(tooManyEdits(len(a.Edits)).msg))
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
	t, err := inspect(ctx, guardOf(env), abs, true, readContent)
	if err == nil && t.kind == "absent" || errors.Is(err, fs.ErrNotExist) {
		t.close()
		failWith(editFail(FileNotFoundError, abs, "File does not exist: "+abs+". Cannot edit a file that doesn't exist."))
		return
	}
	if err == nil && t.kind != "file" {
		err = fmt.Errorf("it is a %s, not a regular file", kindName(t.st))
		t.close()
	}
	if err != nil {
		failWith(editFail(FileReadError, abs, "File exists but cannot be read: "+abs+". Cause: "+err.Error()))
		return
	}
	sim, eerr := simulate(ctx, string(t.content), ops, callLimits())
	if eerr != nil {
		t.close()
		failWith(editFail(eerr.kind, abs, eerr.msg))
		return
	}
	return abs, t, sim, nil
}

func proposeEditFile(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a editFileArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	abs, t, sim, fail := prepareEdit(ctx, env, a)
	if fail != nil {
		return *fail
	}
	defer t.close()
	old := string(t.content)
	msg := fmt.Sprintf("About to edit file: %s (%d lines total)%s%s\n\nEdits to perform:\n%s",
		disp(abs), unidiff.LineCount(old), resolvedNote(t), hardLinkNote(t), strings.Join(sim.items, "\n"))
	why := personOnly(env, t)
	state := t.sealed(why)
	twin := editFileArgs{Path: argPath(abs), Edits: a.Edits, ExpectedState: &state}
	return approvalBy("edit_file", msg, previewHeader(t)+unidiff.Unified(baseName(abs), old, sim.text), why, twin)
}

func executeEditFile(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a editFileArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	if a.ExpectedState == nil {
		return noPreview("edit_file")
	}
	abs, t, sim, fail := prepareEdit(ctx, env, a)
	if fail != nil {
		// The file changed enough for the edits to fail: still a change.
		if abs != "" {
			now, err := inspect(ctx, guardOf(env), abs, true, readContent)
			same := err == nil && now.sealed(personOnly(env, now)) == *a.ExpectedState
			now.close()
			if !same {
				return unlessStopped(ctx, "edit_file", changed(abs))
			}
		}
		return unlessStopped(ctx, "edit_file", *fail)
	}
	defer t.close()
	if t.sealed(personOnly(env, t)) != *a.ExpectedState {
		return unlessStopped(ctx, "edit_file", changed(abs))
	}
	if err := replaceFile(ctx, t, []byte(sim.text)); err != nil {
		switch {
		case errors.Is(err, errChanged):
			return changed(abs)
		case isStop(err):
			return stopped("edit_file", err, "No edit was made: "+shown(t)+" is as it was.")
		}
		return editFail(FileWriteError, abs, "Failed to write file: "+abs+". Cause: "+err.Error())
	}
	old := string(t.content)
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
