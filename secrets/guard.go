package secrets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/jazz-run/jazz/safefile"
)

// maxLinks bounds a symlink chain, as the kernel does.
const maxLinks = 40

// homeScanMax bounds the JAZZ_HOME walk that looks for a hard link of an
// opened file.
const homeScanMax = 10000

// ErrRefused is wrapped by every RefusedError.
var ErrRefused = errors.New("refused: jazz's own secrets")

// RefusedError is a path the Guard will not let a tool read.
type RefusedError struct {
	// Path is the path as the tool resolved it.
	Path   string
	Reason string
}

func (e *RefusedError) Error() string { return "Refused: " + e.Path + " " + e.Reason }

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Unwrap() error { return ErrRefused }

const (
	reasonProc = "is process information under /proc (environments, memory, command lines, open files " +
		"of jazz and every other process); jazz's tools do not read it, since it holds jazz's own secrets."
	reasonFile = "holds jazz's own configuration and credentials; jazz's tools do not read it."
)

func reasonHome(home string) string {
	return "is inside JAZZ_HOME (" + home + "), which holds jazz's own configuration and credentials; jazz's tools do not read it."
}

// procAllowed are the entries directly under /proc that describe the
// machine, not a process: everything else there is refused (fail closed:
// process directories, self and thread-self, kcore, kmsg, whatever a
// kernel adds).
var procAllowed = []string{
	"buddyinfo", "cmdline", "cpuinfo", "crypto", "devices", "diskstats", "filesystems",
	"interrupts", "loadavg", "meminfo", "partitions", "pressure", "softirqs", "stat",
	"swaps", "sys", "uptime", "version", "vmstat", "zoneinfo",
}

// procRefused says whether a canonical path is under /proc and not one
// of the machine-wide entries; /proc itself may be listed.
func procRefused(p string) bool {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return false
	}
	first, _, _ := strings.Cut(rest, "/")
	return !slices.Contains(procAllowed, first)
}

// Guard decides which paths jazz's tools refuse: process information
// under /proc (jazz's and every other process's), everything inside
// JAZZ_HOME (a rule over the directory, so files added later are covered
// too), and any other file the run knows holds its secrets (a --config
// file elsewhere). Paths are judged after every symlink is resolved, and
// an opened file by what it is (the kernel's name for the descriptor, its
// file system, its inode), so no spelling of a path reaches them.
type Guard struct {
	home string
	// dirs is JAZZ_HOME as configured and as resolved; files the extra
	// files likewise. Both are fixed when the Guard is made.
	dirs, files []string
	// homeInfo and rootInfo are the stats of JAZZ_HOME and of "/" when
	// the Guard was made, for the identity rule (inHomeByIdentity); nil
	// when the stat failed (JAZZ_HOME not created yet), and then each
	// judgement stats it afresh. The directory JAZZ_HOME was keeps its
	// identity wherever it is moved, and the name is a rule of its own.
	homeInfo, rootInfo fs.FileInfo
	// beforeOpen, when set, runs in Open between the judgement of the
	// path and the open (tests swap the file there).
	beforeOpen func()
}

// NewGuard protects home (JAZZ_HOME; "" protects no directory) and files.
func NewGuard(home string, files ...string) Guard {
	g := Guard{}
	if home != "" {
		g.home = filepath.Clean(home)
		g.dirs = withResolved(g.dirs, g.home)
		if hi, err := os.Stat(g.home); err == nil && hi.IsDir() {
			g.homeInfo = hi
			g.rootInfo, _ = os.Stat("/")
		}
	}
	for _, f := range files {
		if f != "" {
			g.files = withResolved(g.files, filepath.Clean(f))
		}
	}
	return g
}

// withResolved appends p and, when it differs, p with symlinks resolved.
func withResolved(list []string, p string) []string {
	list = append(list, p)
	if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
		list = append(list, real)
	}
	return list
}

// Zones are the canonical roots a recursive search must not enter: /proc,
// JAZZ_HOME and the extra files.
func (g Guard) Zones() []string {
	return append(append([]string{"/proc"}, g.dirs...), g.files...)
}

