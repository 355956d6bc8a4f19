package cli

import "github.com/spf13/cobra"

// runLong is `jazz run --help`'s description: the parts of the headless
// contract a caller has to know to use it from a script or a bridge.
const runLong = `Run one agent turn headlessly: the answer on stdout, everything else on stderr.

Output: plain mode prints the answer; --json prints one JSON object, on
success and on failure, whose "stopReason" says why the run ended:
completed, max_iterations, declined, timeout, interrupted or error. Exit
code 0 means ok, 1 any failure (--fail-on-decline and
--fail-on-max-iterations make those endings failures too).

The prompt and stdin:
  jazz run --agent dev "question"              the argument is the prompt
  echo "question" | jazz run --agent dev       piped text is the prompt
  git diff | jazz run --agent dev "review it"  the argument, then the piped
                                               text, fenced (at most 1 MiB)
A terminal on stdin is the person's: questions and approvals are asked
there. Redirect stdin from /dev/null to run on the argument alone.

Bridges: with --interactive-stdin, stdin carries the protocol (JSON lines:
approval_decision, user_input_response) and requests come as JSON lines on
stderr; the prompt must be an argument. The same holds, without the flag,
when the prompt is an argument, --events selects approvals (approval or
all) and stdin is a pipe. When stdin ends, whatever waits is declined.

Unattended (no terminal, no bridge), calls above --approval-policy are
declined; the run still finishes and says which tools were declined and
how to allow them.`

// describeCommands adds the long help texts to root's commands.
func describeCommands(root *cobra.Command) {
	if run, _, err := root.Find([]string{"run"}); err == nil && run != root {
		run.Long = runLong
	}
}
