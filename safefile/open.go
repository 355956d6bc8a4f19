package safefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// DefaultTimeout bounds a Stream whose context has no deadline of its own.
const DefaultTimeout = 30 * time.Second

// streamChunk is the most one read call of Stream asks for; a file that
// says it is smaller starts with a buffer of its size (but at least
// minStreamChunk), which doubles while reads keep filling it.
const (
	streamChunk    = 64 << 10
	minStreamChunk = 512
)

// firstChunk is the buffer Stream starts with for a file of the given
// size: one byte more than the file, so that a file that has not grown is
// read whole by the first read and the next one sees the end.
func firstChunk(size int64) int {
	if size < 0 || size >= streamChunk-1 {
		return streamChunk
	}
	return max(int(size)+1, minStreamChunk)
}

// KindOf names a file mode's type in a word or two: "FIFO",
// "character device", "directory".
func KindOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file"
}

// File is an open regular file, for readers that stream it (the read
// tools) or judge the descriptor itself (secrets.Guard).
type File struct {
	*os.File
	// Info is the opened descriptor's own stat.
	Info fs.FileInfo
}

// Open opens path for reading if it is a regular file; symlinks are
// followed. The type is checked twice: by stat before opening, so that a
// device whose open has side effects (a tape, a watchdog) is never
// opened, and by fstat on the descriptor, which is what is read, so that
// swapping the file in between gains nothing. The open does not block,
// so a FIFO put there in that window cannot hang it.
func Open(path string) (*File, error) {
	before, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	return OpenStated(path, before)
}

// OpenStated is Open for a caller that has just taken path's stat itself
// (before, following symlinks, as os.Stat does; the lstat of a path with
// no symlink in it will do): that stat is the check before opening, and
// the descriptor must be the same file.
func OpenStated(path string, before fs.FileInfo) (*File, error) {
	if !before.Mode().IsRegular() {
		return nil, &NotRegularError{What: "file", Path: path, Mode: before.Mode()}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{What: "file", Path: path, Mode: info.Mode()}
	}
	if !os.SameFile(before, info) {
		f.Close()
		return nil, fmt.Errorf("%s changed while it was being opened; try again", path)
	}
	return &File{File: f, Info: info}, nil
}

// ReadAll reads the whole file, failing with a TooLargeError past limit
// bytes, within ctx's deadline (DefaultTimeout when it has none).
func (f *File) ReadAll(ctx context.Context, limit int64) ([]byte, error) {
	var out []byte
	if n := f.Info.Size(); n > 0 && n <= limit {
		out = make([]byte, 0, n+1)
	}
	err := f.Stream(ctx, func(p []byte) error {
		if n := int64(len(out) + len(p)); n > limit {
			return &TooLargeError{What: "file", Path: f.Name(), Size: n, Limit: limit}
		}
		out = append(out, p...)
		return nil
	})
	return out, err
}

// Stream hands the file's bytes to fn in order, a chunk at a time, until
// the end, fn's first error, or ctx's deadline (DefaultTimeout when it has
// none), which comes back as a DeadlineError. A read that blocks (a hung
// network file system) is abandoned at the deadline: Stream returns and
// the read finishes on its own.
func (f *File) Stream(ctx context.Context, fn func([]byte) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	type result struct {
		n   int
		err error
	}
	// A fresh 64 KiB buffer for every small file was most of a read_file
	// call's allocation in a cold process (page faults, then GC).
	buf := make([]byte, firstChunk(f.Info.Size()))
	reads := make(chan result, 1)
	for {
		if err := ctx.Err(); err != nil {
			return &DeadlineError{What: "file", Path: f.Name(), Cause: err}
		}
		go func() {
			n, err := f.Read(buf)
			reads <- result{n, err}
		}()
		var r result
		select {
		case r = <-reads:
		case <-ctx.Done():
			return &DeadlineError{What: "file", Path: f.Name(), Cause: ctx.Err()}
		}
		if r.n > 0 {
			if err := fn(buf[:r.n]); err != nil {
				return err
			}
		}
		if r.err == nil && r.n < len(buf) && int64(r.n) == f.Info.Size() && r.n > 0 {
			// A read that asked for more than the file's size at open and got
			// exactly that size is the whole file as it was then: a regular
			// file's read comes up short only at its end. The read that would
			// confirm the end (and its goroutine) is not made; a file that
			// grew since is read as it was, as if read a moment earlier.
			return nil
		}
		if r.n == len(buf) && len(buf) < streamChunk {
			// The file is bigger than it said (it grew, or it is a procfs
			// file that reports 0): fewer, larger reads from here on.
			buf = make([]byte, min(2*len(buf), streamChunk))
		}
		if errors.Is(r.err, io.EOF) {
			return nil
		}
		if r.err != nil {
			return r.err
		}
	}
}