// CheckSearch refuses a recursive search rooted at abs when the root is,
// or lies inside, one of the Zones: unlike a listing, a search reads
// every file, so not even /proc itself may be its root.
func (g Guard) CheckSearch(abs string) error {
	canon, err := g.Resolve(abs)
	if err != nil {
		return err
	}
	switch {
	case Within(canon, "/proc") && (procRefused(canon) || !isRegular(canon)):
		// A machine-wide file such as /proc/cpuinfo may be searched; a
		// tree under /proc may not.
		return &RefusedError{Path: abs, Reason: reasonProc}
	case slices.ContainsFunc(g.dirs, func(d string) bool { return Within(canon, d) }):
		return &RefusedError{Path: abs, Reason: reasonHome(g.home)}
	case slices.Contains(g.files, canon):
		return &RefusedError{Path: abs, Reason: reasonFile}
	}
	return g.Check(abs)
}

// Excluded is the cheap test for an entry met while walking a tree whose
// root was already resolved (walks do not follow symlinks, so the entry's
// path is canonical): under /proc's refused part, JAZZ_HOME, or an extra
// file.
func (g Guard) Excluded(canon string) bool {
	if procRefused(canon) {
		return true
	}
	for _, d := range g.dirs {
		if Within(canon, d) {
			return true
		}
	}
	return slices.Contains(g.files, canon)
}

// Within says whether p is dir or below it (both clean and absolute).
func Within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// Resolve follows every symlink in abs (an absolute path) and returns the
// canonical path; a missing part and what follows it are kept as written.
// It stops with a RefusedError as soon as the path enters /proc's refused
// part, before reading a link there (/proc/self/fd/N names whatever jazz
// has open, not a path).
func (g Guard) Resolve(abs string) (string, error) {
	w, err := g.walk(abs)
	return w.canon, err
}

// walked is what resolving a path saw: the canonical path and, when all of
// it exists, the lstat of each of its parts below "/", outermost first.
// None of those parts is a symlink, so each lstat is also its stat.
type walked struct {
	canon string
	whole bool
	parts []fs.FileInfo
}

// walk is Resolve, keeping the lstats it made so that Check need not stat
// the same directories again.
func (g Guard) walk(abs string) (walked, error) {
	if !filepath.IsAbs(abs) {
		return walked{}, fmt.Errorf("resolve %q: not an absolute path", abs)
	}
	todo := strings.Split(filepath.Clean(abs), "/")
	cur := "/"
	// parts holds one lstat per part of cur.
	var parts []fs.FileInfo
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			if len(parts) > 0 {
				parts = parts[:len(parts)-1]
			}
			continue
		}
		next := filepath.Join(cur, c)
		if procRefused(next) {
			return walked{canon: next}, &RefusedError{Path: abs, Reason: reasonProc}
		}
		fi, err := os.Lstat(next)
		if err != nil {
			return walked{canon: filepath.Join(append([]string{next}, todo...)...)}, nil
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			parts = append(parts, fi)
			continue
		}
		if links++; links > maxLinks {
			return walked{}, &fs.PathError{Op: "resolve", Path: abs, Err: syscall.ELOOP}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return walked{}, err
		}
		if filepath.IsAbs(target) {
			cur = "/"
			parts = parts[:0]
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return walked{canon: cur, whole: true, parts: parts}, nil
}

// Check refuses abs (as a tool resolved it) when it leads, through any
// symlinks, into a protected place. Other errors (a loop) are returned as
// they are; a missing path passes, since there is nothing to read.
func (g Guard) Check(abs string) error {
	_, err := g.check(abs)
	return err
}

// check is Check, returning also the stat of the file abs names when all
// of the path exists (nil otherwise).
func (g Guard) check(abs string) (fs.FileInfo, error) {
	w, err := g.walk(abs)
	if err != nil {
		return nil, err
	}
	if !w.whole {
		// Past a missing part the path is as written: stat it as it is.
		info, _ := os.Stat(w.canon)
		return nil, g.judge(abs, w.canon, info, onProcFS(deepestExisting(w.canon)), nil)
	}
	var info fs.FileInfo
	if n := len(w.parts); n > 0 {
		info = w.parts[n-1]
	} else {
		info, _ = os.Stat("/")
	}
	return info, g.judge(abs, w.canon, info, onProcFS(w.canon), w.parts)
}

// CheckOpened refuses an opened file by what it is rather than how it was
// named: the kernel's own path for the descriptor, its file system (any
// procfs, wherever mounted), and its identity (a hard link of a protected
// file, a bind mount of JAZZ_HOME).
func (g Guard) CheckOpened(f *safefile.File, display string) error {
	canon := openedPath(f)
	return g.judge(display, canon, f.Info, fdOnProcFS(f), nil)
}

