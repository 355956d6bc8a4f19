// Package asktools holds the tools that ask a person something:
// ask_user_question and ask_file_picker (tool-schemas.md §8). A question
// goes out on the bus as messages.UserInputRequired and the answer comes
// back as messages.UserInputAnswered, so whoever is reachable (the
// terminal, a bridge on stdin, a remote process) answers the same way.
// The run's deadline stops while a person is being waited for. The tools
// exist only where a human is reachable: an unattended run never offers
// them (headless-run.md §7).
package asktools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/deadline"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/telemetry"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/pathres"
)

// Tool names.
const (
	NameQuestion   = "ask_user_question"
	NameFilePicker = "ask_file_picker"
)

// NoAnswer is what the model is told when nobody answered: an empty
// response, stdin closed, or nobody listening.
const NoAnswer = "The user could not be asked or gave no answer. Do not wait for one and do not ask again: " +
	"state the assumption you are making and continue, or put the question in your final reply."

// flushTimeout bounds the round trip that registers the answer
// subscription with the server.
const flushTimeout = 5 * time.Second

// Asker asks the run's questions over the bus; it is the run's
// tools.Asker. One per run: it numbers requests ui-1, ui-2, … across the
// whole run tree.
type Asker struct {
	bus      *bus.Bus
	runID    string
	deadline *deadline.Deadline
	next     atomic.Int64
	remote   *Remote
}

// Remote is a shared bus people elsewhere answer on. Nothing unsigned is
// taken from it: each question is published there too (again every
// RepublishEvery, for an answerer who starts late), and only an answer
// Check verifies (signed by an admitted approver, bound to the question
// as asked, single use, unexpired) answers it.
type Remote struct {
	Bus *bus.Bus
	// Check returns the signed response raw carries for q, or why not.
	Check func(raw []byte, q messages.UserInputRequired) (string, error)
	// Refused hears each answer refused; may be nil.
	Refused func(requestID string, err error)
	// Unsent hears, once, a question the remote bus refused as larger
	// than it takes: no remote approver sees it, so none can answer,
	// and the run's user is to be told why; may be nil.
	Unsent func(requestID string, err error)
	// Asked, if set, hears each question before its answers are listened
	// for; the done it returns is called when the run stops waiting for
	// it, answered or not (approvals.AnswerChecker.Ask).
	Asked func(q messages.UserInputRequired) (done func())
}

// RepublishEvery is how often a question still waiting is published
// again on the remote bus.
const RepublishEvery = 2 * time.Second

// WithRemote also takes signed answers from r; a.bus stays the local,
// in-process bus the person at hand answers on.
func (a *Asker) WithRemote(r *Remote) *Asker {
	a.remote = r
	return a
}

// NewAsker asks on b for runID; waits pause dl (nil: no deadline).
func NewAsker(b *bus.Bus, runID string, dl *deadline.Deadline) *Asker {
	return &Asker{bus: b, runID: runID, deadline: dl}
}

