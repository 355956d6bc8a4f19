//go:build unix

package writetools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxLinkHops bounds symlink expansions in one resolution, as the kernel
// does (ELOOP after 40).
const maxLinkHops = 40

// located is a path resolved the way the kernel would, one component at a
// time from "/", with every component it went through recorded.
//
// The walk opens each directory with O_NOFOLLOW relative to the one
// before, so parent is a descriptor of exactly the directory whose chain
// the steps describe: whatever happens to the names afterwards, an
// operation relative to parent lands in that directory.
type located struct {
	lexical string // the absolute path as resolved lexically (pathres)
	// real is the physical path the operation acts on: every symbolic
	// link on the way followed (the leaf too, if asked), missing
	// components kept as named.
	real string
	// steps fingerprint every component walked: its physical path, type
	// and identity (device and inode), and for a link the target text.
	// Paths are quoted, so no name can forge a line.
	steps []string
	// parent is an O_PATH descriptor of the deepest existing directory
	// on the way to the leaf; parentPath is its physical path.
	parent     int
	parentPath string
	// missing are the directories under parent that do not exist yet,
	// in order, before the leaf (write_file with createDirs).
	missing []string
	leaf    string
	// st is the leaf's lstat; nil when the leaf (or its parent) is missing.
	st *unix.Stat_t
}

// close releases the parent descriptor.
func (l *located) close() {
	if l != nil && l.parent >= 0 {
		unix.Close(l.parent)
		l.parent = -1
	}
}

// notDirError is a component used as a directory that is not one.
type notDirError struct{ path string }

func (e *notDirError) Error() string { return e.path + ": not a directory" }

// rootError is a path that resolves to / itself, which names no entry of
// a directory: no file tool writes, removes or replaces it.
type rootError struct{ path string }

func (e *rootError) Error() string {
	if e.path == "/" {
		return "/ is the root directory, which no file tool acts on"
	}
	return e.path + " resolves to /, the root directory, which no file tool acts on"
}

