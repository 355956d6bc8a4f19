//go:build unix

package writetools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/pathres"
)

// twinFailure maps an error of a twin's act to its result: a change since
// the preview, a stop (ctx ended, nothing changed), or the error itself.
func twinFailure(name, abs string, err error, prefix string) tools.Result {
	switch {
	case errors.Is(err, errChanged):
		return changed(abs)
	case isStop(err):
		return stopped(name, err, "Nothing was changed.")
	}
	return tools.Fail(prefix + err.Error())
}

type mkdirArgs struct {
	Path          string  `json:"path"`
	Recursive     *bool   `json:"recursive,omitempty"`
	ExpectedState *string `json:"expectedState,omitempty"`
}

// followsToDir says whether abs names a directory once every link,
// the last one included, is followed (existence checks follow links).
func followsToDir(ctx context.Context, g secrets.Guard, abs string) bool {
	return followedKind(ctx, g, abs) == "dir"
}

// followedKind is what abs is once every link is followed: "absent" for
// a dangling link (existence checks follow links), "dir" for a path that
// resolves to / itself.
func followedKind(ctx context.Context, g secrets.Guard, abs string) string {
	t, err := inspect(ctx, g, abs, true, identityOnly)
	defer t.close()
	var re *rootError
	switch {
	case errors.As(err, &re):
		return "dir"
	case err != nil:
		return "absent"
	}
	return t.kind
}

// mkdirTarget applies mkdir's rules. done is a final result (success for
// an existing directory, or a failure); otherwise t is where the
// directory goes, and the caller closes it.
func mkdirTarget(ctx context.Context, g secrets.Guard, abs string) (t *target, done *tools.Result) {
	finish := func(r tools.Result) (*target, *tools.Result) {
		t.close()
		return nil, &r
	}
	t, err := inspect(ctx, g, abs, false, identityOnly)
	var nd *notDirError
	var re *rootError
	switch {
	case errors.As(err, &re):
		return finish(tools.OK("Directory already exists: " + abs))
	case errors.As(err, &nd):
		return finish(tools.Fail(fmt.Sprintf("Cannot create directory '%s': '%s' is not a directory.", abs, nd.path)))
	case err != nil:
		return finish(tools.Fail(err.Error()))
	case t.kind == "dir" || t.kind == "link" && followsToDir(ctx, g, abs):
		return finish(tools.OK("Directory already exists: " + abs))
	case t.kind != "absent":
		return finish(tools.Fail("Path exists but is not a directory: " + abs + "\n\nCannot create directory here."))
	case len(t.missing) > 0:
		// The parent must exist even with recursive, as in the original.
		return finish(tools.Fail(fmt.Sprintf("Cannot create directory '%s': parent directory '%s' does not exist. Use recursive=true to create parent directories.", abs, parentOf(t))))
	}
	if msg := tooDeep(t.real, 0); msg != "" {
		return finish(tools.Fail(msg))
	}
	return t, nil
}

// parentOf is the directory a missing leaf would be created in, as
// written when no link is involved, else as resolved.
func parentOf(t *target) string {
	if t.real == t.lexical {
		return filepath.Dir(t.lexical)
	}
	return filepath.Dir(t.real)
}

func proposeMkdir(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a mkdirArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	abs := resolve(env, a.Path)
	t, done := mkdirTarget(ctx, guardOf(env), abs)
	if done != nil {
		return *done
	}
	defer t.close()
	msg := "About to create directory: " + disp(abs)
	if a.Recursive == nil || *a.Recursive {
		msg += " (with parents)"
	}
	msg += resolvedNote(t)
	why := personOnly(env, t)
	state := t.sealed(why)
	return approvalBy("mkdir", msg, "", why, mkdirArgs{Path: argPath(abs), Recursive: a.Recursive, ExpectedState: &state})
}

func executeMkdir(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a mkdirArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	if a.ExpectedState == nil {
		return noPreview("mkdir")
	}
	abs := resolve(env, a.Path)
	t, done := mkdirTarget(ctx, guardOf(env), abs)
	if done != nil {
		if strings.HasPrefix(done.Error, "Path exists but is not a directory") {
			return tools.Fail(fmt.Sprintf("Cannot create directory '%s': a file already exists at this path", abs))
		}
		return unlessStopped(ctx, "mkdir", *done) // an existing directory is what was asked for
	}
	defer t.close()
	if t.sealed(personOnly(env, t)) != *a.ExpectedState {
		return unlessStopped(ctx, "mkdir", changed(abs))
	}
	if err := ctx.Err(); err != nil {
		return stopped("mkdir", err, "Nothing was created.")
	}
	if err := unix.Mkdirat(t.parent, t.leaf, 0o755); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return changed(abs)
		}
		return tools.Fail(pathErr("mkdir", t.real, err).Error())
	}
	syncDirAt(t.parent)
	return tools.OK("Directory created: " + shown(t))
}