// Ask publishes a question and waits for its answer or ctx's end. The
// deadline is paused for the whole wait. An empty response means no
// answer.
// place and task say which agent asks (a sub-agent's brief in task), so
// the person answering knows who wants to know.
func (a *Asker) Ask(ctx context.Context, place messages.Place, task, question string, suggestions []messages.Suggestion) (string, error) {
	if suggestions == nil {
		suggestions = []messages.Suggestion{}
	}
	id := fmt.Sprintf("ui-%d", a.next.Add(1))
	place.RunID = a.runID
	answers := make(chan string, 1)
	// The subscription must be known to the server before the question
	// leaves, or a quick answer could pass unseen.
	fctx, cancel := context.WithTimeout(ctx, flushTimeout)
	sub, err := bus.Subscribe(fctx, a.bus, messages.InputAnsweredSubject(a.runID), func(m bus.Msg[messages.UserInputAnswered]) {
		if m.Value.RequestID != id {
			return
		}
		select {
		case answers <- m.Value.Response:
		default:
		}
	}, bus.Registered())
	cancel()
	if err != nil {
		return "", fmt.Errorf("listen for the answer: %w", err)
	}
	defer sub.Stop()
	// The wait is not counted; the handler's own busy mark (ctx) stops
	// counting for it, while other work of the run keeps the clock going.
	resume := a.deadline.Wait(ctx)
	defer resume()
	// The tool call's trace context, so a remote answerer joins the trace.
	tr := telemetry.Inject(ctx)
	req := messages.UserInputRequired{Place: place, Trace: tr, RequestID: id, Question: question, Suggestions: suggestions, AllowCustom: true, Task: task}
	if a.remote != nil {
		stop, err := a.askRemote(ctx, req, answers)
		if err != nil {
			return "", err
		}
		defer stop()
	}
	if err := a.bus.Publish(messages.InputRequiredSubject(a.runID), req, tr); err != nil {
		return "", fmt.Errorf("send the question: %w", err)
	}
	select {
	case r := <-answers:
		return r, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// askRemote listens for signed answers to req on the remote bus and
// publishes req there until stop is called.
func (a *Asker) askRemote(ctx context.Context, req messages.UserInputRequired, answers chan string) (stop func(), err error) {
	r := a.remote
	closed := func() {}
	if r.Asked != nil {
		closed = r.Asked(req)
	}
	fctx, cancel := context.WithTimeout(ctx, flushTimeout)
	sub, err := bus.SubscribeRaw(fctx, r.Bus, messages.InputSignedSubject(a.runID), func(m bus.Raw) {
		resp, err := r.Check(m.Value, req)
		if err != nil {
			if r.Refused != nil {
				r.Refused(req.RequestID, err)
			}
			return
		}
		select {
		case answers <- resp:
		default:
		}
	}, bus.Registered())
	cancel()
	if err != nil {
		closed()
		return nil, fmt.Errorf("listen for signed answers: %w", err)
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(RepublishEvery)
		defer t.Stop()
		for {
			if err := r.Bus.Publish(messages.InputRequiredSubject(a.runID), req, req.Trace); errors.Is(err, bus.ErrTooLarge) {
				// It will never fit: not a word of it reached an approver.
				if r.Unsent != nil {
					r.Unsent(req.RequestID, err)
				}
				return
			}
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); sub.Stop(); closed() }, nil
}

// Tools returns the ask tools for a run where a human is reachable.
// ask_file_picker needs a screen to browse from: it is offered only when
// the human is at a terminal.
func Tools(terminal bool) []tools.Tool {
	ts := []tools.Tool{questionTool()}
	if terminal {
		ts = append(ts, filePickerTool())
	}
	return ts
}

var errNoAsker = errors.New("no one can be asked in this run")

func askerOf(env *tools.Env) (tools.Asker, error) {
	if env == nil || env.Asker == nil {
		return nil, errNoAsker
	}
	return env.Asker, nil
}

func placeOf(env *tools.Env) messages.Place {
	return messages.Place{AgentID: env.AgentID, AgentName: env.AgentName, Depth: env.Depth}
}

const questionSchema = `{
  "type": "object",
  "properties": {
    "question": {"type": "string", "description": "The question, complete and self-contained."},
    "suggested_responses": {
      "type": "array",
      "minItems": 2,
      "description": "Answers to offer; the user may still type their own.",
      "items": {
        "type": "object",
        "properties": {
          "value": {"type": "string", "description": "What you get back when this is picked."},
          "label": {"type": "string"},
          "description": {"type": "string"}
        },
        "required": ["value"]
      }
    },
    "allow_multiple": {"type": "boolean", "default": false, "description": "Let the user pick several suggestions."}
  },
  "required": ["question"]
}`

type questionArgs struct {
	Question    string                `json:"question"`
	Suggestions []messages.Suggestion `json:"suggested_responses"`
	Multiple    bool                  `json:"allow_multiple"`
}

func questionTool() tools.Tool {
	return tools.Tool{
		Name: NameQuestion,
		Description: "Ask the user a question and wait for the answer. Use it only when you cannot proceed sensibly " +
			"without their input; offer suggested_responses when the likely answers are known.",
		Schema:      json.RawMessage(questionSchema),
		Level:       messages.LevelReadOnly,
		LongRunning: true, // a person may take as long as they like
		Handler:     askQuestion,
	}
}

func askQuestion(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var args questionArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		return tools.Fail("invalid arguments: " + err.Error())
	}
	asker, err := askerOf(env)
	if err != nil {
		return tools.OK(NoAnswer)
	}
	q := args.Question
	if args.Multiple && len(args.Suggestions) > 0 {
		q += " (you may pick several, separated by commas)"
	}
	answer, err := asker.Ask(ctx, placeOf(env), env.Task, q, args.Suggestions)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Fail("The question was cancelled: the run is stopping.")
		}
		return tools.OK(NoAnswer)
	}
	if strings.TrimSpace(answer) == "" {
		return tools.OK(NoAnswer)
	}
	return tools.OK("User responded: " + answer)
}