// locate resolves abs (absolute and lexically clean). followLeaf says
// whether a symbolic link in the last place is followed (write_file and
// edit_file write through it; rm, mv and cp's destination act on the
// name itself).
func locate(ctx context.Context, abs string, followLeaf bool) (*located, error) {
	l := &located{lexical: abs, parent: -1}
	fd, err := openRootDir()
	if err != nil {
		return nil, err
	}
	cur := "/"
	step := func(p, kind string, st *unix.Stat_t, extra string) {
		s := strconv.Quote(p) + " " + kind + " " + identity(st)
		if extra != "" {
			s += " -> " + strconv.Quote(extra)
		}
		l.steps = append(l.steps, s)
	}
	var rootSt unix.Stat_t
	if err := unix.Fstat(fd, &rootSt); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: "/", Err: err}
	}
	step("/", "dir", &rootSt, "")
	fail := func(err error) (*located, error) {
		unix.Close(fd)
		return nil, err
	}
	comps := splitPath(abs)
	hops := 0
	for len(comps) > 0 {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		c := comps[0]
		comps = comps[1:]
		last := len(comps) == 0
		switch c {
		case ".":
			continue
		case "..":
			nfd, st, err := openDirAt(fd, "..")
			if err != nil {
				return fail(&fs.PathError{Op: "open", Path: filepath.Dir(cur), Err: err})
			}
			unix.Close(fd)
			fd, cur = nfd, filepath.Dir(cur)
			step(cur, "dir", st, "")
			continue
		}
		p := filepath.Join(cur, c)
		var st unix.Stat_t
		err := unix.Fstatat(fd, c, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			l.steps = append(l.steps, strconv.Quote(p)+" missing")
			var rest []string
			for _, r := range comps {
				switch r {
				case ".":
				case "..":
					// The kernel cannot go up out of a directory that
					// does not exist; neither does this walk.
					return fail(&fs.PathError{Op: "resolve", Path: p, Err: fs.ErrNotExist})
				default:
					rest = append(rest, r)
				}
			}
			all := append([]string{c}, rest...)
			l.missing, l.leaf = all[:len(all)-1], all[len(all)-1]
			l.parent, l.parentPath = fd, cur
			l.real = filepath.Join(append([]string{cur}, all...)...)
			return l, nil
		}
		if err != nil {
			return fail(&fs.PathError{Op: "lstat", Path: p, Err: err})
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			target, err := readlinkAt(fd, c)
			if err != nil {
				return fail(&fs.PathError{Op: "readlink", Path: p, Err: err})
			}
			step(p, "link", &st, target)
			if last && !followLeaf {
				return l.leafAt(fd, cur, c, &st), nil
			}
			if hops++; hops > maxLinkHops {
				return fail(&fs.PathError{Op: "resolve", Path: abs, Err: unix.ELOOP})
			}
			if filepath.IsAbs(target) {
				unix.Close(fd)
				if fd, err = openRootDir(); err != nil {
					return nil, err
				}
				cur = "/"
				step("/", "dir", &rootSt, "")
			}
			comps = append(splitPath(target), comps...)
		case unix.S_IFDIR:
			if last {
				step(p, "dir", &st, "")
				return l.leafAt(fd, cur, c, &st), nil
			}
			nfd, dst, err := openDirAt(fd, c)
			if err != nil {
				return fail(&fs.PathError{Op: "open", Path: p, Err: err})
			}
			if !sameFile(dst, &st) {
				unix.Close(nfd)
				return fail(fmt.Errorf("%s was replaced while it was being resolved", p))
			}
			step(p, "dir", dst, "")
			unix.Close(fd)
			fd, cur = nfd, p
		default:
			if last {
				step(p, kindOf(&st), &st, "")
				return l.leafAt(fd, cur, c, &st), nil
			}
			return fail(&notDirError{path: p})
		}
	}
	// The path ended on a directory reached through "..", "." or a link
	// (`up -> ..`): name that directory from its own parent instead.
	unix.Close(fd)
	if cur == "/" {
		return nil, &rootError{path: abs}
	}
	sub, err := locate(ctx, cur, false)
	if err != nil {
		return nil, err
	}
	sub.lexical = abs
	sub.steps = append(l.steps, sub.steps...)
	return sub, nil
}

// leafAt finishes a walk at an existing leaf c in directory fd.
func (l *located) leafAt(fd int, dir, c string, st *unix.Stat_t) *located {
	l.parent, l.parentPath, l.leaf, l.st = fd, dir, c, st
	l.real = filepath.Join(dir, c)
	return l
}

// splitPath cuts a path into its names; an absolute path's leading "/"
// is dropped (the caller starts from the root).
func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

func openRootDir() (int, error) {
	fd, err := unix.Open("/", oPathDir|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: "/", Err: err}
	}
	return fd, nil
}

// openDirAt opens the directory name under dirfd without following a
// link there, and stats what it opened.
func openDirAt(dirfd int, name string) (int, *unix.Stat_t, error) {
	fd, err := unix.Openat(dirfd, name, oPathDir|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	return fd, &st, nil
}

func readlinkAt(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
		if size > 1<<16 {
			return "", unix.ENAMETOOLONG
		}
	}
}

// identity is what makes a directory entry the same object: device and
// inode. Renames keep it; replacing the entry changes it.
func identity(st *unix.Stat_t) string {
	return fmt.Sprintf("%d:%d", uint64(st.Dev), uint64(st.Ino))
}

func sameFile(a, b *unix.Stat_t) bool {
	return uint64(a.Dev) == uint64(b.Dev) && uint64(a.Ino) == uint64(b.Ino)
}

// kindOf names a file type the way messages do.
func kindOf(st *unix.Stat_t) string {
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "dir"
	case unix.S_IFLNK:
		return "link"
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "chardev"
	case unix.S_IFBLK:
		return "blockdev"
	}
	return "unknown"
}
