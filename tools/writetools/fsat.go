//go:build unix

package writetools

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jazz-run/jazz/secrets"
)

// Every operation here is relative to a directory descriptor from locate
// and never follows a symbolic link: what was verified is what is acted on.

// chunk is how much is read or written between two looks at ctx.
const chunk = 1 << 20

// maxTreeDepth bounds how deep a tree is walked (one descriptor a level).
// No file tool makes an entry deeper than that below / (tooDeep), so
// whatever they make rm, mv and cp can work through again.
const maxTreeDepth = 512

// depthOf is how many directories below / the physical path p is.
func depthOf(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(filepath.Clean(p), "/")
}

// tooDeep refuses making p when it, or the deepest entry of a tree
// below it (below levels under p), would be more than maxTreeDepth
// directories below /; "" when it would not.
func tooDeep(p string, below int) string {
	d := depthOf(p) + below
	if d <= maxTreeDepth {
		return ""
	}
	return fmt.Sprintf("Cannot make %s: it would put an entry %d directories below /, more than the %d jazz's file tools work through (rm, mv and cp refuse deeper trees); nothing was changed.", disp(p), d, maxTreeDepth)
}

// newFileMode is the mode of a created file. os.WriteFile would apply the
// umask to 0666; reading the umask is not possible without changing it, so
// created files get the common result, 0644.
const newFileMode = 0o644

func pathErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

func lstatAt(dirfd int, name string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	return &st, nil
}

// renameChecked is renameNoReplace where the kernel offers no atomic form.
func renameChecked(olddir int, old string, newdir int, new string) error {
	if _, err := lstatAt(newdir, new); err == nil {
		return unix.EEXIST
	} else if !errors.Is(err, unix.ENOENT) {
		return err
	}
	return unix.Renameat(olddir, old, newdir, new)
}

