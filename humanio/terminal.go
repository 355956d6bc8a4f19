package humanio

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/visible"
)

// Terminal asks a person at a terminal: questions and approvals are
// printed on out (stderr) one at a time, and each is answered by one line
// of stdin. One goroutine reads stdin for both, so a line typed for a
// question is never taken by the approval prompt or the other way round.
type Terminal struct {
	runID string
	pub   Publisher
	out   io.Writer
	// queue holds prompts not yet shown; the serve loop shows one at a
	// time. It is unbounded so a bus callback never blocks on a person.
	mu    sync.Mutex
	queue []prompt
	ready chan struct{}
	// settledBy is who the gate says resolved each asked request, by
	// request id (see Settled); settled is signalled when it grows, so
	// the prompt on the screen stops asking when it is the one.
	settledBy map[string]string
	settled   chan struct{}
	subs      []*bus.Subscription
	// width is the screen's width in columns, asked before each prompt
	// (the window may have been resized).
	width func() int
}

// prompt is one question or one approval waiting for the terminal.
type prompt struct {
	approval *messages.ApprovalRequired
	question *messages.UserInputRequired
}

// NewTerminal writes prompts to out (stderr) and publishes answers on pub.
func NewTerminal(runID string, pub Publisher, out io.Writer) *Terminal {
	return &Terminal{runID: runID, pub: pub, out: out, ready: make(chan struct{}, 1),
		settledBy: map[string]string{}, settled: make(chan struct{}, 1), width: columnsOf(out)}
}

// columnsOf asks ScreenWidth of out each time.
func columnsOf(out io.Writer) func() int {
	return func() int { return ScreenWidth(out) }
}

// ScreenWidth is how many columns wide the terminal out writes to is;
// visible.DefaultWidth when out is no terminal or does not say.
func ScreenWidth(out io.Writer) int {
	if w, ok := TerminalWidth(out); ok {
		return w
	}
	return visible.DefaultWidth
}

// TerminalWidth is the width of the terminal out writes to, and whether
// it is one that says.
func TerminalWidth(out io.Writer) (int, bool) {
	if f, ok := out.(interface{ Fd() uintptr }); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w, true
		}
	}
	return 0, false
}

// Settled is told each call the gate resolved, whoever resolved it (a
// remote approver, the timeout, a cancel, this terminal). A request not
// yet shown is never shown; one on the screen stops asking and says who
// settled it, and nothing typed for it decides anything. The gate calls
// it on its own goroutine; it only takes the lock.
func (t *Terminal) Settled(d messages.ApprovalDecided) {
	if d.RequestID == "" {
		return // settled without asking: never on this terminal
	}
	by := d.DecidedBy
	if by == "" {
		by = "the gate"
	}
	t.mu.Lock()
	if _, ok := t.settledBy[d.RequestID]; !ok {
		t.settledBy[d.RequestID] = by
	}
	t.mu.Unlock()
	select {
	case t.settled <- struct{}{}:
	default:
	}
}

// settledAlready says who settled request id, if anyone has.
func (t *Terminal) settledAlready(id string) (string, bool) {
	if id == "" {
		return "", false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	by, ok := t.settledBy[id]
	return by, ok
}

// Attach subscribes to the run's approval and question requests on b.
func (t *Terminal) Attach(ctx context.Context, b *bus.Bus, opts ...bus.SubOption) error {
	s1, err := bus.Subscribe(ctx, b, messages.ApprovalRequiredSubject(t.runID), func(m bus.Msg[messages.ApprovalRequired]) {
		req := m.Value
		t.push(prompt{approval: &req})
	}, append(opts, bus.Unbounded())...)
	if err != nil {
		return fmt.Errorf("subscribe approval requests: %w", err)
	}
	s2, err := bus.Subscribe(ctx, b, messages.InputRequiredSubject(t.runID), func(m bus.Msg[messages.UserInputRequired]) {
		req := m.Value
		t.push(prompt{question: &req})
	}, append(opts, bus.Unbounded())...)
	if err != nil {
		s1.Stop()
		return fmt.Errorf("subscribe questions: %w", err)
	}
	t.subs = []*bus.Subscription{s1, s2}
	return nil
}

func (t *Terminal) push(p prompt) {
	t.mu.Lock()
	t.queue = append(t.queue, p)
	t.mu.Unlock()
	select {
	case t.ready <- struct{}{}:
	default:
	}
}

func (t *Terminal) pop() (prompt, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.queue) == 0 {
		return prompt{}, false
	}
	p := t.queue[0]
	t.queue = t.queue[1:]
	return p, true
}