// Open opens abs for reading with safefile.Open, refusing protected
// places before the open and again on the opened descriptor.
//
// The judgement of the path stats the file it names; when the descriptor
// is that same file (device and inode) and the file has no other name,
// the descriptor is what was judged: the same file system (so no procfs
// the path check did not see), the same single name, the same place
// among its ancestors. Only then is the second judgement skipped; a file
// swapped in between, or a hard-linked one, is judged again by what it is.
func (g Guard) Open(abs string) (*safefile.File, error) {
	judged, err := g.check(abs)
	if err != nil {
		return nil, err
	}
	if g.beforeOpen != nil {
		g.beforeOpen()
	}
	var f *safefile.File
	if judged != nil {
		f, err = safefile.OpenStated(abs, judged)
	} else {
		f, err = safefile.Open(abs)
	}
	if err != nil {
		return nil, err
	}
	if judged != nil && os.SameFile(judged, f.Info) && !hardLinked(f.Info) {
		return f, nil
	}
	if err := g.CheckOpened(f, abs); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// judge applies every rule to a canonical path and, when it exists, its
// stat; parts, when not nil, are the stats of canon's parts below "/"
// (see walked), which the identity rule then need not take again.
func (g Guard) judge(display, canon string, info fs.FileInfo, procFS bool, parts []fs.FileInfo) error {
	if procRefused(canon) || (procFS && !strings.HasPrefix(canon, "/proc/") && canon != "/proc") {
		// A procfs mounted anywhere but /proc is refused whole.
		return &RefusedError{Path: display, Reason: reasonProc}
	}
	for _, d := range g.dirs {
		if Within(canon, d) {
			return &RefusedError{Path: display, Reason: reasonHome(g.home)}
		}
	}
	if g.home != "" && g.inHomeByIdentity(canon, parts) {
		return &RefusedError{Path: display, Reason: reasonHome(g.home)}
	}
	for _, f := range g.files {
		if canon == f {
			return &RefusedError{Path: display, Reason: reasonFile}
		}
		if info != nil {
			if fi, err := os.Stat(f); err == nil && os.SameFile(fi, info) {
				return &RefusedError{Path: display, Reason: reasonFile}
			}
		}
	}
	if info != nil && info.Mode().IsRegular() && hardLinked(info) && g.home != "" && linkedFromHome(g.home, info) {
		return &RefusedError{Path: display, Reason: reasonHome(g.home)}
	}
	return nil
}

// inHomeByIdentity says whether some existing ancestor of canon is the
// JAZZ_HOME directory itself (same device and inode): a bind mount of it,
// or a spelling a case-insensitive file system accepts. parts, when not
// nil, are the stats of canon's parts below "/" (taken just before, while
// resolving it); otherwise each ancestor is stat'ed here.
func (g Guard) inHomeByIdentity(canon string, parts []fs.FileInfo) bool {
	hi, root := g.homeInfo, g.rootInfo
	if hi == nil {
		var err error
		if hi, err = os.Stat(g.home); err != nil {
			return false
		}
		root = nil
	}
	isHome := func(fi fs.FileInfo) bool { return fi.IsDir() && os.SameFile(fi, hi) }
	if parts != nil {
		if slices.ContainsFunc(parts, isHome) {
			return true
		}
		if root == nil {
			var err error
			if root, err = os.Stat("/"); err != nil {
				return false
			}
		}
		return isHome(root)
	}
	for p := canon; ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && isHome(fi) {
			return true
		}
		if p == "/" || p == "." {
			return false
		}
	}
}

// linkedFromHome looks for another name of info inside home.
func linkedFromHome(home string, info fs.FileInfo) bool {
	if real, err := filepath.EvalSymlinks(home); err == nil {
		home = real // WalkDir does not follow a symlinked root
	}
	seen, found := 0, false
	_ = filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if seen++; seen > homeScanMax {
			// Too big to scan: fail closed.
			found = true
			return filepath.SkipAll
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil && os.SameFile(fi, info) {
				found = true
				return filepath.SkipAll
			}
		}
		return nil
	})
	return found
}

func isRegular(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// deepestExisting is p or its nearest ancestor that exists.
func deepestExisting(p string) string {
	for {
		if _, err := os.Lstat(p); err == nil || p == "/" || p == "." {
			return p
		}
		p = filepath.Dir(p)
	}
}
