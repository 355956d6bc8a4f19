package writetools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/pathres"
)

type mkdirArgs struct {
	Path          string  `json:"path"`
	Recursive     *bool   `json:"recursive,omitempty"`
	ExpectedState *string `json:"expectedState,omitempty"`
}

// mkdirCheck applies mkdir's rules. done is a final result (success for
// an existing directory, or a failure); otherwise the directory can be
// created.
func mkdirCheck(abs string) (done *tools.Result) {
	if fi, err := os.Stat(abs); err == nil {
		r := tools.OK("Directory already exists: " + abs)
		if !fi.IsDir() {
			r = tools.Fail("Path exists but is not a directory: " + abs + "\n\nCannot create directory here.")
		}
		return &r
	}
	// The parent must exist even with recursive, as in the original.
	parent := filepath.Dir(abs)
	fi, err := os.Stat(parent)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r := tools.Fail(fmt.Sprintf("Cannot create directory '%s': parent directory '%s' does not exist. Use recursive=true to create parent directories.", abs, parent))
		return &r
	case err != nil:
		r := tools.Fail(err.Error())
		return &r
	case !fi.IsDir():
		r := tools.Fail(fmt.Sprintf("Cannot create directory '%s': '%s' is not a directory.", abs, parent))
		return &r
	}
	return nil
}

func proposeMkdir(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a mkdirArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	abs := resolve(env, a.Path)
	if r := mkdirCheck(abs); r != nil {
		return *r
	}
	state, err := pathState(abs)
	if err != nil {
		return tools.Fail(err.Error())
	}
	msg := "About to create directory: " + abs
	if a.Recursive == nil || *a.Recursive {
		msg += " (with parents)"
	}
	return approval("mkdir", msg, "", mkdirArgs{Path: argPath(abs), Recursive: a.Recursive, ExpectedState: &state})
}

func executeMkdir(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a mkdirArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	if a.ExpectedState == nil {
		return noPreview("mkdir")
	}
	abs := resolve(env, a.Path)
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return tools.Fail(fmt.Sprintf("Cannot create directory '%s': a file already exists at this path", abs))
	}
	if r := mkdirCheck(abs); r != nil {
		return *r // an existing directory is what was asked for
	}
	if state, err := pathState(abs); err != nil || state != *a.ExpectedState {
		return changed(abs)
	}
	if err := os.Mkdir(abs, 0o755); err != nil {
		return tools.Fail(err.Error())
	}
	return tools.OK("Directory created: " + abs)
}

type rmArgs struct {
	Path          string  `json:"path"`
	Recursive     bool    `json:"recursive,omitempty"`
	Force         bool    `json:"force,omitempty"`
	ExpectedState *string `json:"expectedState,omitempty"`
}

// critical says whether abs is a path rm and mv refuse: / and $HOME.
func critical(env *tools.Env, abs string) bool {
	return abs == "/" || (env.Home != "" && abs == filepath.Clean(env.Home))
}

// rmCheck applies rm's rules shared by both halves.
func rmCheck(env *tools.Env, input, abs string, recursive bool) *tools.Result {
	if critical(env, abs) {
		r := tools.Fail("Refusing to remove critical path: " + abs)
		return &r
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		r := tools.Fail(pathres.NotFound(env.Cwd(), input, abs))
		return &r
	}
	if err != nil {
		r := tools.Fail(err.Error())
		return &r
	}
	if fi.IsDir() && !recursive {
		r := tools.Fail("Path is a directory, use recursive: true")
		return &r
	}
	return nil
}

func proposeRm(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a rmArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	abs := resolve(env, a.Path)
	if r := rmCheck(env, a.Path, abs, a.Recursive); r != nil {
		return *r
	}
	state, err := pathState(abs)
	if err != nil {
		return tools.Fail(err.Error())
	}
	msg := "About to delete: "
	if a.Recursive {
		msg = "About to delete recursively: "
	}
	msg += abs + "\n\nThis action may be irreversible."
	return approval("rm", msg, "", rmArgs{Path: argPath(abs), Recursive: a.Recursive, Force: a.Force, ExpectedState: &state})
}