type rmArgs struct {
	Path          string  `json:"path"`
	Recursive     bool    `json:"recursive,omitempty"`
	Force         bool    `json:"force,omitempty"`
	ExpectedState *string `json:"expectedState,omitempty"`
}

// critical says whether any of paths is one rm, mv and a replacing cp
// refuse: / and $HOME, as written or with its links resolved.
func critical(env *tools.Env, paths ...string) bool {
	crit := []string{"/"}
	if env.Home != "" {
		home := filepath.Clean(env.Home)
		crit = append(crit, home)
		if real, err := filepath.EvalSymlinks(home); err == nil {
			crit = append(crit, real)
		}
	}
	for _, p := range paths {
		for _, c := range crit {
			if p == c {
				return true
			}
		}
	}
	return false
}

// within says whether p is base or lies under it.
func within(p, base string) bool {
	return p == base || strings.HasPrefix(p+"/", strings.TrimSuffix(base, "/")+"/")
}

// rmTarget applies rm's rules shared by both halves; the caller closes t.
func rmTarget(ctx context.Context, env *tools.Env, input, abs string, recursive bool) (t *target, fail *tools.Result) {
	failWith := func(msg string) (*target, *tools.Result) {
		t.close()
		r := tools.Fail(msg)
		return nil, &r
	}
	if critical(env, abs) {
		return failWith("Refusing to remove critical path: " + abs)
	}
	t, err := inspect(ctx, guardOf(env), abs, false, objectState)
	if errors.Is(err, fs.ErrNotExist) {
		return failWith(pathres.NotFound(env.Cwd(), input, abs))
	}
	if err != nil {
		return failWith(err.Error())
	}
	if critical(env, t.real) {
		return failWith("Refusing to remove critical path: " + shown(t))
	}
	isDir := t.kind == "dir"
	switch {
	case t.kind == "absent":
		return failWith(pathres.NotFound(env.Cwd(), input, abs))
	case t.kind == "link":
		// Existence follows links: a dangling link is missing.
		kind := followedKind(ctx, guardOf(env), abs)
		if kind == "absent" {
			return failWith(pathres.NotFound(env.Cwd(), input, abs))
		}
		isDir = kind == "dir"
	}
	if isDir && !recursive {
		return failWith("Path is a directory, use recursive: true")
	}
	return t, nil
}

func proposeRm(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a rmArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	abs := resolve(env, a.Path)
	t, fail := rmTarget(ctx, env, a.Path, abs, a.Recursive)
	if fail != nil {
		return *fail
	}
	defer t.close()
	msg := "About to delete: "
	if a.Recursive {
		msg = "About to delete recursively: "
	}
	msg += disp(abs) + resolvedNote(t) + "\n\nThis removes " + destroyed(t) + ".\n\nThis action may be irreversible."
	why := personOnly(env, t)
	state := t.sealed(why)
	return approvalBy("rm", msg, "", why, rmArgs{Path: argPath(abs), Recursive: a.Recursive, Force: a.Force, ExpectedState: &state})
}

func executeRm(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
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
	t, fail := rmTarget(ctx, env, a.Path, abs, a.Recursive)
	if fail != nil {
		if strings.HasPrefix(fail.Error, "Refusing") {
			return *fail
		}
		return unlessStopped(ctx, "rm", changed(abs))
	}
	defer t.close()
	if t.sealed(personOnly(env, t)) != *a.ExpectedState {
		return unlessStopped(ctx, "rm", changed(abs))
	}
	aside, err := takeAside(ctx, t)
	if err != nil {
		return twinFailure("rm", abs, err, "")
	}
	if r := destroyAside(ctx, "rm", t, aside, true); r != "" {
		return tools.Fail(r)
	}
	syncDirAt(t.parent)
	return tools.OK("Removed: " + shown(t))
}

// entries is how many directory entries removing t removes.
func entries(t *target) int {
	if t.kind != "dir" {
		return 1
	}
	return 1 + t.tree.files + t.tree.dirs + t.tree.links + t.tree.others
}