// Detach stops listening.
func (t *Terminal) Detach() {
	for _, s := range t.subs {
		s.Stop()
	}
}

// Serve shows prompts and reads answers from in until ctx ends. After
// stdin's EOF every prompt is answered at once as nobody would: approvals
// declined, questions unanswered (fail closed).
func (t *Terminal) Serve(ctx context.Context, in io.Reader) {
	lines := make(chan Line)
	go ReadLines(ctx, in, MaxLine, lines)
	for {
		p, ok := t.pop()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-t.ready:
			}
			continue
		}
		switch {
		case p.approval != nil:
			if _, done := t.settledAlready(p.approval.RequestID); done {
				continue // resolved before it was shown: nothing to ask
			}
			t.approve(ctx, *p.approval, lines)
		case p.question != nil:
			t.ask(ctx, *p.question, lines)
		}
	}
}

// readStatus is how a wait for a typed line ended.
type readStatus int

const (
	readGot     readStatus = iota // a line
	readEnd                       // stdin's EOF, or ctx ended
	readSettled                   // the request was settled elsewhere
)

// readLine waits for the next line read after shown (when the prompt was
// written); ok is false at EOF or when ctx ends. A line that came in
// before the prompt was on the screen was typed or pasted for something
// else (the rest of a multi-line paste into a question, a double Enter)
// and answers nothing: it is dropped, and the person told.
func (t *Terminal) readLine(ctx context.Context, lines <-chan Line, shown time.Time) (string, bool) {
	line, st := t.readFor(ctx, lines, shown, "")
	return line, st == readGot
}

// readFor is readLine for the prompt of request id (or "" for none): it
// also ends, with readSettled, once the gate says that request was
// settled elsewhere.
func (t *Terminal) readFor(ctx context.Context, lines <-chan Line, shown time.Time, id string) (string, readStatus) {
	for {
		if _, done := t.settledAlready(id); done {
			return "", readSettled
		}
		select {
		case <-t.settled:
			// Some request was settled: the check above reads the
			// record, not the signal, so one eaten while another
			// prompt waited loses nothing.
			continue
		case l, ok := <-lines:
			if !ok {
				return "", readEnd
			}
			if l.Cut {
				fmt.Fprintf(t.out, "\n(ignored a line longer than %d bytes: it answers nothing)\n", MaxLine)
				continue
			}
			if l.At.Before(shown) {
				fmt.Fprintf(t.out, "\n(ignored a line typed before this prompt was shown: %s)\n", visible.Line(l.Text))
				continue
			}
			if _, done := t.settledAlready(id); done {
				return "", readSettled // typed as the gate settled it
			}
			return l.Text, readGot
		case <-ctx.Done():
			return "", readEnd
		}
	}
}

// ask prints a question in the spec's numbered form and publishes the
// answer: a number picks that option's value (several numbers separated
// by commas pick several, joined with ", "), other text is the answer,
// empty is no answer.
func (t *Terminal) ask(ctx context.Context, q messages.UserInputRequired, lines <-chan Line) {
	fmt.Fprint(t.out, FormatQuestionAt(q, t.width()))
	answer, _ := t.readLine(ctx, lines, time.Now())
	t.publishAnswer(q, ParseAnswer(answer, q.Suggestions))
}

func (t *Terminal) publishAnswer(q messages.UserInputRequired, response string) {
	_ = t.pub.Publish(messages.InputAnsweredSubject(t.runID),
		messages.UserInputAnswered{Place: q.Place, RequestID: q.RequestID, Response: response}, q.Trace)
}

// FormatQuestion is FormatQuestionAt for a screen of
// visible.DefaultWidth columns.
func FormatQuestion(q messages.UserInputRequired) string {
	return FormatQuestionAt(q, visible.DefaultWidth)
}

