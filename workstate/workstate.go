// Package workstate keeps what an agent knows about its task beyond the
// context window, per conversation, under JAZZ_HOME/work/<agentId>/
// <conversationId>/ (agent-loop.md §4): journal.jsonl, where every
// compaction appends its summary before the summary enters the context;
// state.json, the task state update_task_state patches field by field;
// and todos.json, manage_todos' list. A resumed conversation starts with a
// preamble built from them, framed as claims to verify.
//
// Everything is private (0700 directories, 0600 files), bounded (at most
// MaxBytes per conversation, the journal pruned oldest first), written
// atomically and durably (a temp file, fsync, rename and fsync of the
// directory, or one fsynced append), and read and written only as regular
// files that are not symlinks, in directories that are not symlinks
// either, so the directory can never be made to hand out another file or
// to take the notes somewhere else.
package workstate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jazz-run/jazz/safefile"
)

// Limits (agent-loop.md §4).
const (
	// MaxBytes bounds a conversation's work state on disk.
	MaxBytes = 2 << 20
	// MaxStateBytes bounds state.json and todos.json each; the journal has
	// the rest.
	MaxStateBytes = 256 << 10
	// PreambleTokens bounds the resume preamble.
	PreambleTokens = 2000
	// preambleBytes is PreambleTokens at a conservative 3.5 bytes a token.
	preambleBytes = PreambleTokens * 7 / 2
)

// How long a write waits for another run of the conversation to finish
// its own (lockDir), trying every lockInterval.
const (
	lockWait     = 10 * time.Second
	lockInterval = 10 * time.Millisecond
)

// File names inside a conversation's directory.
const (
	JournalFile = "journal.jsonl"
	StateFile   = "state.json"
	TodosFile   = "todos.json"
)