// openRegularAt opens name under dirfd for reading: never through a link,
// never blocking on a FIFO, and only the regular file want describes.
func openRegularAt(dirfd int, name, path string, want *unix.Stat_t) (*os.File, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, pathErr("open", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, pathErr("stat", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || (want != nil && !sameFile(&st, want)) {
		unix.Close(fd)
		return nil, fmt.Errorf("%s was replaced while it was being read", path)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// readRegularAt reads a regular file whole, at most limit bytes.
func readRegularAt(ctx context.Context, g secrets.Guard, dirfd int, name, path string, want *unix.Stat_t, limit int64) ([]byte, error) {
	if want.Size > limit {
		return nil, fmt.Errorf("%s is %s, more than the %s a file tool reads", path, formatSize(want.Size), formatSize(limit))
	}
	f, err := openRegularAt(dirfd, name, path, want)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := judgeOpened(g, f, path); err != nil {
		return nil, err
	}
	var out []byte
	buf := make([]byte, min(chunk, int(want.Size)+512))
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := f.Read(buf)
		out = append(out, buf[:n]...)
		if int64(len(out)) > limit {
			return nil, fmt.Errorf("%s grew past the %s a file tool reads", path, formatSize(limit))
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// tempName is a fresh hidden name beside base for a file being built.
func tempName(base string) string {
	if len(base) > 200 {
		base = base[:200] // NAME_MAX is 255
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "." + base + ".jazz-" + hex.EncodeToString(b[:])
}

// writeTempAt writes data to a new temporary file in dirfd, with perm and,
// when owner is set, owner's user and group, synced, and returns its
// name. Nothing is left behind on failure or when ctx ends first.
func writeTempAt(ctx context.Context, dirfd int, dirPath, base string, data []byte, perm uint32, owner *unix.Stat_t) (string, error) {
	var fd int
	var name string
	var err error
	for range 100 {
		name = tempName(base)
		fd, err = unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if !errors.Is(err, unix.EEXIST) {
			break
		}
	}
	if err != nil {
		return "", pathErr("create", filepath.Join(dirPath, name), err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dirPath, name))
	if err := fillTemp(ctx, f, data, perm, owner); err != nil {
		f.Close()
		unix.Unlinkat(dirfd, name, 0)
		return "", err
	}
	return name, nil
}

// fillTemp writes, chowns (to owner's user and group, when set), chmods,
// syncs and closes a temporary file, looking at ctx between chunks. The
// file replaces owner's by a rename, so without the chown a file of the
// user's written by root became root's. The chown comes before the chmod,
// which it may otherwise undo; a chown this process may not make fails
// the write rather than leave the file with another owner.
func fillTemp(ctx context.Context, f *os.File, data []byte, perm uint32, owner *unix.Stat_t) error {
	for off := 0; off < len(data); off += chunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := f.Write(data[off:min(off+chunk, len(data))]); err != nil {
			return err
		}
	}
	if owner != nil {
		if err := f.Chown(int(owner.Uid), int(owner.Gid)); err != nil {
			return fmt.Errorf("cannot keep the file's owner and group (%d:%d) on its new content, so nothing was changed: %w", owner.Uid, owner.Gid, err)
		}
	}
	if err := f.Chmod(fs.FileMode(perm)); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return ctx.Err()
}

// syncDirAt makes a rename in dirfd durable; failure only weakens
// durability, so it is ignored (some filesystems refuse to sync a
// directory, and an O_PATH descriptor cannot be synced itself).
func syncDirAt(dirfd int) {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Fsync(fd)
		unix.Close(fd)
	}
}

// treeInfo is what a directory holds, counted and fingerprinted.
type treeInfo struct {
	files, dirs, links, others int
	bytes                      int64
	digest                     string
	// escalates is the first entry (relative path) whose name makes
	// moving or copying the tree a change only a person approves.
	escalates string
	// depth is how many levels below the top its deepest entry is.
	depth int
	// protected is the first file or directory (relative path) the
	// user made read-only (writeProtected): removing or replacing the
	// tree destroys it, which only a person approves.
	protected string
}

// entryLine describes one entry for a digest: name, type, identity, mode,
// size, modification time, a link's target, and with ctime its change
// time, which no one can set back. The top of a tree is compared without
// it once moved aside: that rename changes the top's change time (and
// only the top's).
func entryLine(rel string, st *unix.Stat_t, link string, ctime bool) string {
	s := fmt.Sprintf("%s %s %s %o %d %d.%d", strconv.Quote(rel), kindOf(st), identity(st),
		uint32(st.Mode)&0o7777, st.Size, st.Mtim.Sec, st.Mtim.Nsec)
	if ctime {
		s += fmt.Sprintf(" c%d.%d", st.Ctim.Sec, st.Ctim.Nsec)
	}
	if link != "" {
		s += " -> " + strconv.Quote(link)
	}
	return s
}

// inspectTreeAt counts and fingerprints the directory name under dirfd
// (which st describes), links not followed.
func inspectTreeAt(ctx context.Context, g secrets.Guard, dirfd int, name, path string, st *unix.Stat_t) (treeInfo, error) {
	h := sha256.New()
	var info treeInfo
	var walk func(dirfd int, name, rel, path string, st *unix.Stat_t, depth int) error
	walk = func(dirfd int, name, rel, path string, st *unix.Stat_t, depth int) error {
		if depth > maxTreeDepth {
			return fmt.Errorf("%s: more than %d directories deep", path, maxTreeDepth)
		}
		fd, names, err := listDirAt(dirfd, name, path, st)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		for _, n := range names {
			if err := ctx.Err(); err != nil {
				return err
			}
			cst, err := lstatAt(fd, n)
			if err != nil {
				return pathErr("lstat", filepath.Join(path, n), err)
			}
			crel, cpath := filepath.Join(rel, n), filepath.Join(path, n)
			info.depth = max(info.depth, depth+1)
			if g.Excluded(cpath) {
				// A tree holding JAZZ_HOME or a secret file is not
				// removed, moved or copied (its copy could be read).
				return refusal(cpath, ownFile(cpath))
			}
			if info.escalates == "" && escalatingName(n) != "" {
				info.escalates = crel
			}
			if k := cst.Mode & unix.S_IFMT; info.protected == "" && (k == unix.S_IFREG || k == unix.S_IFDIR) && writeProtected(cst) {
				info.protected = crel
			}
			link := ""
			switch cst.Mode & unix.S_IFMT {
			case unix.S_IFREG:
				info.files++
				info.bytes += cst.Size
			case unix.S_IFDIR:
				info.dirs++
			case unix.S_IFLNK:
				info.links++
				if link, err = readlinkAt(fd, n); err != nil {
					return pathErr("readlink", cpath, err)
				}
			default:
				info.others++
			}
			fmt.Fprintln(h, entryLine(crel, cst, link, true))
			if cst.Mode&unix.S_IFMT == unix.S_IFDIR {
				if err := walk(fd, n, crel, cpath, cst, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(dirfd, name, ".", path, st, 0); err != nil {
		return treeInfo{}, err
	}
	info.digest = hex.EncodeToString(h.Sum(nil))
	return info, nil
}

// listDirAt opens the directory name under dirfd (the one st describes)
// and lists it, sorted. The caller closes the descriptor.
func listDirAt(dirfd int, name, path string, st *unix.Stat_t) (int, []string, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, nil, pathErr("open", path, err)
	}
	var got unix.Stat_t
	if err := unix.Fstat(fd, &got); err != nil || (st != nil && !sameFile(&got, st)) {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("%s was replaced while it was being read", path)
	}
	// Read through a duplicate: os.File owns and closes what it wraps.
	dup, err := unix.Dup(fd)
	if err != nil {
		unix.Close(fd)
		return -1, nil, pathErr("dup", path, err)
	}
	f := os.NewFile(uintptr(dup), path)
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	slices.Sort(names)
	return fd, names, nil
}

// removeAt removes name under dirfd, a directory depth first, looking at
// ctx between entries. It returns how many entries it removed, so a
// caller stopped half-way can say so.
func removeAt(ctx context.Context, dirfd int, name, path string) (removed int, err error) {
	var rm func(dirfd int, name, path string, depth int) error
	rm = func(dirfd int, name, path string, depth int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		st, err := lstatAt(dirfd, name)
		if err != nil {
			return pathErr("lstat", path, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			if depth > maxTreeDepth {
				return fmt.Errorf("%s: more than %d directories deep", path, maxTreeDepth)
			}
			fd, names, err := listDirAt(dirfd, name, path, st)
			if err != nil {
				return err
			}
			for _, n := range names {
				if err := rm(fd, n, filepath.Join(path, n), depth+1); err != nil {
					unix.Close(fd)
					return err
				}
			}
			unix.Close(fd)
			if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil {
				return pathErr("remove", path, err)
			}
		} else if err := unix.Unlinkat(dirfd, name, 0); err != nil {
			return pathErr("remove", path, err)
		}
		removed++
		return nil
	}
	err = rm(dirfd, name, path, 0)
	return removed, err
}

// copyAt copies sname under sdir (which sst describes) to the new name
// dname under ddir: a file with its mode, a directory recursively, links
// inside as links; other kinds are refused. ctx is looked at between
// files and chunks. A directory of the copy met again inside the source
// (the source reaches its own copy) is refused instead of copied forever.
func copyAt(ctx context.Context, g secrets.Guard, sdir int, sname, spath string, sst *unix.Stat_t, ddir int, dname, dpath string) error {
	made := map[string]bool{} // identities of directories the copy created
	var cp func(sdir int, sname, spath string, sst *unix.Stat_t, ddir int, dname, dpath string, depth int) error
	cp = func(sdir int, sname, spath string, sst *unix.Stat_t, ddir int, dname, dpath string, depth int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		perm := uint32(sst.Mode) & 0o777
		switch sst.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			return copyFileAt(ctx, g, sdir, sname, spath, sst, ddir, dname, dpath, perm)
		case unix.S_IFLNK:
			t, err := readlinkAt(sdir, sname)
			if err != nil {
				return pathErr("readlink", spath, err)
			}
			return pathErr("symlink", dpath, unix.Symlinkat(t, ddir, dname))
		case unix.S_IFDIR:
			if made[identity(sst)] {
				return fmt.Errorf("%s holds the copy being made (through a symbolic link or a move); refusing to copy it into itself", spath)
			}
			if depth > maxTreeDepth {
				return fmt.Errorf("%s: more than %d directories deep", spath, maxTreeDepth)
			}
			if err := unix.Mkdirat(ddir, dname, 0o700); err != nil {
				return pathErr("mkdir", dpath, err)
			}
			nd, dst, err := openDirAt(ddir, dname)
			if err != nil {
				return pathErr("open", dpath, err)
			}
			defer unix.Close(nd)
			made[identity(dst)] = true
			sfd, names, err := listDirAt(sdir, sname, spath, sst)
			if err != nil {
				return err
			}
			defer unix.Close(sfd)
			for _, n := range names {
				cst, err := lstatAt(sfd, n)
				if err != nil {
					return pathErr("lstat", filepath.Join(spath, n), err)
				}
				if err := cp(sfd, n, filepath.Join(spath, n), cst, nd, n, filepath.Join(dpath, n), depth+1); err != nil {
					return err
				}
			}
			return pathErr("chmod", dpath, unix.Fchmodat(ddir, dname, perm, 0))
		}
		return fmt.Errorf("cannot copy %s: it is a %s, not a regular file, directory or link", spath, kindName(sst))
	}
	return cp(sdir, sname, spath, sst, ddir, dname, dpath, 0)
}

func copyFileAt(ctx context.Context, g secrets.Guard, sdir int, sname, spath string, sst *unix.Stat_t, ddir int, dname, dpath string, perm uint32) error {
	in, err := openRegularAt(sdir, sname, spath, sst)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := judgeOpened(g, in, spath); err != nil {
		return err
	}
	fd, err := unix.Openat(ddir, dname, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return pathErr("create", dpath, err)
	}
	out := os.NewFile(uintptr(fd), dpath)
	defer out.Close()
	buf := make([]byte, min(chunk, int(sst.Size)+512))
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, rerr := in.Read(buf)
		if _, err := out.Write(buf[:n]); err != nil {
			return err
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	if err := out.Chmod(fs.FileMode(perm)); err != nil {
		return err
	}
	return out.Sync()
}

// formatSize writes a byte count for a person: 512 bytes, 48 KB, 1.5 MB.
func formatSize(n int64) string {
	if n < 1024 {
		if n == 1 {
			return "1 byte"
		}
		return fmt.Sprintf("%d bytes", n)
	}
	v, units := float64(n), []string{"KB", "MB", "GB", "TB", "PB", "EB"}
	u := -1
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s + " " + units[u]
}