func executeRm(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a rmArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	if a.ExpectedState == nil {
		return noPreview("rm")
	}
	abs := resolve(env, a.Path)
	if critical(env, abs) {
		return tools.Fail("Refusing to remove critical path: " + abs)
	}
	if state, err := pathState(abs); err != nil || state != *a.ExpectedState {
		return changed(abs)
	}
	if r := rmCheck(env, a.Path, abs, a.Recursive); r != nil {
		return *r
	}
	var err error
	if a.Recursive {
		err = os.RemoveAll(abs)
	} else {
		err = os.Remove(abs)
	}
	if err != nil {
		return tools.Fail(err.Error())
	}
	return tools.OK("Removed: " + abs)
}

type moveArgs struct {
	Source        string  `json:"source"`
	Destination   string  `json:"destination"`
	Force         bool    `json:"force,omitempty"`
	ExpectedState *string `json:"expectedState,omitempty"`
}

// move describes mv or cp: their rules differ only in wording and act.
type move struct {
	name, verb, done string // "mv", "move", "Moved"
}

func mvOp() move { return move{"mv", "move", "Moved"} }
func cpOp() move { return move{"cp", "copy", "Copied"} }

// check applies the rules both halves share and returns the resolved
// source and destination.
func (m move) check(env *tools.Env, a moveArgs) (src, dst string, fail *tools.Result) {
	src, dst = resolve(env, a.Source), resolve(env, a.Destination)
	failWith := func(msg string) { r := tools.Fail(msg); fail = &r }
	if m.name == "mv" && critical(env, src) {
		failWith("Refusing to move critical path: " + src)
		return
	}
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		failWith(pathres.NotFound(env.Cwd(), a.Source, src))
		return
	} else if err != nil {
		failWith(m.name + " failed: " + err.Error())
		return
	}
	if dst == src || strings.HasPrefix(dst+"/", strings.TrimSuffix(src, "/")+"/") {
		failWith("Destination must not be within source: " + dst)
		return
	}
	if _, err := os.Lstat(dst); err == nil && !a.Force {
		if _, err := os.Stat(dst); err == nil { // a dangling link counts as missing
			failWith("Destination exists: " + dst + ". Use force: true to overwrite.")
			return
		}
	}
	return src, dst, nil
}

// state fingerprints both paths, one per line.
func (m move) state(src, dst string) (string, error) {
	s, err := pathState(src)
	if err != nil {
		return "", err
	}
	d, err := pathState(dst)
	if err != nil {
		return "", err
	}
	return s + "\n" + d, nil
}

func (m move) propose(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a moveArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	src, dst, fail := m.check(env, a)
	if fail != nil {
		return *fail
	}
	state, err := m.state(src, dst)
	if err != nil {
		return tools.Fail(m.name + " failed: " + err.Error())
	}
	msg := fmt.Sprintf("About to %s: %s\n       to: %s", m.verb, src, dst)
	if a.Force {
		msg += " (will overwrite if exists)"
	}
	return approval(m.name, msg, "", moveArgs{Source: argPath(src), Destination: argPath(dst), Force: a.Force, ExpectedState: &state})
}

func (m move) execute(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a moveArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	if a.ExpectedState == nil {
		return noPreview(m.name)
	}
	src, dst := resolve(env, a.Source), resolve(env, a.Destination)
	if m.name == "mv" && critical(env, src) {
		return tools.Fail("Refusing to move critical path: " + src)
	}
	srcWant, _, _ := strings.Cut(*a.ExpectedState, "\n")
	if state, err := m.state(src, dst); err != nil || state != *a.ExpectedState {
		if s, err := pathState(src); err != nil || s != srcWant {
			return changed(src)
		}
		return changed(dst)
	}
	if _, _, fail := m.check(env, a); fail != nil {
		return *fail
	}
	if a.Force {
		if err := os.RemoveAll(dst); err != nil {
			return tools.Fail(m.name + " failed: " + err.Error())
		}
	}
	var err error
	if m.name == "mv" {
		err = os.Rename(src, dst)
		if errors.Is(err, syscall.EXDEV) {
			// Another filesystem: copy whole, then remove the source.
			if err = copyTree(src, dst); err == nil {
				err = os.RemoveAll(src)
			}
		}
	} else {
		err = copyTree(src, dst)
	}
	if err != nil {
		return tools.Fail(m.name + " failed: " + err.Error())
	}
	return tools.OK(fmt.Sprintf("%s: %s → %s", m.done, src, dst))
}

func proposeMv(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	return mvOp().propose(ctx, env, raw)
}

func executeMv(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	return mvOp().execute(ctx, env, raw)
}

func proposeCp(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	return cpOp().propose(ctx, env, raw)
}

func executeCp(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	return cpOp().execute(ctx, env, raw)
}
