// Package cli is the jazz command tree: flags in, validated options out,
// and the one place errors become exit codes and are printed.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/internal/faults"
	"github.com/jazz-run/jazz/iostreams"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/shellrun"
)

// Exit codes: the headless contract has exactly two.
const (
	ExitOK      = 0
	ExitFailure = 1
)

// Deps are the process's outside world, replaceable in tests.
type Deps struct {
	IO     *iostreams.IOStreams
	Getenv func(string) string
	Cwd    string
	// Faults injects crashes into runs, for the fault tests; nil in the
	// real binary.
	Faults *faults.Plan
}

// silentError has already been printed (or written as an envelope).
type silentError struct{ err error }

func (e silentError) Error() string { return e.err.Error() }

// Main runs jazz with os.Args and returns the exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// What jazz starts (commands, MCP servers) must not read its keys
	// from /proc/<pid>/environ or its memory.
	_ = shellrun.ProtectSelf()
	cwd, _ := os.Getwd()
	d := Deps{IO: iostreams.System(), Getenv: os.Getenv, Cwd: cwd}
	// One command tree for both the look at the command's name and the
	// run: building it costs every process a few hundred microseconds.
	root := mainRoot(d, os.Args[1:])
	name := selected(root, os.Args[1:]).Name()
	jsonErr := name == "run" && jsonStderr(os.Args[1:])
	// Everything jazz writes to stderr, its commands, the run's events
	// and notices and the log, goes through one owner (the tree's Deps
	// share d.IO): lines never interleave, and a reader that stopped
	// reading never blocks the run or its exit.
	stderr := ownStderr(d.IO, jsonErr)
	defer closeStderr(stderr)
	log.SetOutput(stderr)
	if name == "run" || name == "worker" {
		// jazz run is plain by contract, and so is any jazz a tool starts
		// from it (headless-run.md §1); a worker runs the same agents.
		_ = os.Setenv("JAZZ_NO_TUI", "1")
		if jsonStderr(os.Args[1:]) {
			// Libraries that log through the standard logger (the actor
			// engine's slog, OpenTelemetry's error handler) must not put a
			// text line on a stderr that is a JSON channel.
			log.SetFlags(0)
			log.SetOutput(events.LogWriter(stderr))
		}
	}
	setupLog(os.Args[1:], stderr, jsonErr)
	if noTUI(os.Args[1:]) {
		_ = os.Setenv("JAZZ_NO_TUI", "1")
	}
	return execute(ctx, root, os.Args[1:], d)
}

// stderrCloseBound is how long a command's end waits for stderr's reader
// to take what is still queued for it.
const stderrCloseBound = 2 * time.Second

// ownStderr makes a Lines the one writer of ios's stderr, and ios's
// ErrOut. Its notice of lines left out is a warning event on a stderr
// that is a JSON channel (json), a ⚠ line otherwise.
func ownStderr(ios *iostreams.IOStreams, json bool) *events.Lines {
	notice := func(n int64) []byte {
		return fmt.Appendf(nil, "⚠ %d lines of jazz's diagnostics were left out: the reader of stderr fell behind\n", n)
	}
	if json {
		notice = events.WarningNotice
	}
	l := events.NewLines(ios.ErrOut, notice)
	ios.ErrOut = l
	return l
}

// closeStderr writes what is queued for stderr, waiting at most
// stderrCloseBound for a reader that stopped reading.
func closeStderr(l *events.Lines) {
	ctx, cancel := context.WithTimeout(context.Background(), stderrCloseBound)
	defer cancel()
	_ = l.Close(ctx)
}

// Execute runs the command tree on args.
func Execute(ctx context.Context, args []string, d Deps) int {
	// The caller's streams are its own: the owner of stderr wraps a copy.
	ios := *d.IO
	d.IO = &ios
	defer closeStderr(ownStderr(d.IO, len(args) > 0 && args[0] == "run" && jsonStderr(args)))
	return execute(ctx, NewRootCmd(d), args, d)
}