// destroyAside removes what takeAside moved aside. When that stops half
// way (ctx ended, or an entry cannot be removed), it says exactly what is
// left and where: with restore, the remains go back to t's name (rm);
// otherwise the name is taken by the new content and they stay aside.
// "" means everything went.
func destroyAside(ctx context.Context, name string, t *target, aside string, restore bool) string {
	removed, err := removeAt(ctx, t.parent, aside, filepath.Join(t.parentPath, aside))
	if err == nil {
		return ""
	}
	why := "an entry could not be removed (" + err.Error() + ")"
	if isStop(err) {
		why = stopReason(err)
	}
	where := "what remains is at " + filepath.Join(t.parentPath, aside)
	if restore {
		if perr := putBack(t, aside); perr != nil {
			where = perr.Error()
		} else {
			where = "what remains is back at " + shown(t)
		}
	}
	return fmt.Sprintf("%s stopped because %s after removing %d of %d entries of %s; %s.",
		name, why, removed, entries(t), t.lexical, where)
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

// targets resolves both paths: the source (cp follows a link there, mv
// moves the link) and the destination name itself. The caller closes
// both; on error neither is open.
func (m move) targets(ctx context.Context, g secrets.Guard, src, dst string) (s, d *target, err error) {
	s, err = inspect(ctx, g, src, m.name == "cp", objectState)
	if err != nil {
		return nil, nil, err
	}
	d, err = inspect(ctx, g, dst, false, objectState)
	if err != nil {
		s.close()
		return nil, nil, err
	}
	return s, d, nil
}

// rules applies what both halves check, on resolved targets.
func (m move) rules(ctx context.Context, env *tools.Env, a moveArgs, s, d *target) *tools.Result {
	fail := func(msg string) *tools.Result { r := tools.Fail(msg); return &r }
	srcMissing := s.kind == "absent" || s.kind == "link" && !existsFollowing(ctx, s.guard, s.lexical)
	if srcMissing {
		return fail(pathres.NotFound(env.Cwd(), a.Source, s.lexical))
	}
	if m.name == "mv" && critical(env, s.lexical, s.real) {
		return fail("Refusing to move critical path: " + shown(s))
	}
	if m.name == "cp" && s.kind != "file" && s.kind != "dir" {
		return fail(fmt.Sprintf("cp failed: cannot copy %s: it is a %s, not a regular file, directory or link", shown(s), kindName(s.st)))
	}
	if within(d.lexical, s.lexical) {
		return fail("Destination must not be within source: " + d.lexical)
	}
	if within(d.real, s.real) {
		return fail("Destination must not be within source: " + d.lexical + " (through symbolic links, " + d.real + " is within " + s.real + ")")
	}
	if len(d.missing) > 0 {
		return fail(m.name + " failed: the destination's directory does not exist: " + parentOf(d))
	}
	if msg := tooDeep(d.real, s.tree.depth); msg != "" {
		return fail(m.name + " failed: " + msg)
	}
	if d.kind == "absent" || d.kind == "link" && !existsFollowing(ctx, d.guard, d.lexical) {
		return nil // a dangling link counts as missing; the message says it goes
	}
	if !a.Force {
		return fail("Destination exists: " + d.lexical + ". Use force: true to overwrite.")
	}
	if critical(env, d.lexical, d.real) {
		return fail("Refusing to replace critical path: " + shown(d))
	}
	if m.name == "mv" && within(s.real, d.real) {
		return fail("Destination contains the source: " + shown(d) + "; replacing it would destroy the source.")
	}
	return nil
}

// humanOnly is the verdict on a move or copy: what lands at the
// destination (the source's tree entries included) and what goes (the
// source for mv, a replaced destination for both).
func (m move) humanOnly(env *tools.Env, s, d *target) string {
	paths := targetPaths(d)
	if s.tree.escalates != "" {
		paths = append(paths, filepath.Join(d.real, s.tree.escalates))
	}
	if m.name == "mv" {
		paths = append(paths, targetPaths(s)...)
	}
	if why := humanOnly(env, paths...); why != "" {
		return why
	}
	if why := readOnly(d, true); why != "" {
		return why
	}
	if m.name == "mv" {
		return readOnly(s, false)
	}
	return ""
}

// existsFollowing says whether abs exists once every link is followed.
func existsFollowing(ctx context.Context, g secrets.Guard, abs string) bool {
	return followedKind(ctx, g, abs) != "absent"
}

func (m move) propose(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a moveArgs
	if r := decode(raw, &a); r != nil {
		return *r
	}
	src, dst := resolve(env, a.Source), resolve(env, a.Destination)
	if m.name == "mv" && critical(env, src) {
		return tools.Fail("Refusing to move critical path: " + src)
	}
	s, d, err := m.targets(ctx, guardOf(env), src, dst)
	if errors.Is(err, fs.ErrNotExist) {
		return tools.Fail(pathres.NotFound(env.Cwd(), a.Source, src))
	}
	if err != nil {
		return tools.Fail(m.name + " failed: " + err.Error())
	}
	defer s.close()
	defer d.close()
	if r := m.rules(ctx, env, a, s, d); r != nil {
		return *r
	}
	msg := fmt.Sprintf("About to %s: %s\n       to: %s", m.verb, disp(src), disp(dst))
	msg += resolvedNote(s) + resolvedNote(d)
	if d.kind != "absent" {
		msg += "\n\nThis replaces " + destroyed(d) + "."
	}
	why := m.humanOnly(env, s, d)
	state := s.fingerprint() + " " + d.sealed(why)
	return approvalBy(m.name, msg, "", why, moveArgs{Source: argPath(src), Destination: argPath(dst), Force: a.Force, ExpectedState: &state})
}

func (m move) execute(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
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
	srcWant, dstWant, _ := strings.Cut(*a.ExpectedState, " ")
	s, d, err := m.targets(ctx, guardOf(env), src, dst)
	if err != nil {
		now, err := inspect(ctx, guardOf(env), src, m.name == "cp", objectState)
		same := err == nil && now.fingerprint() == srcWant
		now.close()
		if !same {
			return unlessStopped(ctx, m.name, changed(src))
		}
		return unlessStopped(ctx, m.name, changed(dst))
	}
	defer s.close()
	defer d.close()
	switch {
	case s.fingerprint() != srcWant:
		return unlessStopped(ctx, m.name, changed(src))
	case d.sealed(m.humanOnly(env, s, d)) != dstWant:
		return unlessStopped(ctx, m.name, changed(dst))
	}
	if r := m.rules(ctx, env, a, s, d); r != nil {
		return unlessStopped(ctx, m.name, *r)
	}
	if err := ctx.Err(); err != nil {
		return stopped(m.name, err, "Nothing was changed.")
	}
	if m.name == "mv" {
		return m.moveTo(ctx, s, d)
	}
	return m.copyTo(ctx, s, d)
}

// result is the success line, with resolutions shown.
func (m move) result(s, d *target) tools.Result {
	return tools.OK(fmt.Sprintf("%s: %s → %s", m.done, shown(s), shown(d)))
}

// copyTo builds the copy under a hidden name beside the destination,
// then puts it in place: the destination appears whole or not at all, and
// what it replaces is taken aside, checked, and only then removed.
//
// A file copied over a file gives it new content and keeps what it was,
// as cp(1) does: its owner, group and permission bits, not the process's
// and the source's (as root, a user's 0600 file became root's; a 0644
// one became executable). A copy that cannot keep them changes nothing.
func (m move) copyTo(ctx context.Context, s, d *target) tools.Result {
	tmp, discard, fail := m.copyAside(ctx, s, d, "the partial copy was removed")
	if fail != nil {
		return *fail
	}
	if s.kind == "file" && d.kind == "file" {
		err := unix.Fchownat(d.parent, tmp, int(d.st.Uid), int(d.st.Gid), unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			err = unix.Fchmodat(d.parent, tmp, uint32(d.st.Mode)&0o777, 0)
		}
		if err != nil {
			discard()
			return tools.Fail(fmt.Sprintf("cp failed: cannot keep %s's owner, group and mode (%d:%d, %04o) on its new content, so nothing was changed: %v",
				disp(d.lexical), d.st.Uid, d.st.Gid, uint32(d.st.Mode)&0o777, err))
		}
	}
	return m.place(ctx, d, tmp, discard, func() tools.Result { return m.result(s, d) })
}

// copyAside copies s under a hidden name in d's directory. discard
// removes that copy; on failure it is already removed, and undone says
// so in the stop report.
func (m move) copyAside(ctx context.Context, s, d *target, undone string) (tmp string, discard func(), fail *tools.Result) {
	tmp = tempName(d.leaf)
	tmpPath := filepath.Join(d.parentPath, tmp)
	discard = func() { removeAt(context.Background(), d.parent, tmp, tmpPath) }
	if err := copyAt(ctx, s.guard, s.parent, s.leaf, s.real, s.st, d.parent, tmp, tmpPath); err != nil {
		discard()
		r := tools.Fail(m.name + " failed: " + err.Error())
		if isStop(err) {
			r = stopped(m.name, err, "Nothing was changed: "+undone+".")
		}
		return "", nil, &r
	}
	return tmp, discard, nil
}

// place renames the finished tmp to d's name, replacing what the preview
// showed there. undo discards tmp when it cannot be placed.
func (m move) place(ctx context.Context, d *target, tmp string, undo func(), ok func() tools.Result) tools.Result {
	aside := ""
	if d.kind != "absent" {
		var err error
		if aside, err = takeAside(ctx, d); err != nil {
			undo()
			return twinFailure(m.name, d.lexical, err, m.name+" failed: ")
		}
	}
	if err := renameNoReplace(d.parent, tmp, d.parent, d.leaf); err != nil {
		undo()
		if aside != "" {
			if perr := putBack(d, aside); perr != nil {
				return tools.Fail(m.name + " failed: " + perr.Error())
			}
		}
		if errors.Is(err, unix.EEXIST) {
			return changed(d.lexical)
		}
		return tools.Fail(m.name + " failed: " + pathErr("rename", d.real, err).Error())
	}
	syncDirAt(d.parent)
	if aside != "" {
		if r := destroyAside(ctx, m.name, d, aside, false); r != "" {
			return tools.Fail(fmt.Sprintf("%s: %s is in place, but the replaced entry was not fully removed: %s", m.done, d.lexical, r))
		}
	}
	return ok()
}

// moveTo renames the source to the destination; across filesystems it
// copies, places the copy, then removes the source, reporting exactly how
// far it got if it is stopped.
func (m move) moveTo(ctx context.Context, s, d *target) tools.Result {
	aside := ""
	if d.kind != "absent" {
		var err error
		if aside, err = takeAside(ctx, d); err != nil {
			return twinFailure(m.name, d.lexical, err, "mv failed: ")
		}
	}
	restore := func() error {
		if aside == "" {
			return nil
		}
		return putBack(d, aside)
	}
	err := renameNoReplace(s.parent, s.leaf, d.parent, d.leaf)
	if errors.Is(err, unix.EXDEV) {
		if perr := restore(); perr != nil {
			return tools.Fail("mv failed: " + perr.Error())
		}
		return m.moveAcross(ctx, s, d)
	}
	if err != nil {
		if perr := restore(); perr != nil {
			return tools.Fail("mv failed: " + perr.Error())
		}
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EEXIST) {
			return changed(s.lexical)
		}
		return tools.Fail("mv failed: " + pathErr("rename", s.real, err).Error())
	}
	// The name was checked before the rename; the moved entry is checked
	// after it, and moved back if it is not the one the preview saw.
	if st, err := lstatAt(d.parent, d.leaf); err != nil || !sameFile(st, s.st) {
		if err == nil {
			unix.Renameat(d.parent, d.leaf, s.parent, s.leaf)
		}
		if perr := restore(); perr != nil {
			return tools.Fail("mv failed: " + perr.Error())
		}
		return changed(s.lexical)
	}
	syncDirAt(d.parent)
	syncDirAt(s.parent)
	if aside != "" {
		if r := destroyAside(ctx, m.name, d, aside, false); r != "" {
			return tools.Fail(fmt.Sprintf("Moved: %s → %s, but the replaced entry was not fully removed: %s", s.lexical, d.lexical, r))
		}
	}
	return m.result(s, d)
}

// moveAcross is mv between filesystems: copy, place, remove the source.
func (m move) moveAcross(ctx context.Context, s, d *target) tools.Result {
	tmp, discard, fail := m.copyAside(ctx, s, d, "the partial copy on the other filesystem was removed")
	if fail != nil {
		return *fail
	}
	return m.place(ctx, d, tmp, discard, func() tools.Result {
		saside, err := takeAside(ctx, s)
		if err != nil {
			why := err.Error()
			switch {
			case isStop(err):
				why = "mv stopped because " + stopReason(err)
			case errors.Is(err, errChanged):
				why = s.lexical + " changed since the preview was approved"
			}
			return tools.Fail(fmt.Sprintf("mv copied %s to %s (another filesystem), but removing the source did not finish: %s before removing anything; what remains is back at %s.", s.lexical, d.lexical, why, shown(s)))
		}
		if r := destroyAside(ctx, m.name, s, saside, true); r != "" {
			return tools.Fail(fmt.Sprintf("mv copied %s to %s (another filesystem), but removing the source did not finish: %s", s.lexical, d.lexical, r))
		}
		syncDirAt(s.parent)
		return m.result(s, d)
	})
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
