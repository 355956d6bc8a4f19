// Package safefile reads the files jazz trusts before and during a run
// (config, agents, personas, history, trust records, replay scripts) and
// checks who could have changed them.
//
// Read opens only regular files, without blocking on a FIFO or a device,
// reads at most a stated number of bytes, and gives up when its context
// ends. With Private it also refuses, as ssh does with its own files, a
// file or directory that another user could have written: one writable by
// group or others, or owned by anyone but the user and root. The checks
// that need POSIX ownership live behind the unix build tag; elsewhere they
// accept everything (Windows has ACLs, not modes).
package safefile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNotRegular matches (errors.Is) a path that is not a regular file: a
// FIFO, a device, a socket or a directory.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge matches a file bigger than the limit its reader set.
var ErrTooLarge = errors.New("file too large")

// ErrUnsafe matches a file or directory that another user could have
// changed.
var ErrUnsafe = errors.New("unsafe ownership or permissions")

// Options says how Read treats a file.
type Options struct {
	// MaxBytes is the largest file accepted; it must be positive.
	MaxBytes int64
	// What names the file in messages ("config file"); "" means "file".
	What string
	// Private refuses the file when someone other than the user or root
	// could have written it or a directory above it (see CheckPrivate).
	Private bool
	// Restrict tightens a Private file that group or others may read to
	// 0600, through the opened descriptor and never through a symlink. What
	// could not be done is reported by Read's warnings.
	Restrict bool
}

func (o Options) what() string {
	if o.What == "" {
		return "file"
	}
	return o.What
}

// NotRegularError is a path Read refused because it is not a regular file.
type NotRegularError struct {
	What, Path string
	Mode       fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s %s is %s, not a regular file; jazz reads only regular files here", e.What, e.Path, kindOf(e.Mode))
}

// Is makes errors.Is(err, ErrNotRegular) true.
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// TooLargeError is a file over its reader's limit.
type TooLargeError struct {
	What, Path string
	// Size is what fstat reported, or Limit+1 when the file grew while
	// being read.
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s %s is %s, over the limit of %s", e.What, e.Path, Bytes(e.Size), Bytes(e.Limit))
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// UnsafeError is a file or directory another user could have changed.
type UnsafeError struct {
	// Path is the file or directory at fault; File is the file being read
	// when Path is one of its directories.
	Path, File string
	// Reason says what is wrong ("writable by group and others (mode 0777)").
	Reason string
	// Fix is a command that repairs it, when there is a simple one.
	Fix string
}

func (e *UnsafeError) Error() string {
	msg := fmt.Sprintf("refusing %s: it is %s, so another user could change what jazz trusts", e.Path, e.Reason)
	if e.File != "" && e.File != e.Path {
		msg = fmt.Sprintf("refusing %s: its directory %s is %s, so another user could change what jazz trusts", e.File, e.Path, e.Reason)
	}
	if e.Fix != "" {
		msg += ". Fix: " + e.Fix
	}
	return msg
}

// Is makes errors.Is(err, ErrUnsafe) true.
func (e *UnsafeError) Is(target error) bool { return target == ErrUnsafe }

// DeadlineError is a read that its context stopped.
type DeadlineError struct {
	What, Path string
	Cause      error
}

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("%s %s was not read before the run's deadline: %v", e.What, e.Path, e.Cause)
}

func (e *DeadlineError) Unwrap() error { return e.Cause }

// Read returns the content of the regular file at path, under o's rules,
// plus warnings for stderr (from Restrict). A missing file is an error
// matching fs.ErrNotExist. Read returns when ctx ends even if the file
// system does not answer (the abandoned read finishes on its own).
func Read(ctx context.Context, path string, o Options) ([]byte, []string, error) {
	if o.MaxBytes <= 0 {
		return nil, nil, fmt.Errorf("read %s: no size limit given", path)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, &DeadlineError{What: o.what(), Path: path, Cause: err}
	}
	if ctx.Done() == nil {
		return read(ctx, path, o)
	}
	type result struct {
		data  []byte
		warns []string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		d, w, err := read(ctx, path, o)
		done <- result{d, w, err}
	}()
	select {
	case r := <-done:
		return r.data, r.warns, r.err
	case <-ctx.Done():
		return nil, nil, &DeadlineError{What: o.what(), Path: path, Cause: ctx.Err()}
	}
}