// execute runs root, a tree NewRootCmd(d) made and nothing ran yet.
func execute(ctx context.Context, root *cobra.Command, args []string, d Deps) int {
	root.SetArgs(args)
	jsonMode := jsonRequested(root, args)
	// Help asked for, the version and completion scripts are the answer:
	// stdout, so `jazz --help | less` and `jazz completion bash > f` work.
	// Under --json stdout holds the envelope alone, so help goes to stderr.
	root.SetOut(d.IO.Out)
	if jsonMode {
		root.SetOut(d.IO.ErrOut)
	}
	root.SetErr(d.IO.ErrOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		cmd := selected(root, args)
		switch words := cmd.Flags().Args(); {
		case !cmd.Runnable() && len(words) > 0 && !helpAsked(root, args):
			// A group given a word that names none of its commands: cobra
			// printed the group's help and would exit 0, so a script running
			// a command this jazz lacks (say `jazz bus remove-approver`)
			// would take it as done.
			err = usageError{err: fmt.Errorf("unknown command %q for %q", words[0], cmd.CommandPath()), cmd: cmd.CommandPath()}
		case jsonMode && !cmd.Runnable() && !helpAsked(root, args):
			// Cobra printed help and would exit 0, leaving stdout empty.
			writeFailure(d.IO.Out, fmt.Sprintf("%s needs a command; see %s --help.", cmd.CommandPath(), cmd.CommandPath()), 0)
			return ExitFailure
		default:
			return ExitOK
		}
	}
	var se silentError
	if errors.As(err, &se) {
		return ExitFailure
	}
	if jsonMode {
		msg := err.Error()
		if jsonBeforeCommand(root, args) {
			msg = "--json goes after the command name (jazz run --json ...): " + msg
		}
		if selected(root, args).Name() == "run" {
			writeRunFailure(d.IO.Out, msg, messages.RunFinished{}, 0)
		} else {
			writeFailure(d.IO.Out, msg, 0)
		}
		return ExitFailure
	}
	msg := err.Error()
	var ue usageError
	if errors.As(err, &ue) {
		// Usage printed because of an error is a diagnostic: stderr.
		msg += fmt.Sprintf("\nRun '%s --help' for usage.", ue.cmd)
	}
	stderrLines{w: d.IO.ErrOut, json: selected(root, args).Name() == "run" && jsonStderr(args)}.failure(msg, false)
	return ExitFailure
}

// usageError is a command line cobra could not parse; plain mode points
// at the command's help after the message.
type usageError struct {
	err error
	cmd string
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// jsonStderr says whether a run's stderr is a JSON channel: a bridge
// reads it (--interactive-stdin) or events were asked for. It looks at the
// raw arguments because it must hold before (and when) flags fail to parse.
func jsonStderr(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--interactive-stdin" || strings.HasPrefix(a, "--interactive-stdin=") && a != "--interactive-stdin=false" ||
			a == "--events" || strings.HasPrefix(a, "--events=") && a != "--events=" {
			return true
		}
	}
	return false
}

// NewRootCmd builds the command tree.
func NewRootCmd(d Deps) *cobra.Command { return newRoot(d, false) }

// mainRoot is the tree Main runs args on. `jazz run` is what scripts and
// bridges start over and over, and its tree holds only itself: the other
// commands' flags and completions were ~90 KB of every run's start. A
// run's flags, help, errors and envelope are those of the whole tree
// (TestRunOnlyTreeIsTheWholeTree); everything else, completion
// (`jazz __complete run …`) included, gets the whole tree.
func mainRoot(d Deps, args []string) *cobra.Command {
	return newRoot(d, len(args) > 0 && args[0] == "run")
}

// newRoot builds the command tree, or with runOnly the root and `run`.
func newRoot(d Deps, runOnly bool) *cobra.Command {
	root := &cobra.Command{
		Use:           "jazz",
		Short:         "jazz runs LLM agents whose every mutation passes an approval gate",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       BuildVersion(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().String("config", "", "path to a config file (must exist and hold a JSON object)")
	root.PersistentFlags().Bool("debug", false, "debug log on stderr: what a run is made of, and the actor engine's every actor start, stop and restart")
	root.PersistentFlags().BoolP("verbose", "v", false, "info-level log on stderr (jazz's and the actor engine's)")
	root.PersistentFlags().Bool("no-tui", false, "plain output; sets JAZZ_NO_TUI=1 for what jazz starts (jazz run always does)")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{err: err, cmd: cmd.CommandPath()} })
	if runOnly {
		// The completion command and the value completions serve only
		// `jazz completion` and `jazz __complete`, which are not `jazz run`.
		root.CompletionOptions.DisableDefaultCmd = true
		root.AddCommand(NewRunCmd(d, nil))
		describeCommands(root)
		return root
	}
	root.AddCommand(NewRunCmd(d, nil), NewAgentCmd(d), NewTrustCmd(d), NewUntrustCmd(d), NewBusCmd(d), NewApprovalsCmd(d), NewMCPCmd(d), NewVersionCmd(d),
		NewWorkerCmd(d), NewWorkersCmd(d), NewToolsCmd(d), NewConversationCmd(d))
	registerCompletions(root, d)
	describeCommands(root)
	return root
}

// failureEnvelope is the --json failure shape.
type failureEnvelope struct {
	OK      bool    `json:"ok"`
	Error   string  `json:"error"`
	CostUSD float64 `json:"costUSD"`
}

func writeFailure(w interface{ Write([]byte) (int, error) }, msg string, cost float64) {
	b, _ := json.Marshal(failureEnvelope{OK: false, Error: msg, CostUSD: cost})
	_, _ = w.Write(append(b, '\n'))
}
