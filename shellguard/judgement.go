package shellguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Approver names the gate step that approved an execute_command call.
type Approver string

// The gate steps of tools-and-approval.md §5 that can approve a command.
const (
	// ByAllowlist: every simple command had a key covered by the command
	// allowlist (config autoApprovedCommands and session additions).
	ByAllowlist Approver = "allowlist"
	// ByStatic: the static read-only pass proved the command inspect-only
	// and the policy covers read-only.
	ByStatic Approver = "static"
	// ByClassifier: the harness model rated it and the policy covers the
	// rating.
	ByClassifier Approver = "classifier"
	// ByHuman: a person (terminal, bridge or remote approver) saw the
	// whole command and approved it.
	ByHuman Approver = "human"
	// ByPolicy: the policy covers high-risk, so everything is approved.
	ByPolicy Approver = "policy"
	// ByTool: execute_command itself is in the per-tool allowlist.
	ByTool Approver = "tool"
)

// ErrNotJudged wraps every refusal of CheckExec: the expanded command is
// not what the gate approved.
var ErrNotJudged = errors.New("not auto-approved")

// Judgement is the gate's verdict on one approved execute_command call:
// which command text it judged, which step approved it and on what
// grounds. It is plain data that survives JSON, so it can travel with the
// approval from the gate, through the execute twin's arguments, into the
// process that runs the interpreter.
//
// Contract for the execute side: the twin runs Command only if it is
// byte-for-byte the text the judgement names (else it refuses without
// running anything), and calls CheckExec with the argv of every simple
// command the interpreter is about to run, after expansion: from the exec
// handler for every external program, and from the call handler for
// builtins and functions where one is installed. A non-nil error means
// "do not run this argv": stop the run and report the error text to the
// model as a failed result (it starts "not auto-approved:" and says why).
// A zero Judgement refuses everything, so a missing judgement fails
// closed. CheckExec is a pure function of its arguments, safe to call
// from concurrent pipeline stages.
type Judgement struct {
	// Command is the exact command text the gate judged.
	Command string `json:"command"`
	// By is the step that approved it.
	By Approver `json:"by"`
	// Entries are the allowlist entries that covered its simple commands
	// (By == ByAllowlist).
	Entries []string `json:"entries,omitempty"`
	// Level is the rating the approval rests on (ByStatic, ByClassifier).
	Level string `json:"level,omitempty"`
}

// Judge builds the judgement for a command the gate approved through by.
// For the allowlist it records the entries that cover the command's keys.
func Judge(command string, by Approver, entries []string, level string) Judgement {
	j := Judgement{Command: command, By: by, Level: level}
	if by == ByAllowlist {
		j.Entries = coveringEntries(command, entries)
	}
	return j
}

// coveringEntries are the entries that cover at least one call of command.
func coveringEntries(command string, entries []string) []string {
	calls, err := judgedCalls(command)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" || slices.Contains(out, e) {
			continue
		}
		for _, c := range calls {
			if c.key != "" && MatchKey(c.key, e) {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// CheckExec says whether argv, one simple command after expansion, is
// what the judgement approved. Commands a person or the high-risk policy
// approved pass; for the automatic steps argv must be one of the judged
// command's own simple commands as written, or (allowlist) have a key the
// recorded entries cover and pass the same per-command rules, or
// (classifier) run a program the judged text names and not be clearly
// mutating. See Judgement for the caller's side of the contract.
func (j Judgement) CheckExec(argv []string) error {
	if len(argv) == 0 {
		return nil
	}
	switch j.By {
	case ByHuman, ByPolicy, ByTool:
		return nil
	case ByAllowlist, ByStatic, ByClassifier:
	case "":
		return fmt.Errorf("%w: no approval judgement reached the interpreter for `%s`", ErrNotJudged, strings.Join(argv, " "))
	default:
		return fmt.Errorf("%w: unknown approval step %q", ErrNotJudged, j.By)
	}
	calls, err := judgedCalls(j.Command)
	if err != nil {
		return fmt.Errorf("%w: the approved command no longer parses: %w", ErrNotJudged, err)
	}
	for _, c := range calls {
		if c.literal && slices.Equal(c.words, argv) {
			return nil
		}
	}
	shown := strings.Join(argv, " ")
	switch j.By {
	case ByAllowlist:
		if why := argvAllowlistProblem(argv, j.Entries); why != "" {
			return fmt.Errorf("%w: after expansion the command runs `%s`: %s", ErrNotJudged, shown, why)
		}
		return nil
	case ByClassifier:
		name := path.Base(argv[0])
		for _, c := range calls {
			if len(c.words) > 0 && !c.dyn0 && path.Base(c.words[0]) == name {
				if why := clearlyMutatingArgv(argv); why != "" {
					return fmt.Errorf("%w: after expansion the command runs `%s`, which %s", ErrNotJudged, shown, why)
				}
				return nil
			}
		}
		return fmt.Errorf("%w: after expansion the command runs `%s`, a program the approved command does not name", ErrNotJudged, shown)
	}
	return fmt.Errorf("%w: after expansion the command runs `%s`, which is not what the static read-only check approved", ErrNotJudged, shown)
}

// judgedCall is one simple command of a judged text.
type judgedCall struct {
	words   []string
	literal bool // every word is known exactly: words is the exact argv
	dyn0    bool // the command name is computed
	key     string
}

func judgedCalls(command string) ([]judgedCall, error) {
	f, err := parse(command)
	if err != nil {
		return nil, err
	}
	a := analyze(f)
	var out []judgedCall
	for _, sc := range a.calls {
		c := judgedCall{words: sc.words, literal: !sc.dynamic()}
		c.dyn0 = len(sc.inert) > 0 && !sc.inert[0]
		if k, why := sc.key(); why == "" {
			c.key = k
		}
		out = append(out, c)
	}
	return out, nil
}

// argvAllowlistProblem applies the allowlist's per-call rules to one
// expanded argv: every word is known now.
func argvAllowlistProblem(argv []string, entries []string) string {
	sc := simpleCommand{words: argv, inert: allInert(len(argv))}
	return sc.allowlistProblem(entries)
}

// clearlyMutatingArgv says why argv obviously changes something, or "".
func clearlyMutatingArgv(argv []string) string {
	if blocked, reason := CheckArgv(argv, ""); blocked {
		return reason
	}
	return mutatingArgv(argv)
}

// JudgeJSON is Judge for the gate, which names steps by string and sends
// the judgement on as JSON.
func JudgeJSON(command, by string, entries []string, level string) json.RawMessage {
	b, err := json.Marshal(Judge(command, Approver(by), entries, level))
	if err != nil {
		return nil // a Judgement always marshals; the twin refuses a missing one
	}
	return b
}

// RefusalReason says why neither the allowlist (under entries) nor the
// static read-only pass approves command, for the model: it starts "not
// auto-approved: ".
func RefusalReason(command string, entries []string) string {
	var parts []string
	if len(entries) > 0 {
		if ok, why := Explain(command, entries); !ok {
			parts = append(parts, "allowlist: "+why)
		}
	}
	if why := ReadOnlyProblem(command); why != "" {
		parts = append(parts, "read-only check: "+why)
	}
	if len(parts) == 0 {
		return ""
	}
	return "not auto-approved: " + strings.Join(parts, "; ")
}