// FormatQuestionAt is the terminal form of a question, ending with the
// answer prompt (no newline after it), its lines broken to width as
// FormatApprovalAt's are. Everything in it that the model
// wrote is made visible first (package visible): an escape sequence or a
// carriage return in a question must not repaint what the person reads.
func FormatQuestionAt(q messages.UserInputRequired, width int) string {
	var b strings.Builder
	// Every line of the question after its first is quoted behind the
	// gutter, so none can pass for an option or the answer line.
	first, rest, more := strings.Cut(q.Question, "\n")
	fmt.Fprintf(&b, "❓ %s\n", visible.Block(first))
	if more {
		b.WriteString(visible.Quote("  ", rest) + "\n")
	}
	if q.Place.Depth > 0 {
		b.WriteString(asker(q.Place, "", q.Task))
	}
	for i, s := range q.Suggestions {
		label := s.Label
		if label == "" {
			label = s.Value
		}
		shown := visible.Line(label)
		if label != s.Value {
			// A number answers with the value, not the label: the person
			// reads what their answer will say.
			shown += " (answers " + visible.Line(strconv.Quote(s.Value)) + ")"
		}
		if s.Description != "" {
			fmt.Fprintf(&b, "  %d) %s — %s\n", i+1, shown, visible.Line(s.Description))
		} else {
			fmt.Fprintf(&b, "  %d) %s\n", i+1, shown)
		}
	}
	if len(q.Suggestions) > 0 {
		b.WriteString("Answer (number, or type your own; empty to skip): ")
	} else {
		b.WriteString("Answer (empty to skip): ")
	}
	return visible.Wrap(b.String(), width, "  ")
}

// ParseAnswer turns a typed line into a response: numbers pick options,
// anything else is taken as typed (trimmed).
func ParseAnswer(line string, opts []messages.Suggestion) string {
	line = strings.TrimSpace(line)
	if line == "" || len(opts) == 0 {
		return line
	}
	parts := strings.Split(line, ",")
	picks := make([]string, 0, len(parts))
	for _, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > len(opts) {
			return line
		}
		picks = append(picks, opts[n-1].Value)
	}
	return strings.Join(picks, ", ")
}

// approve prints the call and reads y / n [note] / a / c until one is
// given; EOF declines.
func (t *Terminal) approve(ctx context.Context, req messages.ApprovalRequired, lines <-chan Line) {
	fmt.Fprint(t.out, FormatApprovalAt(req, t.width()))
	shown := time.Now()
	for {
		line, st := t.readFor(ctx, lines, shown, req.RequestID)
		switch st {
		case readSettled:
			t.settledMeanwhile(ctx, req, lines)
			return
		case readEnd:
			t.decide(req, false, "Nobody can answer: stdin was closed while this approval was pending.", "")
			return
		}
		d, valid := ParseDecision(line, req.Command != "")
		if valid {
			t.decide(req, d.Approved, d.Note, d.Remember)
			return
		}
		fmt.Fprint(t.out, visible.Wrap(approvalChoices(req), t.width(), "  "))
	}
}

// settledMeanwhile tells the person the request on the screen was
// settled elsewhere, and by whom, then takes the next line they type as
// read: a key pressed for that prompt by someone who missed the notice
// lands on nothing, never on the prompt after it.
func (t *Terminal) settledMeanwhile(ctx context.Context, req messages.ApprovalRequired, lines <-chan Line) {
	by, _ := t.settledAlready(req.RequestID)
	fmt.Fprintf(t.out, "\n⏹ %s was settled meanwhile (%s): nothing typed for it decides anything. Press Enter to go on: ",
		visible.Code(req.ToolName), visible.Line(by))
	if line, _ := t.readLine(ctx, lines, time.Now()); strings.TrimSpace(line) != "" {
		fmt.Fprintf(t.out, "(ignored: %s)\n", visible.Line(line))
	}
}

func (t *Terminal) decide(req messages.ApprovalRequired, approved bool, note, remember string) {
	_ = t.pub.Publish(messages.ApprovalDecidedSubject(t.runID), messages.ApprovalDecided{
		Place: req.Place, RequestID: req.RequestID, ToolCallID: req.ToolCallID, ToolName: req.ToolName, Approved: approved,
		DecidedBy: messages.DecidedByHuman, Note: note, Remember: remember,
	}, req.Trace)
}

