// Package gittools owns the git tools of tool-schemas.md §7: seven
// read-only ones (git_status, git_log, git_diff, git_branch, git_blame,
// git_reflog, git_tag_list) and eight two-phase pairs (git_add,
// git_commit, git_push, git_pull, git_checkout, git_merge, git_rm,
// git_tag) whose propose half previews exactly what the change will do and
// whose hidden twin refuses when what it previewed has changed.
//
// # A hostile repository is the normal case
//
// The model chooses the directory, and a repository can make git run
// programs of its own: hooks, a file-system monitor, pagers, external diff
// and merge drivers, clean/smudge filters, credential helpers, an ssh
// command, an editor, a gpg program, a remote helper, a receive-pack
// command. So:
//
//   - git runs without a shell, in a session of its own (no terminal to
//     prompt on), with a scrubbed environment (no secrets, no GIT_*
//     variable of the parent: GIT_DIR, GIT_CONFIG_* and GIT_TRACE_CURL
//     would redirect it or print credentials), no pager, no editor, and
//     command-line overrides for what git lets the command line decide
//     (run.go: safetyConfig, from gitinert.Overrides);
//   - before anything runs, the repository's own configuration (local and
//     worktree scopes and every file they include) is read with git itself
//     and each key is judged against an allowlist of inert settings
//     (gitinert.InertKey, shared with the shell's automatic approvals):
//     anything else, conditional includes among them, refuses
//     the call unless the approval policy is high-risk. Operations that
//     may change the repository also refuse when the hooks directory in
//     effect lies inside the repository and holds an executable hook;
//     read-only ones run with optional locks off, so they write nothing;
//   - below high-risk no git jazz starts runs a hook at all
//     (gitinert.NoHooks, laid on in gitCmd.argv, and on the receive-pack
//     of a push to a repository on this machine, which git does not give
//     our command line): the check above is not the process that runs
//     git, and a hook planted after it (by another call of the batch, or
//     a program left running) would otherwise run in a twin's git. Under
//     high-risk the preview names the hooks and the fingerprint covers
//     each one's name and content, so a twin refuses hooks its approval
//     was not given with, and its git runs hooks only from a private
//     copy of the bytes it checked (hookcopy.go), never from the
//     repository's hooks directory, so a hook added, rewritten or
//     swapped for a link after that check does not run; a push to a
//     repository on this machine does the same for that repository's
//     hooks, which its receive-pack runs;
//   - the user's own system and global configuration are trusted: it is
//     theirs, not the repository's;
//   - a repository that jazz's secrets live in, or whose work tree holds
//     them, is refused.
//
// Git's own protection stays on: jazz never adds safe.directory, so a
// repository owned by another user fails as git makes it fail, and
// safe.bareRepository=explicit refuses a bare repository met by chance.
//
// What the check cannot close: the configuration is read right before
// git runs, not by the same process, so a change made in between (by an
// approved write, or a program outside jazz) is not seen; the
// command-line overrides still hold then, hooks among them. Under
// high-risk the repository's configuration, with the programs it names,
// is not checked at all: the high-risk policy lets them run. Submodules' own
// configuration is not read: git is kept out of them (no recursion,
// dirty submodules ignored).
//
// # Binding an approval to its preview
//
// A propose half computes the change's preview (the staged diff and
// message of a commit, the files a checkout overwrites or discards, the
// commits and URL of a push, …) and a fingerprint of the state the preview
// describes (HEAD, the index entries, the work tree's changes, the
// commits involved), and returns it in the twin's arguments as
// expectedState. The twin computes the fingerprint again and refuses with
// `<what> changed since the preview was approved; propose the change
// again.` when it differs; where git can take the previewed object itself
// (a commit id to push, merge or tag, a lease on the remote ref) it does,
// so the window between the check and the change is as narrow as git
// allows. A commit has no such id to take: its twin commits a private copy
// of the index, made under git's own index lock and checked against the
// approved entries (with all, the tracked files' changes are staged into
// the copy and checked to be the approved diff), and checks that the
// commit went on the approved branch right after the approved HEAD,
// undoing it by compare-and-swap otherwise (pin.go).
package gittools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/jazz-run/jazz/isolate"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
)

// Options configures the git tools.
type Options struct {
	// Environ is the environment git children start from, before it is
	// scrubbed; nil is os.Environ.
	Environ func() []string
	// Isolator finds how git and the programs it runs (hooks, helpers)
	// are kept from jazz's own secrets (package isolate); nil makes one
	// for these tools.
	Isolator *isolate.Isolator

	// hooksPinned, when set (by tests), is called by a twin with the
	// directories of its copies of the approved hooks, the repository's
	// and a local remote's ("" for none), after the read whose hash
	// matched the approval and right before git runs: the window in
	// which a hook rewritten in the repository must not run.
	hooksPinned func(local, remote string)
}