func read(ctx context.Context, path string, o Options) ([]byte, []string, error) {
	f, err := Open(path)
	if err != nil {
		return nil, nil, relabel(err, o.what())
	}
	defer f.Close()
	if f.Info.Size() > o.MaxBytes {
		return nil, nil, &TooLargeError{What: o.what(), Path: path, Size: f.Info.Size(), Limit: o.MaxBytes}
	}
	var warns []string
	if o.Private {
		if err := checkOpened(path, f.Info); err != nil {
			return nil, nil, err
		}
		if o.Restrict {
			if w := restrict(f.File, path, f.Info, o.what()); w != "" {
				warns = append(warns, w)
			}
		}
	}
	data, err := f.ReadAll(ctx, o.MaxBytes)
	if err != nil {
		return nil, nil, relabel(err, o.what())
	}
	return data, warns, nil
}

// relabel names the file in Open's and ReadAll's errors as the caller
// calls it ("config file") instead of "file".
func relabel(err error, what string) error {
	var nr *NotRegularError
	var tl *TooLargeError
	var de *DeadlineError
	switch {
	case errors.As(err, &nr):
		nr.What = what
	case errors.As(err, &tl):
		tl.What = what
	case errors.As(err, &de):
		de.What = what
	}
	return err
}

// checkOpened applies CheckPrivate's rules to an opened file: fi is its
// fstat, so the file judged is the file read, whatever path now names.
func checkOpened(path string, fi fs.FileInfo) error {
	if reason, fix := judge(path, fi); reason != "" {
		return &UnsafeError{Path: path, File: path, Reason: reason, Fix: fix}
	}
	return checkAbove(path)
}

// CheckPrivate refuses path (a file or a directory; symlinks followed)
// when someone other than the user or root could have written it or any
// directory above it, along both its path as written and its resolved
// path: each must be owned by the user or root and not be writable by
// group or others, except a directory with the sticky bit (such as /tmp),
// where others cannot replace what they do not own. A symlink on the way
// must be owned by the user or root. This is the rule ssh applies to its
// own files; a missing path is an error matching fs.ErrNotExist.
func CheckPrivate(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if reason, fix := judge(path, fi); reason != "" {
		return &UnsafeError{Path: path, Reason: reason, Fix: fix}
	}
	return checkAbove(path)
}

// checkAbove checks the directories above path and any symlink on the way.
func checkAbove(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if err := checkLink(abs, path); err != nil {
		return err
	}
	if err := checkChain(filepath.Dir(abs), path); err != nil {
		return err
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil || resolved == abs {
		return nil // nothing resolved differently (or it vanished: the open decides)
	}
	return checkChain(filepath.Dir(resolved), path)
}

// checkChain checks dir and every directory above it.
func checkChain(dir, file string) error {
	for d := dir; ; {
		if err := checkLink(d, file); err != nil {
			return err
		}
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("check %s: %w", d, err)
		}
		if reason, fix := judge(d, fi); reason != "" {
			return &UnsafeError{Path: d, File: file, Reason: reason, Fix: fix}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil
		}
		d = parent
	}
}

// checkLink refuses p when it is a symlink owned by another user: its
// owner can point it elsewhere.
func checkLink(p, file string) error {
	li, err := os.Lstat(p)
	if err != nil || li.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	if reason := foreignOwner(li); reason != "" {
		return &UnsafeError{Path: p, File: file, Reason: "a symlink " + reason}
	}
	return nil
}

func kindOf(m fs.FileMode) string {
	switch k := KindOf(m); k {
	case "FIFO":
		return "a named pipe (FIFO)"
	case "special file":
		return "not a regular file (" + m.String() + ")"
	default:
		return "a " + k
	}
}

// Bytes writes n for a person: "512 bytes", "64 KiB", "1.5 MiB".
func Bytes(n int64) string {
	const k = 1024
	switch {
	case n < k:
		return fmt.Sprintf("%d bytes", n)
	case n < k*k:
		return trimZero(float64(n)/k) + " KiB"
	case n < k*k*k:
		return trimZero(float64(n)/(k*k)) + " MiB"
	}
	return trimZero(float64(n)/(k*k*k)) + " GiB"
}

func trimZero(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}