// FormatApproval is FormatApprovalAt for a screen of visible.DefaultWidth
// columns.
func FormatApproval(req messages.ApprovalRequired) string {
	return FormatApprovalAt(req, visible.DefaultWidth)
}

// FormatApprovalAt is the terminal form of an approval request: the tool,
// its risk, the message, the arguments and the preview diff, then the
// choices. It is never cut, and what the model wrote is made visible
// (package visible), so what the person reads is what will run. Its
// lines are broken to width (visible.Wrap): a line the terminal wrapped
// itself would start a row with whatever the model put there.
func FormatApprovalAt(req messages.ApprovalRequired, width int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "🔐 %s wants to run (%s)\n", visible.Code(req.ToolName), visible.Line(req.RiskLevel))
	b.WriteString(asker(req.Place, req.Persona, req.Task))
	// What the model wrote (its description in the message, the file in
	// the diff) is quoted behind the gutter: no line of it can pass for a
	// line of this prompt.
	if req.Message != "" {
		b.WriteString(visible.Quote("  ", req.Message) + "\n")
	}
	args := req.ExecuteArgs
	if len(args) == 0 {
		args = req.Arguments
	}
	if len(args) > 0 {
		// What runs, in ASCII JSON: a lookalike or invisible character in
		// an argument is a \u escape.
		fmt.Fprintf(&b, "  arguments: %s\n", visible.JSON(args, "  "))
	}
	if req.PreviewDiff != "" {
		b.WriteString(visible.Quote("", strings.TrimSuffix(req.PreviewDiff, "\n")) + "\n")
	}
	body := visible.Wrap(b.String(), width, "  ")
	return body + visible.Wrap(decides(req, args, Height(body))+approvalChoices(req), width, "  ")
}

// summaryValue is how much of one argument the closing summary shows.
const summaryValue = 120

// tallRequest is the height (lines) above which the summary says the
// request is taller than a screen.
const tallRequest = 20

// decides is the line just above the choices that says again what the
// answer decides: the tool and its short arguments, in Code. A request
// taller than a screen, or a huge argument, scrolls its start out of
// sight; this line stays next to the cursor, says so, and shows the start
// of every long argument, so no argument can hide behind its own length.
func decides(req messages.ApprovalRequired, args []byte, height int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  ▶ you decide: %s%s", visible.Code(req.ToolName), Arguments(args, ", above"))
	b.WriteString(TallNote(height))
	b.WriteByte('\n')
	return b.String()
}

// Arguments is the one-line summary of a call's arguments (a JSON
// object) that a prompt closes with: " key=value" for each key in order,
// each value as summarize writes it, so a long one is cut with a mark
// that ends with where (", above": the whole of it is on the screen
// above). Arguments that are not an object give "".
func Arguments(args []byte, where string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", visible.Code(k), summarize(m[k], where))
	}
	return b.String()
}

// TallNote is what a summary line adds for a request of height screen
// rows (Height): past tallRequest, that the rest of it is above.
func TallNote(height int) string {
	if height <= tallRequest {
		return ""
	}
	return fmt.Sprintf(" ⟪the request is %d lines: read it all above⟫", height)
}

// screenWidth is the narrowest terminal a request is measured for: a
// line longer than that wraps, and its rows scroll the start of the
// request away as much as lines of their own do.
const screenWidth = 80

// Height is how many rows of a screenWidth-column terminal s takes: one
// per line, more for a line that wraps (a one-line argument of 5000
// characters is taller than a screen).
func Height(s string) int {
	rows := 0
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		rows += 1 + max(0, utf8.RuneCountInString(l)-1)/screenWidth
	}
	return rows
}

// summarize is one argument value for the summary line: a string as Code
// (quoted), its whitespace runs counted, cut at summaryValue with a
// count of what is left (and where, which says where the rest is); any
// other value as ASCII JSON, cut the same way. The marks ⟪…⟫ are not
// ASCII, so no Code text can forge them.
func summarize(raw json.RawMessage, where string) string {
	var s string
	out := ""
	if json.Unmarshal(raw, &s) == nil {
		out = `"` + spaces(visible.Code(s)) + `"`
	} else {
		out = visible.JSON(raw, "")
		out = strings.ReplaceAll(out, "\n", " ")
	}
	if len(out) > summaryValue {
		// Code and JSON output is ASCII except for the marks; cut on a
		// rune boundary.
		r := []rune(out)
		if len(r) > summaryValue {
			out = string(r[:summaryValue]) + fmt.Sprintf("⟪+%d more chars%s⟫", len(r)-summaryValue, where)
		}
	}
	return out
}