// Tools returns the seven read-only git tools and the eight pairs (each
// propose half followed by its hidden execute twin).
func Tools(o Options) []tools.Tool {
	if o.Isolator == nil {
		o.Isolator = &isolate.Isolator{}
	}
	ro := func(name, desc, props string, required []string, h handler) tools.Tool {
		return tools.Tool{
			Name: name, Description: desc, Schema: objectSchema(props, required),
			Level: messages.LevelReadOnly, Handler: h.bind(o),
		}
	}
	out := []tools.Tool{
		ro("git_status", "Show the working tree status (git status --short --branch): the branch and each changed file.",
			"", nil, gitStatus),
		ro("git_log", "Show recent commits (default 20, at most 50): hash, author, relative date and subject.",
			`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"Commits to show (1-50, default 20)."},
"oneline":{"type":"boolean","description":"Add a one-line summary of each commit."}`, nil, gitLog),
		ro("git_diff", "Show changes as a unified diff: the work tree against the index, staged changes (staged), or against a branch or commit; paths limits it, nameOnly lists file names, maxLines cuts it.",
			`"staged":{"type":"boolean","description":"Show staged changes (index against HEAD)."},
"branch":{"type":"string","description":"Compare with this branch (wins over commit)."},
"commit":{"type":"string","description":"Compare with this commit."},
"paths":{"type":"array","items":{"type":"string"},"description":"Only these paths."},
"nameOnly":{"type":"boolean","description":"Only list the changed files."},
"maxLines":{"type":"integer","minimum":1,"description":"Return at most this many lines of diff."}`, nil, gitDiff),
		ro("git_branch", "List branches: local (default), remote-tracking (remote) or both (all), and the current one.",
			`"list":{"type":"boolean","description":"List branches (the only mode; accepted for compatibility)."},
"all":{"type":"boolean","description":"Local and remote-tracking branches."},
"remote":{"type":"boolean","description":"Remote-tracking branches only (wins over all)."}`, nil, gitBranch),
		ro("git_blame", "Show who last changed each line of a file, optionally for a line range.",
			`"file":{"type":"string","minLength":1,"description":"File to blame, relative to path."},
"startLine":{"type":"integer","minimum":1,"description":"First line (alone: just that line)."},
"endLine":{"type":"integer","minimum":1,"description":"Last line."},
"showEmail":{"type":"boolean","description":"Show the author's email with the name."},
"showLineNumbers":{"type":"boolean","description":"Also give each line's number in the commit that introduced it."}`, []string{"file"}, gitBlame),
		ro("git_reflog", "Show where HEAD (or a branch, or every ref) has been: recent reflog entries (default 20, at most 1000).",
			`"limit":{"type":"integer","minimum":1,"maximum":1000,"description":"Entries to show (1-1000, default 20)."},
"branch":{"type":"string","description":"The reflog of this branch instead of HEAD."},
"all":{"type":"boolean","description":"The reflogs of every ref (wins over branch)."},
"oneline":{"type":"boolean","description":"Add a one-line summary of each entry."}`, nil, gitReflog),
		ro("git_tag_list", "List tags, newest first.", "", nil, gitTagList),
	}
	for _, p := range pairs() {
		pair := tools.Pair(tools.Tool{
			Name: p.name, Description: p.desc, Schema: objectSchema(p.props, p.required),
			Level: messages.LevelHighRisk, Handler: p.propose.bind(o),
		}, p.execute.bind(o), 0)
		pair[1].Schema = objectSchema(p.props+",\n"+expectedStateProp, p.required)
		out = append(out, pair...)
	}
	return out
}

// handler is a git tool's handler before it is given its Options.
type handler func(ctx context.Context, c *call) tools.Result

// bind makes h a tools.Handler.
func (h handler) bind(o Options) tools.Handler {
	return func(ctx context.Context, env *tools.Env, args json.RawMessage) tools.Result {
		return h(ctx, &call{env: env, o: o, args: args})
	}
}

// call is one git tool call: who made it and with what.
type call struct {
	env  *tools.Env
	o    Options
	args json.RawMessage
}

// decode unmarshals the schema-valid arguments into v.
func (c *call) decode(v any) *tools.Result {
	if len(c.args) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.args, v); err != nil {
		r := tools.Fail("Invalid arguments: " + err.Error())
		return &r
	}
	return nil
}

// open finds the call's repository (openRepo).
func (c *call) open(ctx context.Context, pathArg string, mutating bool) (*repo, *tools.Result) {
	return openRepo(ctx, c.env, c.o, pathArg, mutating)
}

// pathProp is the `path` every git tool takes; expectedStateProp is the
// property only an execute twin takes.
const (
	pathProp          = `"path":{"type":"string","description":"Directory (or a file in it) inside the repository; default: the working directory."}`
	expectedStateProp = `"expectedState":{"type":"string","description":"Fingerprint of the repository as the preview saw it; set by the propose step."}`
)

// objectSchema is the JSON Schema of a git tool's arguments: props (JSON
// object members, comma-separated; "" for none) and pathProp, closed to
// anything else. Written as text, not marshalled from maps: every run
// builds the git tools, and json.Marshal of 23 schema maps was ~0.3 ms of
// a one-turn run's CPU (schemas_test.go checks the result is valid).
func objectSchema(props string, required []string) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	if props != "" {
		b.WriteString(props)
		b.WriteString(",\n")
	}
	b.WriteString(pathProp)
	b.WriteString("}")
	if len(required) > 0 {
		b.WriteString(`,"required":[`)
		for i, r := range required {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"` + r + `"`)
		}
		b.WriteString("]")
	}
	b.WriteString(`,"additionalProperties":false}`)
	return json.RawMessage(b.String())
}
