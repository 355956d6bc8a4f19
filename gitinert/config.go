package gitinert

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/jazz-run/jazz/tools/capbuf"
)

// Entry is one setting of git's configuration listing: its scope
// (system, global, local, worktree, command), the file it came from, the
// key as git prints it (section and variable lower-cased) and its value.
type Entry struct {
	Scope, Origin, Key, Value string
}

// ListArgs are git's arguments that list every setting in effect, with
// scope and origin, NUL-separated; Parse reads what they print.
//
// Includes are not followed: the listing runs outside jazz's isolation
// (shellguard.RepoProblem, before anything is approved), and a
// repository's include.path can name any file, JAZZ_HOME's config or a
// key file among them, for git's parser to read and print. The include
// directives themselves are listed, and judged as risks (InertKey): what
// they would bring in is not read, so it cannot be judged inert.
func ListArgs() []string {
	return []string{"config", "--list", "--no-includes", "--show-scope", "--show-origin", "-z"}
}

// Parse reads the output of git run with ListArgs.
func Parse(out string) []Entry {
	parts := strings.Split(out, "\x00")
	var entries []Entry
	for i := 0; i+2 < len(parts); i += 3 {
		key, value, _ := strings.Cut(parts[i+2], "\n")
		entries = append(entries, Entry{Scope: parts[i], Origin: parts[i+1], Key: key, Value: value})
	}
	return entries
}

// own says whether the repository itself holds e.
func (e Entry) own() bool { return e.Scope == "local" || e.Scope == "worktree" }

func (e Entry) String() string {
	return fmt.Sprintf("%s (%s)", e.Key, strings.TrimPrefix(e.Origin, "file:"))
}

// Risks are the settings of entries that the repository holds (local and
// worktree scopes; an include directive among them, since the file it
// names is not read) and that are not known to be inert, each as "key
// (file)".
func Risks(entries []Entry) []string {
	var risks []string
	for _, e := range entries {
		if e.own() && !InertKey(e.Key) {
			risks = append(risks, e.String())
		}
	}
	return risks
}

// AliasRisks are the aliases of the repository's own configuration among
// subcommands: git runs an alias's definition (a program, with `!`)
// instead of the command that was judged. The user's own aliases are
// theirs.
func AliasRisks(entries []Entry, subcommands []string) []string {
	var risks []string
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Key, "alias.")
		if !e.own() || !ok {
			continue
		}
		for _, s := range subcommands {
			// git looks an alias up without regard to case.
			if strings.EqualFold(s, name) {
				risks = append(risks, e.String())
				break
			}
		}
	}
	return risks
}

// Limits of one listing.
const (
	// MaxListing is the most of git's listing read; a configuration
	// larger than that cannot be checked.
	MaxListing = 256 << 10
	// ListTimeout bounds the git process that lists it.
	ListTimeout = 10 * time.Second
)

// ErrUnreadable wraps every failure to list a repository's configuration.
var ErrUnreadable = errors.New("cannot read the repository's git configuration")

// List runs git (the program at gitPath) in dir with env, as the git
// that is to be judged would run, and returns the configuration it
// applies there. Outside any repository that is the user's alone.
func List(ctx context.Context, gitPath, dir string, env []string) ([]Entry, error) {
	ctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, gitPath, ListArgs()...)
	cmd.Dir, cmd.Env = dir, env
	out := &capbuf.Buffer{Limit: MaxListing}
	stderr := &capbuf.Buffer{Limit: 4096}
	cmd.Stdout, cmd.Stderr = out, stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.Text()); msg != "" {
			return nil, fmt.Errorf("%w in %s: %s", ErrUnreadable, dir, msg)
		}
		return nil, fmt.Errorf("%w in %s: %w", ErrUnreadable, dir, err)
	}
	if out.Truncated() {
		return nil, fmt.Errorf("%w in %s: it is larger than %d bytes", ErrUnreadable, dir, MaxListing)
	}
	return Parse(out.Text()), nil
}