const pickerSchema = `{
  "type": "object",
  "properties": {
    "message": {"type": "string", "description": "What the user is asked to pick."},
    "base_path": {"type": "string", "description": "Directory to pick from (default: the working directory)."},
    "extensions": {"type": "array", "items": {"type": "string"}, "description": "Only files with these extensions, e.g. [\".go\", \"md\"]."},
    "include_directories": {"type": "boolean", "default": false}
  },
  "required": ["message"]
}`

type pickerArgs struct {
	Message    string   `json:"message"`
	BasePath   string   `json:"base_path"`
	Extensions []string `json:"extensions"`
	Dirs       bool     `json:"include_directories"`
}

// maxPickerEntries bounds the numbered list shown to the user.
const maxPickerEntries = 50

func filePickerTool() tools.Tool {
	return tools.Tool{
		Name:        NameFilePicker,
		Description: "Ask the user to pick a file (or directory) and get its path back.",
		Schema:      json.RawMessage(pickerSchema),
		Level:       messages.LevelReadOnly,
		LongRunning: true,
		Handler:     pickFile,
	}
}

const cancelled = "User cancelled file selection"

func pickFile(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var args pickerArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		return tools.Fail("invalid arguments: " + err.Error())
	}
	asker, err := askerOf(env)
	if err != nil {
		return tools.OK(cancelled)
	}
	base := env.Cwd()
	if strings.TrimSpace(args.BasePath) != "" {
		base = pathres.Resolve(env.Cwd(), env.Home, args.BasePath)
	}
	entries := candidates(base, args.Extensions, args.Dirs)
	sugg := make([]messages.Suggestion, 0, len(entries))
	for _, e := range entries {
		sugg = append(sugg, messages.Suggestion{Value: e})
	}
	q := args.Message
	if len(entries) == 0 {
		q += fmt.Sprintf(" (nothing matches in %s; type a path)", base)
	}
	answer, err := asker.Ask(ctx, placeOf(env), env.Task, q, sugg)
	if err != nil && ctx.Err() != nil {
		return tools.Fail("The question was cancelled: the run is stopping.")
	}
	answer = strings.TrimSpace(answer)
	if err != nil || answer == "" {
		return tools.OK(cancelled)
	}
	return tools.OK("User selected: " + pathres.Resolve(base, env.Home, answer))
}

// candidates lists what the picker offers: the entries directly in base
// (relative names), filtered by extension, hidden ones skipped, sorted.
func candidates(base string, exts []string, dirs bool) []string {
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	want := map[string]bool{}
	for _, e := range exts {
		e = strings.ToLower(strings.TrimSpace(e))
		if e != "" && !strings.HasPrefix(e, ".") {
			e = "." + e
		}
		if e != "" {
			want[e] = true
		}
	}
	var out []string
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if e.IsDir() {
			if dirs {
				out = append(out, name+string(filepath.Separator))
			}
			continue
		}
		if len(want) > 0 && !want[strings.ToLower(filepath.Ext(name))] {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	if len(out) > maxPickerEntries {
		out = out[:maxPickerEntries]
	}
	return out
}
