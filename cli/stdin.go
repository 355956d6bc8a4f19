package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jazz-run/jazz/iostreams"
)

// How `jazz run` uses stdin (headless-run.md §4 and §7, as `claude -p`
// and `codex exec` users expect):
//
//   - stdin is a terminal: it is the person's (questions, approvals).
//   - bridge mode (--interactive-stdin, or implied, see impliedBridge):
//     stdin carries the protocol, JSON lines; the prompt is the argument.
//   - otherwise, piped text is read to its end: it is the prompt when
//     there is no argument, and is appended to the argument, fenced, when
//     there is one (`git diff | jazz run --agent dev "review this diff"`).

// MaxStdinBytes bounds the piped text a prompt takes in; more is refused
// with a clear error rather than cut (the end of a diff matters too).
const MaxStdinBytes = 1 << 20

// stdinHintAfter is how long jazz waits on a silent stdin before saying
// what it is waiting for: a parent that keeps stdin open without writing
// would otherwise look like a hang.
const stdinHintAfter = 3 * time.Second

// impliedBridge is bridge mode without --interactive-stdin, as the
// original's chat bridges use it: the prompt is an argument, --events
// selects approvals and stdin is an open pipe, so the program on the
// other end writes approval_decision lines there (headless-run.md §7,
// revised 2026-12-01). An explicit --interactive-stdin=false, or remote
// approvals, turn it off.
func impliedBridge(o RunOptions, cats []string, io *iostreams.IOStreams) bool {
	if o.InteractiveStdinSet || o.RemoteApprovals || strings.TrimSpace(o.Prompt) == "" || !io.IsStdinPipe() {
		return false
	}
	for _, c := range cats {
		if c == "approval" || c == "all" {
			return true
		}
	}
	return false
}

// bridgeNeedsArgument is the error of a bridge run without a prompt
// argument: its stdin is the protocol, so the prompt cannot come from it.
func bridgeNeedsArgument() error {
	return errors.New("No prompt provided. With --interactive-stdin, stdin carries the protocol (approval_decision and user_input_response lines), so the prompt must be an argument: jazz run --interactive-stdin --agent <id> \"<prompt>\".")
}

// readPrompt is the run's prompt from its argument and, unless stdin is
// a terminal or the protocol, the text piped on stdin. wait is told once
// when stdin stays silent for a while.
func readPrompt(ctx context.Context, d Deps, arg string, bridge bool, wait func(string)) (string, error) {
	arg = strings.TrimSpace(arg)
	if bridge {
		if arg == "" {
			return "", bridgeNeedsArgument()
		}
		return arg, nil
	}
	if d.IO.IsStdinTTY() {
		return arg, nil
	}
	piped, err := readStdin(ctx, d.IO.In, arg != "", wait)
	if err != nil {
		return "", err
	}
	return joinPrompt(arg, piped), nil
}

// joinPrompt is the argument followed by the piped text in a fence no
// line of the text can close, so the model can tell the request from the
// material it is about.
func joinPrompt(arg, piped string) string {
	piped = strings.TrimRight(piped, " \t\r\n")
	if strings.TrimSpace(piped) == "" {
		return arg
	}
	if arg == "" {
		return strings.TrimSpace(piped)
	}
	fence := strings.Repeat("`", max(3, longestRun(piped, '`')+1))
	return arg + "\n\nThe text below was piped to jazz on stdin.\n\n" + fence + "\n" + piped + "\n" + fence
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// readStdin reads in to its end, at most MaxStdinBytes, giving up when
// ctx ends (--timeout, a signal). withArg only words the hint.
func readStdin(ctx context.Context, in io.Reader, withArg bool, wait func(string)) (string, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	first := make(chan struct{})
	go func() {
		data, err := io.ReadAll(io.LimitReader(firstByte{r: in, first: first}, MaxStdinBytes+1))
		done <- result{data, err}
	}()
	hint := time.NewTimer(stdinHintAfter)
	defer hint.Stop()
	for {
		select {
		case r := <-done:
			if r.err != nil {
				return "", fmt.Errorf("read prompt from stdin: %w", r.err)
			}
			if len(r.data) > MaxStdinBytes {
				return "", fmt.Errorf("stdin holds more than %d bytes (1 MiB), the most jazz takes into a prompt: pass less, or let the agent read the file with its tools", MaxStdinBytes)
			}
			return string(r.data), nil
		case <-first:
			first = nil // data is flowing: no hint
			hint.Stop()
		case <-hint.C:
			if withArg {
				wait("waiting for stdin to end: piped text is added to the prompt (redirect stdin from /dev/null to run on the argument alone)")
			} else {
				wait("waiting for the prompt on stdin (end it with Ctrl-D, or pass the prompt as an argument)")
			}
		case <-ctx.Done():
			return "", fmt.Errorf("stopped waiting for the prompt on stdin: %w", context.Cause(ctx))
		}
	}
}

// firstByte closes first when the first bytes arrive.
type firstByte struct {
	r     io.Reader
	first chan struct{}
}

func (f firstByte) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n > 0 && f.first != nil {
		select {
		case <-f.first:
		default:
			close(f.first)
		}
	}
	return n, err
}
