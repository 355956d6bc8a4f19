package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/jazz-run/jazz/safefile"
)

// Home resolves JAZZ_HOME (config.md §1): the JAZZ_HOME variable, trimmed,
// with a leading ~ expanded and made absolute against cwd; else ~/.jazz.
// With no OS home it is an error: the old fallback, <cwd>/.jazz, is the
// directory a cloned repository ships its project config in, so the
// repository's config.json loaded as the user's own global file, in full,
// and its agents, personas and trust records were the user's. getenv is
// usually os.Getenv; cwd "" means the process's working directory. Home
// only computes the path: it creates nothing (see CheckWritable).
func Home(getenv func(string) string, cwd string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("resolve JAZZ_HOME: working directory: %w", err)
		}
		cwd = wd
	}
	userHome := osHome(getenv)
	if v := strings.TrimSpace(getenv("JAZZ_HOME")); v != "" {
		p, err := expandPath(v, userHome, cwd)
		if err != nil {
			return "", fmt.Errorf("resolve JAZZ_HOME %q: %w", v, err)
		}
		return p, nil
	}
	if userHome == "" {
		return "", errors.New("resolve JAZZ_HOME: HOME is unset (or not an absolute path), so there is no ~/.jazz; set JAZZ_HOME to a directory of your own " +
			"(jazz no longer uses ./.jazz of the working directory: that one is the project's, whose files come with the repository)")
	}
	return filepath.Join(userHome, ".jazz"), nil
}

// osHome is the user's home directory as the environment states it. A
// relative one counts as none: it would mean a directory under wherever
// jazz runs, which is the project's (HOME=. made ./.jazz the home, and
// ~/x a file of the repository).
func osHome(getenv func(string) string) string {
	h := strings.TrimSpace(getenv("HOME"))
	if h == "" && runtime.GOOS == "windows" {
		h = strings.TrimSpace(getenv("USERPROFILE"))
	}
	if !filepath.IsAbs(h) {
		return ""
	}
	return h
}

// expandPath expands a leading ~ (alone or followed by a separator) and makes
// p absolute against cwd.
func expandPath(p, userHome, cwd string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, `~`+string(filepath.Separator)) {
		if userHome == "" {
			return "", errors.New("cannot expand ~: no home directory (HOME is unset or not an absolute path)")
		}
		p = filepath.Join(userHome, p[1:])
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(absDir(cwd), p)
	}
	return filepath.Clean(p), nil
}

func absDir(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}

// CheckHome makes sure home exists, that only the user (or root) can
// change it or any directory above it (safefile.CheckPrivate: agents,
// personas, history, trust records and the config live there), and that
// it accepts writes (CheckWritable).
func CheckHome(home string) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return notWritable(home, err)
	}
	if err := safefile.CheckPrivate(home); err != nil {
		return fmt.Errorf("JAZZ_HOME: %w", err)
	}
	return CheckWritable(home)
}

// CheckHomeAccess is CheckHome for a run that names no conversation: it
// writes nothing to home before it ends (a tool's write fails as that
// call's result, naming the path), so instead of a probe file it asks the
// system whether home accepts writes: a read-only mount or a directory
// the user may not write still fails here, with CheckHome's message. The
// probe (create, write, close, remove) cost a run ~80 µs of file system
// work on every start.
func CheckHomeAccess(home string) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return notWritable(home, err)
	}
	if err := safefile.CheckPrivate(home); err != nil {
		return fmt.Errorf("JAZZ_HOME: %w", err)
	}
	if err := writeAccess(home); err != nil {
		return notWritable(home, err)
	}
	return nil
}

// CheckWritable makes sure home exists and really accepts writes, by
// creating and removing a probe file: a read-only mount shows up here, once,
// with a message naming the path, rather than as a crash or a silently
// dropped write later (seed 002, config.md §1).
func CheckWritable(home string) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return notWritable(home, err)
	}
	if err := probe(home); err != nil {
		return notWritable(home, err)
	}
	return nil
}

// probe creates, writes, closes and removes a file in dir.
func probe(dir string) error {
	f, err := os.CreateTemp(dir, ".write-probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_, werr := f.Write([]byte("ok"))
	cerr := f.Close()
	rerr := os.Remove(name)
	return errors.Join(werr, cerr, rerr)
}

// ErrNotWritable marks a JAZZ_HOME that refuses writes.
var ErrNotWritable = errors.New("JAZZ_HOME is not writable")

type notWritableError struct {
	path  string
	cause error
}

func (e *notWritableError) Error() string {
	return fmt.Sprintf("JAZZ_HOME %s is not writable: %s. jazz writes agents, history and work state there; "+
		"copy seed config into a writable directory (for example a tmpfs) and point JAZZ_HOME at it.", e.path, causeText(e.cause))
}

func (e *notWritableError) Unwrap() []error { return []error{ErrNotWritable, e.cause} }

func notWritable(home string, err error) error { return &notWritableError{path: home, cause: err} }

// causeText is the bare reason of a filesystem error ("read-only file
// system"), without the path the message already names.
func causeText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}