// spaces writes every run of more than three spaces as a count, so a
// command cannot push its end out of sight with blanks.
func spaces(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] == ' ' {
			j++
		}
		switch n := j - i; {
		case n > 3:
			fmt.Fprintf(&b, "⟪%d spaces⟫", n)
			i = j
		case n > 0:
			b.WriteString(s[i:j])
			i = j
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// taskPreview is how much of a sub-agent's brief a prompt shows: enough
// to know the job; the brief itself is in the request.
const taskPreview = 160

// asker says which agent raised a request: the top-level agent by name,
// a sub-agent by name, depth, persona, parent and the start of its task.
func asker(p messages.Place, persona, task string) string {
	if p.Depth == 0 {
		if p.AgentName == "" {
			return ""
		}
		return fmt.Sprintf("  asked by: %s (the top-level agent)\n", visible.Line(p.AgentName))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  asked by: sub-agent %s (depth %d", quoteName(p.AgentName), p.Depth)
	if persona != "" {
		// The name is the model's to choose; the persona is what it is.
		fmt.Fprintf(&b, ", persona %s", quoteName(persona))
	}
	if p.ParentAgentID != "" {
		fmt.Fprintf(&b, ", spawned by %s", visible.Line(p.ParentAgentID))
	}
	b.WriteString(")\n")
	if task != "" {
		r := []rune(task)
		cut := ""
		if len(r) > taskPreview {
			r, cut = r[:taskPreview], "…"
		}
		fmt.Fprintf(&b, "  its task: %s%s\n", visible.Line(string(r)), cut)
	}
	return b.String()
}

// quoteName is a name made visible between quotes (visible.Name), so no
// name can close its quotes and write on as if it were the prompt's own
// text.
func quoteName(name string) string { return visible.Name(name) }

// approvalChoices is the answer line; "always" says how far it reaches:
// the whole run on the top-level agent's prompt, only that sub-agent on a
// child's (the gate scopes it so).
func approvalChoices(req messages.ApprovalRequired) string {
	scope := ""
	if req.Place.Depth > 0 || req.RememberScope == messages.ScopeAgent {
		scope = fmt.Sprintf(" (for sub-agent %s only)", quoteName(req.Place.AgentName))
	}
	if req.Command != "" {
		return "Approve? y = yes, n [note] = no, a = always this tool" + scope + ", c = always this command" + commandReach(req.CommandKeys) + scope + ": "
	}
	return "Approve? y = yes, n [note] = no, a = always this tool" + scope + ": "
}

// commandReach says which allowlist keys "c" adds: the key of `npm -v`
// is "npm", which approves every later npm command, more than the
// command on screen.
func commandReach(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	quoted := make([]string, len(keys))
	for i, k := range keys {
		// Quoted and ASCII: a key is the model's text, and a quote in it
		// must not end the list early.
		quoted[i] = strconv.QuoteToASCII(k)
	}
	return " (every command keyed " + strings.Join(quoted, ", ") + ")"
}

// Decision is a parsed answer to an approval prompt.
type Decision struct {
	Approved bool
	Note     string
	Remember string
}

// ParseDecision reads y, yes, n, no, "n <note>", a or c (c only when the
// call is a command). valid is false for anything else.
func ParseDecision(line string, command bool) (d Decision, valid bool) {
	line = strings.TrimSpace(line)
	word, rest, _ := strings.Cut(line, " ")
	switch strings.ToLower(word) {
	case "y", "yes":
		return Decision{Approved: true}, rest == ""
	case "n", "no":
		return Decision{Note: strings.TrimSpace(rest)}, true
	case "a", "always":
		return Decision{Approved: true, Remember: messages.RememberTool}, rest == ""
	case "c":
		if command && rest == "" {
			return Decision{Approved: true, Remember: messages.RememberCommand}, true
		}
	}
	return Decision{}, false
}