// The id patterns are compiled on first use: counted repeats make big
// programs, and compiling them at init cost every jazz process (`jazz
// run` included) most of a millisecond.
var (
	agentIDRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })
	// plainConvRe is a conversation id used as its directory's name as
	// is. Lower case only: on a case-insensitive file system (macOS,
	// Windows) "Conv" and "conv" would share one directory although
	// they are two conversations.
	plainConvRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9_-][a-z0-9._-]{0,127}$`) })
)

// hashedPrefix starts the directory name of a conversation id stored
// under its hash. No plain name starts with it, so a chosen id cannot
// name the directory of another id's hash.
const hashedPrefix = "c-"

// plainName says whether conversation id conv can be its directory's name
// as is: a name no other id maps to on any file system jazz runs on. Not
// a Windows device name (nul, con, com1.txt…: the file system hands
// out the device), not ending in a dot (Windows drops it, so "a." is "a"),
// not in the hashed names' space.
func plainName(conv string) bool {
	if !plainConvRe().MatchString(conv) || strings.HasSuffix(conv, ".") || strings.HasPrefix(conv, hashedPrefix) {
		return false
	}
	stem, _, _ := strings.Cut(conv, ".")
	switch stem {
	case "con", "prn", "aux", "nul", "conin$", "conout$":
		return false
	}
	if len(stem) == 4 && (strings.HasPrefix(stem, "com") || strings.HasPrefix(stem, "lpt")) && stem[3] >= '0' && stem[3] <= '9' {
		return false
	}
	return true
}

// dirName is the directory name of conversation id conv: itself when it
// is a plain name, else hashedPrefix and its hash. Two ids never share a
// name, and no name leaves work/<agentId>/.
func dirName(conv string) string {
	if plainName(conv) {
		return conv
	}
	sum := sha256.Sum256([]byte(conv))
	return hashedPrefix + hex.EncodeToString(sum[:16])
}

// ErrNoConversation is a Store with no conversation to keep state for.
var ErrNoConversation = errors.New("no conversation is active")

// Store is one conversation's work state.
type Store struct {
	// Home is JAZZ_HOME.
	Home string
	// AgentID and ConversationID name the conversation.
	AgentID, ConversationID string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Redact replaces the run's secrets in a JSON document (the run's
	// secrets.Set RedactJSON); every file is written through it, so the
	// work state holds no secret the run redacts from its envelope and
	// its history, whatever the model recorded. nil writes as is.
	Redact func(json.RawMessage) json.RawMessage

	// fault, set only by tests, is called before each step of a write
	// (see writeAtomic); an error it returns is that step failing, as a
	// full disk or an I/O error would.
	fault func(step string) error
}

// Steps of writeAtomic, in order, as fault sees them.
const (
	stepWrite   = "write"
	stepSync    = "sync"
	stepClose   = "close"
	stepRename  = "rename"
	stepSyncDir = "sync dir"
)

func (s Store) redact(doc []byte) []byte {
	if s.Redact == nil {
		return doc
	}
	return s.Redact(doc)
}

func (s Store) step(name string) error {
	if s.fault != nil {
		return s.fault(name)
	}
	return nil
}

func (s Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Dir is the conversation's directory. A conversation id that is not a
// plain file name (it comes from --conversation, a bridge or the Go API
// and may hold anything) is stored under its hash instead (dirName), so
// no id can name a path outside, and no two ids share a directory.
func (s Store) Dir() (string, error) {
	if s.Home == "" || strings.TrimSpace(s.ConversationID) == "" {
		return "", ErrNoConversation
	}
	if !agentIDRe().MatchString(s.AgentID) {
		return "", fmt.Errorf("work state: agent id %q must match %s", s.AgentID, agentIDRe())
	}
	return filepath.Join(s.Home, "work", s.AgentID, dirName(s.ConversationID)), nil
}

func (s Store) path(name string) (string, error) {
	dir, err := s.Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// mkdir makes the conversation's directory, private. Every directory
// from JAZZ_HOME/work down must be a real directory, not a symlink, and
// the last one private (safefile.CheckPrivate): a planted link or a
// directory others may write would send the task state, which the next
// run trusts as its notes, where someone else can read or replace it.
func (s Store) mkdir() (string, error) {
	dir, err := s.Dir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create work state directory %s: %w", dir, err)
	}
	if err := s.checkDirs(dir); err != nil {
		return "", err
	}
	if err := safefile.CheckPrivate(dir); err != nil {
		return "", fmt.Errorf("work state: %w", err)
	}
	return dir, nil
}

// open makes the conversation's directory (mkdir) and takes its lock
// (lockDir) for a write. Under the lock no other jazz process is writing
// here, so temp files left by a write a kill interrupted are removed:
// without that, each kill would leave one for good.
func (s Store) open(ctx context.Context) (dir string, unlock func(), err error) {
	if dir, err = s.mkdir(); err != nil {
		return "", nil, err
	}
	if unlock, err = lockDir(ctx, dir); err != nil {
		return "", nil, err
	}
	for _, name := range []string{StateFile, TodosFile, JournalFile} {
		left, _ := filepath.Glob(filepath.Join(dir, "."+name+"-*.tmp"))
		for _, f := range left {
			_ = os.Remove(f)
		}
	}
	return dir, unlock, nil
}

// checkDirs fails when a directory from JAZZ_HOME/work down to dir is a
// symlink or not a directory. A missing one is no error: nothing was
// kept there yet.
func (s Store) checkDirs(dir string) error {
	work := filepath.Join(s.Home, "work")
	return realDirs(work, filepath.Join(work, s.AgentID), dir)
}

// realDirs fails when one of dirs, each inside the one before, is a
// symlink or not a directory; the first missing one ends the check.
func realDirs(dirs ...string) error {
	for _, d := range dirs {
		fi, err := os.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("work state directory %s: %w", d, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("work state directory %s is a symlink or not a directory; jazz keeps work state in its own directories only (remove it to start afresh)", d)
		}
	}
	return nil
}

// Remove deletes the conversation's work state. A symlink in its place
// is removed itself; one above it (work/, work/<agentId>/) is refused,
// so a planted link cannot make the removal delete a directory
// elsewhere. Nothing to remove is no error.
func (s Store) Remove() error {
	dir, err := s.Dir()
	if err != nil {
		return err
	}
	work := filepath.Join(s.Home, "work")
	if err := realDirs(work, filepath.Join(work, s.AgentID)); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove work state %s: %w", dir, err)
	}
	return nil
}

// RemoveAgent deletes the work state of every conversation of agentID
// (JAZZ_HOME/work/<agentID>), with Remove's care for planted links.
func RemoveAgent(home, agentID string) error {
	if !agentIDRe().MatchString(agentID) {
		return fmt.Errorf("work state: agent id %q must match %s", agentID, agentIDRe())
	}
	work := filepath.Join(home, "work")
	if err := realDirs(work); err != nil {
		return err
	}
	dir := filepath.Join(work, agentID)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove work state %s: %w", dir, err)
	}
	return nil
}

// readPath is where file name is read from: its path, once the
// directories above it are known to be jazz's own (checkDirs).
func (s Store) readPath(name string) (string, error) {
	dir, err := s.Dir()
	if err != nil {
		return "", err
	}
	if err := s.checkDirs(dir); err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// read returns a work-state file's bytes: nil, nil when it does not
// exist. A symlink, a non-regular file, one others may write or one over
// limit is an error.
func read(ctx context.Context, path string, limit int64) ([]byte, error) {
	li, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if li.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("work state %s is a symlink; jazz reads its own files only", path)
	}
	data, _, err := safefile.Read(ctx, path, safefile.Options{MaxBytes: limit, What: "work state file", Private: true})
	return data, err
}

// writeAtomic replaces path with data, atomically and durably: a private
// temp file in the same directory, fsync, rename (which replaces a
// symlink rather than following it), fsync of the directory. A kill or a
// full disk at any point leaves the old file or the new one, never a
// torn one, and once it returns nil the new one survives a power loss.
func (s Store) writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // fails harmlessly once renamed
	err = s.step(stepWrite)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		if err = s.step(stepSync); err == nil {
			err = f.Sync()
		}
	}
	if cerr := s.step(stepClose); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if cerr := f.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if err != nil {
		return err
	}
	if err := s.step(stepRename); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return s.syncDir(filepath.Dir(path))
}

// syncDir makes a rename or a new file in dir durable. Where a directory
// cannot be synced (Windows) the rename stands as the system keeps it.
func (s Store) syncDir(dir string) error {
	if err := s.step(stepSyncDir); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	_ = d.Sync() // not every system supports it; the file is already in place
	return d.Close()
}

// Entry is one journal line.
type Entry struct {
	At   string `json:"at"`
	Kind string `json:"kind"`
	// Summary is a compaction's summary.
	Summary        string `json:"summary"`
	MessagesBefore int    `json:"messagesBefore,omitempty"`
	MessagesAfter  int    `json:"messagesAfter,omitempty"`
	TokensSaved    int    `json:"tokensSaved,omitempty"`
}

// KindCompaction is the journal entry of a compaction.
const KindCompaction = "compaction"

// Append adds e to the journal (At set to now when empty). When the
// conversation's files would then pass MaxBytes, the oldest entries are
// pruned. An entry bigger than the whole allowance is cut.
func (s Store) Append(ctx context.Context, e Entry) error {
	dir, unlock, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if e.At == "" {
		e.At = s.now().UTC().Format(time.RFC3339)
	}
	if e.Kind == "" {
		e.Kind = KindCompaction
	}
	budget := MaxBytes - s.stateSize(dir)
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	line = s.redact(line)
	if over := len(line) + 1 - budget; over > 0 {
		e.Summary = cut(e.Summary, len(e.Summary)-over-64) + "…"
		if line, err = json.Marshal(e); err != nil {
			return err
		}
		line = s.redact(line)
	}
	path := filepath.Join(dir, JournalFile)
	if li, err := os.Lstat(path); err == nil && !li.Mode().IsRegular() {
		return fmt.Errorf("work state %s is not a regular file; not appending to it", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	// A write torn by a kill or a full disk leaves a last line without
	// its newline; appended to as is, it would swallow this entry into
	// one undecodable line. It is ended first, so only the torn entry is
	// lost.
	rec := append(line, '\n')
	if torn, err := endsTorn(f); err != nil {
		f.Close()
		return fmt.Errorf("append to %s: %w", path, err)
	} else if torn {
		rec = append([]byte{'\n'}, rec...)
	}
	werr := s.step(stepWrite)
	if werr == nil {
		_, werr = f.Write(rec)
	}
	if werr == nil {
		// The summary enters the context once this returns: it must be
		// on disk by then, or a crash loses what the context no longer
		// holds.
		if werr = s.step(stepSync); werr == nil {
			werr = f.Sync()
		}
	}
	fi, serr := f.Stat()
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("append to %s: %w", path, werr)
	}
	if serr == nil && fi.Size() == int64(len(rec)) {
		_ = s.syncDir(dir) // a new journal's name is durable too
	}
	if serr == nil && fi.Size() > int64(budget) {
		return s.prune(ctx, path, budget)
	}
	return nil
}

// endsTorn says whether f holds a last line without its newline.
func endsTorn(f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return false, err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, fi.Size()-1); err != nil {
		return false, err
	}
	return last[0] != '\n', nil
}

// stateSize is the bytes state.json and todos.json hold.
func (s Store) stateSize(dir string) int {
	n := 0
	for _, f := range []string{StateFile, TodosFile} {
		if fi, err := os.Lstat(filepath.Join(dir, f)); err == nil && fi.Mode().IsRegular() {
			n += int(fi.Size())
		}
	}
	return n
}

// prune rewrites the journal with its newest lines that fit in budget.
func (s Store) prune(ctx context.Context, path string, budget int) error {
	data, err := read(ctx, path, MaxBytes*2)
	if err != nil {
		return fmt.Errorf("prune %s: %w", path, err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	size, first := 0, len(lines)
	for first > 0 && size+len(lines[first-1]) <= budget {
		first--
		size += len(lines[first])
	}
	if err := s.writeAtomic(path, []byte(strings.Join(lines[first:], ""))); err != nil {
		return fmt.Errorf("prune %s: %w", path, err)
	}
	return nil
}

// Journal returns the journal's entries, oldest first. Lines that do not
// decode (a torn write) are skipped. A missing journal is empty.
func (s Store) Journal(ctx context.Context) ([]Entry, error) {
	path, err := s.readPath(JournalFile)
	if err != nil {
		return nil, err
	}
	data, err := read(ctx, path, MaxBytes*2)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, line := range strings.Split(string(data), "\n") {
		var e Entry
		if strings.TrimSpace(line) != "" && json.Unmarshal([]byte(line), &e) == nil {
			out = append(out, e)
		}
	}
	return out, nil
}
