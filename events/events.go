// Package events publishes progress events on the bus and renders them as
// the `--events` NDJSON stream: one object a line, filtered by category,
// long strings cut to 200 characters, errors always let through.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
)

// Publisher is where actors send events; the bus implements it, and so
// does a Sink's Local.
type Publisher interface {
	Publish(subject string, msg any, trace messages.Trace) error
}

// Idler is a Publisher that can tell that nobody can be listening (the
// embedded bus before its server starts). Emit asks it first: a plain
// run emits a few events per tool call, and boxing each (a 768-byte
// struct) only for Publish to drop it was a third of a call's garbage.
type Idler interface {
	Idle() bool
}

// Emitter stamps and publishes events of one run. It is safe for
// concurrent use (the NATS connection is).
type Emitter struct {
	pub   Publisher
	runID string
	red   *secrets.Redactor
	// warn tells the run's user of an event the bus did not take.
	warn func(msg string)
}

// NewEmitter publishes events of runID on pub. A nil pub drops them.
func NewEmitter(pub Publisher, runID string) *Emitter { return &Emitter{pub: pub, runID: runID} }

// WithRedactor has e replace the run's known secrets (red) in every
// event before it is published: whatever put a key into an event (a
// provider's error echoing it, a notice quoting a server's reply), no
// reader of the bus, the stream or a parent run's relay sees it. It
// returns e; call it before the first Emit.
func (e *Emitter) WithRedactor(red *secrets.Redactor) *Emitter {
	e.red = red
	return e
}

// WithDropped has e call warn (the run's warning on stderr) for each
// event the bus refused as larger than it takes, besides the small
// event_dropped it publishes in its place. It returns e; call it before
// the first Emit.
func (e *Emitter) WithDropped(warn func(msg string)) *Emitter {
	e.warn = warn
	return e
}

// Active says whether an event emitted now can reach anyone: false for a
// nil emitter or publisher, and while an Idler is idle. A hot path asks
// before it builds an event (a tool call's are 768-byte structs).
func (e *Emitter) Active() bool {
	if e == nil || e.pub == nil {
		return false
	}
	i, ok := e.pub.(Idler)
	return !ok || !i.Idle()
}

// Emit publishes ev on its type's subject. Publishing never fails a run:
// a lost progress event is not worth aborting real work for.
func (e *Emitter) Emit(ev messages.Event) {
	if !e.Active() {
		return
	}
	if ev.RunID == "" {
		ev.RunID = e.runID
	}
	// text_chunk carries the whole text so far: uncut, a long answer
	// streamed in n chunks would put O(n²) bytes on the bus. Every reader
	// renders at most MaxString characters of it anyway.
	// Secrets are replaced before the cut, which would otherwise leave
	// the first half of a key that straddles it: in what stays, plus
	// room for the longest secret that could start there.
	if e.red.Len() > 0 {
		ev.Accumulated = cutAt(ev.Accumulated, MaxString+redactMargin)
		ev = RedactEvent(e.red, ev)
	}
	ev.Accumulated = Cut(ev.Accumulated)
	if err := e.pub.Publish(messages.EventSubject(e.runID, ev.Type), ev, ev.Trace); err != nil {
		e.dropped(ev, err)
	}
}

// dropped stands in for ev, which the bus refused (err): larger than the
// server takes, it reached no watcher of the bus, who would otherwise
// miss an approval or a tool's result with no sign of it. A small
// event_dropped says which event it was (type, call, request) and why,
// and the run's user is warned. Other failures (the connection gone)
// are the connection's to report; an event_dropped that is itself
// refused is not reported again, nor is a warning (warn emits one).
func (e *Emitter) dropped(ev messages.Event, err error) {
	var big *bus.TooLargeError
	if !errors.As(err, &big) || ev.Type == messages.EventDropped {
		return
	}
	what := ev.Type
	if ev.ToolCallID != "" {
		what += " of call " + Cut(ev.ToolCallID)
	}
	if ev.RequestID != "" {
		what += " (request " + Cut(ev.RequestID) + ")"
	}
	msg := fmt.Sprintf("event %s was not published on the bus: it is %d bytes and the server takes at most %d, so watchers of the bus do not see it", what, big.Size, big.Limit)
	place := ev.Place
	place.AgentName = Cut(place.AgentName)
	note := messages.Event{Type: messages.EventDropped, Place: place, Dropped: ev.Type, ToolName: Cut(ev.ToolName),
		RequestID: Cut(ev.RequestID), Message: msg, Timestamp: Now()}
	note.ToolCallID = Cut(ev.ToolCallID)
	_ = e.pub.Publish(messages.EventSubject(e.runID, note.Type), note, ev.Trace)
	if e.warn != nil && ev.Type != messages.EventWarning {
		e.warn(msg)
	}
}

// ApprovalRequired is the approval_required event of a gated call: the
// one the gate emits, and the request line a bridge writes. A call put to
// a person carries the request id a decision must echo and asked:true.
func ApprovalRequired(req messages.ApprovalRequired, policy string) messages.Event {
	ev := messages.Event{
		Type:              messages.EventApprovalRequired,
		Place:             req.Place,
		RequestID:         req.RequestID,
		ToolName:          req.ToolName,
		Message:           req.Message,
		PreviewDiff:       req.PreviewDiff,
		RiskLevel:         req.RiskLevel,
		AutoApprovePolicy: policy,
		Arguments:         req.ExecuteArgs,
		Task:              req.Task,
		Persona:           req.Persona,
		RememberScope:     req.RememberScope,
		CommandKeys:       req.CommandKeys,
		Asked:             messages.Ptr(req.RequestID != ""),
	}
	ev.ToolCallID = req.ToolCallID
	return ev
}

// Now is the epoch-millisecond timestamp events carry.
func Now() int64 { return time.Now().UnixMilli() }

// Filter says which event types a --events selection lets through.
type Filter struct {
	cats map[string]bool
}

// NewFilter builds a filter from validated category names.
func NewFilter(categories []string) Filter {
	f := Filter{cats: map[string]bool{}}
	for _, c := range categories {
		f.cats[c] = true
	}
	return f
}

// Active reports whether any category was selected.
func (f Filter) Active() bool { return len(f.cats) > 0 }

// Allows reports whether the event type is rendered.
func (f Filter) Allows(eventType string) bool {
	cat := messages.CategoryOf(eventType)
	if cat == messages.CategoryAlways {
		return true
	}
	return f.cats[messages.CategoryAll] || f.cats[cat]
}

// Sink takes one run's events in-process, from the publisher Local
// returns: it renders those its filter lets through onto w as NDJSON, and
// hands them to Stream's channel when one was asked for. Order is publish
// order. The run's RunFinished, published last, ends the stream: Detach
// waits for it instead of polling.
//
// The sink never reads the bus. Every event of a run is published in
// this process (a remote worker's come back through the dispatcher's
// emitter), so a run with --events needs no NATS server, and nobody else
// on a shared bus can put a line into the stream a person or a bridge
// reads.
type Sink struct {
	mu     sync.Mutex
	w      io.Writer
	filter Filter
	// always lets chosen types through whatever the filter says (the
	// bridge protocol's requests).
	always map[string]bool
	// bridged: a bridge writes the asked approval requests itself, after
	// registering them, so the sink leaves those out (one line each).
	bridged atomic.Bool
	// in queues what Local was handed for the sink's own goroutine;
	// drained is closed when that goroutine has returned.
	in *queue[delivery]
	// backlog is the bytes of lines queued in in and not yet written;
	// dropped counts the deltas left out while it was over maxBacklog.
	backlog atomic.Int64
	dropped atomic.Int64
	drained chan struct{}
	// ended is closed once the run's RunFinished went through.
	ended   chan struct{}
	endOnce sync.Once
	// stream, when asked for, queues events for Stream's channel.
	stream *queue[Event]
	hook   func(messages.Event)
	// red replaces the run's known secrets in everything the sink
	// writes or streams (see SetRedactor).
	red *secrets.Redactor
}

// delivery is one published message for the sink: an event, or the
// run's end. An event the sink will show is rendered (line) and, for
// Stream, encoded (data) when it is published, so what the sink writes
// and hands on is a copy nobody can change afterwards.
type delivery struct {
	ev   messages.Event
	line []byte
	data []byte
	end  bool
	// raw: line was handed to WriteLine, and is written as it is.
	raw bool
}

// Hook has fn see every event before the sink handles it, on the sink's
// goroutine, where a panic is a crash of the sink (the fault tests inject
// one). Call it before Local.
func (s *Sink) Hook(fn func(messages.Event)) { s.hook = fn }

// SetRedactor has the sink replace the run's known secrets (red) in every
// event it renders or streams, before long strings are cut (a key cut in
// half would show its first half), and in every line handed to WriteLine.
// Call it before Local.
func (s *Sink) SetRedactor(red *secrets.Redactor) { s.red = red }

// Render is the package's Render with the sink's secrets replaced first.
func (s *Sink) Render(ev messages.Event) []byte { return render(ev, s.red, Whole(ev.Type)) }

// RedactEvent returns ev with every known secret (red) replaced in all
// of its strings; a nil red, or an event holding none, is returned as is.
// An event that cannot be re-read after replacing keeps only its type
// and place, and says why: never the original text.
func RedactEvent(red *secrets.Redactor, ev messages.Event) messages.Event {
	if red.Len() == 0 {
		return ev
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return ev // encode() renders it as an EncodeError, text and all dropped
	}
	clean := red.JSON(data)
	if string(clean) == string(data) {
		return ev
	}
	var out messages.Event
	if err := json.Unmarshal(clean, &out); err != nil {
		return messages.Event{Type: ev.Type, Place: ev.Place, Trace: ev.Trace, Message: secrets.Placeholder}
	}
	out.Trace = ev.Trace // not part of the JSON
	return out
}

// NewSink renders to w (nil: nowhere) what filter allows, plus the
// always types. A w that is a Lines (the process's stderr) is shared with
// the process's other writers, line by line.
func NewSink(w io.Writer, filter Filter, always ...string) *Sink {
	if l, ok := w.(*Lines); ok {
		// The sink's goroutine waits for room rather than have Lines drop
		// its lines: its own queue never blocks the run, and its policy
		// decides what a reader that fell behind loses.
		w = patient{l}
	}
	s := &Sink{w: w, filter: filter, always: map[string]bool{}, ended: make(chan struct{})}
	for _, t := range always {
		s.always[t] = true
	}
	return s
}

// LeaveRequestsToBridge tells the sink that a stdin bridge writes the
// approval requests put to a person (asked ones, with a request id)
// through WriteLine, so the stream carries each exactly once and only
// after the bridge can take its answer.
func (s *Sink) LeaveRequestsToBridge() { s.bridged.Store(true) }

// Stream returns a channel carrying every event the sink lets through,
// closed after the run's end went through (or after Close). Call it
// before Local; it never blocks the run: a reader slower than the run
// makes a queue grow.
func (s *Sink) Stream() <-chan Event {
	if s.stream == nil {
		s.stream = newQueue[Event]()
	}
	return s.stream.out
}

// Event is what Stream delivers.
type Event = messages.Event

// Local starts the sink and returns the publisher runID's actors publish
// on: each event (on messages.EventSubject) and the run's RunFinished (on
// messages.FinishedSubject) is handed to the sink, in the order of the
// Publish calls, and every message is passed on to next (the bus, for
// whoever listens there; nil: nobody). Publish never waits for the sink:
// a reader of stderr slower than the run makes a queue grow, since a lost
// tool_execution_complete or error is worse than memory a run frees when
// it ends. Each event is rendered when it is published (see delivery).
// onPanic is told when handling an event
// panics; the sink goes on with the next one. Call Local once.
func (s *Sink) Local(runID string, next Publisher, onPanic func(reason string)) Publisher {
	s.in = newQueue[delivery]()
	s.drained = make(chan struct{})
	go s.drain(onPanic)
	return &tee{sink: s, next: next, events: messages.RunSubject(runID) + ".event.", finished: messages.FinishedSubject(runID)}
}

// tee is the publisher Local returns.
type tee struct {
	sink             *Sink
	next             Publisher
	events, finished string
}

func (t *tee) Publish(subject string, msg any, trace messages.Trace) error {
	switch {
	case subject == t.finished:
		t.sink.in.push(delivery{end: true})
	case strings.HasPrefix(subject, t.events):
		if ev, ok := msg.(messages.Event); ok {
			t.sink.queue(t.sink.prepare(ev))
		}
	}
	if t.next == nil {
		return nil
	}
	return t.next.Publish(subject, msg, trace)
}

// queue hands d to the sink's goroutine, or drops it: a reader of
// stderr that fell behind by maxBacklog bytes loses text and reasoning
// deltas (counted, and told when it catches up), never another event,
// so a reader that stopped reading does not make a long answer's every
// chunk pile up in memory.
func (s *Sink) queue(d delivery) {
	n := int64(len(d.line))
	if n > 0 && lossy(d.ev.Type) && s.backlog.Load() > maxBacklog {
		s.dropped.Add(1)
		return
	}
	s.backlog.Add(n)
	if !s.in.push(d) {
		s.backlog.Add(-n)
	}
}

// maxBacklog is how far (in bytes of lines) stderr's reader may fall
// behind before deltas are dropped.
const maxBacklog = 8 << 20

// lossy says which events a reader that fell behind may lose: each is
// a delta whose text the next complete event carries whole.
func lossy(eventType string) bool {
	return eventType == messages.EventTextChunk || eventType == messages.EventThinkingChunk
}

// writeQueued writes a line taken from the queue: first, when deltas
// were dropped since the last one, a warning saying how many.
func (s *Sink) writeQueued(line []byte) {
	if n := s.dropped.Swap(0); n > 0 {
		s.write(Render(messages.Event{Type: messages.EventWarning,
			Message: fmt.Sprintf("%d text and reasoning chunks were left out: the reader of this stream fell %d MiB behind", n, maxBacklog>>20)}))
	}
	s.write(line)
}

// prepare renders (and, for Stream, encodes) an event the filter lets
// through; the rest go to the sink's goroutine for the hook alone.
func (s *Sink) prepare(ev messages.Event) delivery {
	d := delivery{ev: ev}
	if !s.passes(ev.Type) {
		return d
	}
	if s.w != nil {
		d.line = s.Render(ev)
	}
	if s.stream != nil {
		d.data, _ = messages.Encode(ev)
		d.data = s.red.JSON(d.data)
	}
	return d
}

func (s *Sink) passes(eventType string) bool {
	return s.filter.Allows(eventType) || s.always[eventType]
}

// drain handles the queued deliveries until the queue is closed (Detach)
// or abandoned. After the run's end only lines handed to WriteLine are
// written: events published later are not part of the run's stream.
func (s *Sink) drain(onPanic func(reason string)) {
	defer close(s.drained)
	ended := false
	for d := range s.in.out {
		switch {
		case d.end:
			ended = true
			s.end()
		case d.raw:
			s.writeQueued(d.line)
		case !ended:
			s.handle(d, onPanic)
		}
		// Written, skipped or lost to a panic: no longer behind.
		s.backlog.Add(-int64(len(d.line)))
	}
}

func (s *Sink) handle(d delivery, onPanic func(reason string)) {
	defer func() {
		if v := recover(); v != nil && onPanic != nil {
			onPanic(fmt.Sprintf("%v\n%s", v, debug.Stack()))
		}
	}()
	if s.hook != nil {
		s.hook(d.ev)
	}
	if !s.passes(d.ev.Type) || s.leftToBridge(d.ev) {
		return
	}
	if d.line != nil {
		s.writeQueued(d.line)
	}
	if d.data != nil {
		var ev messages.Event
		if err := json.Unmarshal(d.data, &ev); err == nil {
			s.stream.push(ev)
		}
	}
}

// leftToBridge: a bridge writes this request itself.
func (s *Sink) leftToBridge(ev messages.Event) bool {
	return ev.Type == messages.EventApprovalRequired && ev.RequestID != "" && s.bridged.Load()
}

func (s *Sink) end() {
	s.endOnce.Do(func() {
		close(s.ended)
		if s.stream != nil {
			s.stream.close()
		}
	})
}

// Detach waits until the run's RunFinished has gone through the sink, so
// every event published before it has been written, and the lines handed
// to WriteLine before Detach too, or until ctx ends; then it stops the
// sink's goroutine. A reader that stopped reading (a full pipe) holds
// Detach until ctx ends, not longer: what is still queued then is
// dropped.
func (s *Sink) Detach(ctx context.Context) {
	if s.in == nil {
		return
	}
	select {
	case <-s.ended:
	case <-ctx.Done():
	}
	s.in.close()
	select {
	case <-s.drained:
	case <-ctx.Done():
		s.in.abandon()
	}
	s.end()
}

// Close stops a Stream whose reader went away: its channel is closed even
// if events are left in the queue.
func (s *Sink) Close() {
	if s.in != nil {
		s.in.abandon()
	}
	s.end()
	if s.stream != nil {
		s.stream.abandon()
	}
}

// Write renders one event if it passes the filter.
func (s *Sink) Write(ev messages.Event) {
	if !s.passes(ev.Type) || s.leftToBridge(ev) {
		return
	}
	if s.w != nil {
		s.WriteLine(s.Render(ev))
	}
	if s.stream != nil {
		s.stream.push(RedactEvent(s.red, ev))
	}
}

// Writes reports whether the sink renders onto a writer.
func (s *Sink) Writes() bool { return s.w != nil }

// WriteLine writes one already rendered line, serialized with the events,
// so protocol lines of a bridge never interleave with them. The run's
// known secrets are replaced in it (see SetRedactor): a line rendered
// elsewhere (a bridge's request) passes the same check.
//
// It never waits for the reader: while the sink runs (between Local and
// Detach) the line is queued behind the events published before it and
// written by the sink's goroutine; otherwise it is written directly, but
// waited for at most maxWriteWait. A warning, a bridge's request or the
// run_end a teardown writes would otherwise hang the run on a reader that
// stopped reading.
func (s *Sink) WriteLine(line []byte) {
	if s.w == nil {
		return
	}
	if s.red.Len() > 0 {
		line = []byte(s.red.String(string(line)))
	}
	if s.in != nil {
		s.backlog.Add(int64(len(line)))
		if s.in.push(delivery{line: line, raw: true}) {
			return
		}
		s.backlog.Add(-int64(len(line)))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.write(line)
	}()
	t := time.NewTimer(maxWriteWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// maxWriteWait bounds how long WriteLine waits for a line written
// directly (before Local, after Detach).
const maxWriteWait = time.Second

// write is the one place the sink writes to w, one line at a time.
func (s *Sink) write(line []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.w.Write(line)
}

// MaxString is the cut for string values in rendered events.
const MaxString = 200

// redactMargin is how far past the cut a secret may reach and still be
// replaced whole before the cut: a PEM private key block fits.
const redactMargin = 16 << 10

// Cut shortens s to MaxString characters plus "…" when it is longer.
func Cut(s string) string { return cutAt(s, MaxString) }

// cutAt shortens s to max characters plus "…" when it is longer.
func cutAt(s string, max int) string {
	if len(s) <= max {
		return s
	}
	// Never count past MaxString runes: a stream's text so far is cut at
	// every chunk, and counting it whole made a long answer quadratic.
	n := 0
	for i := range s {
		if n == max {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// Render turns ev into one NDJSON line. Every string value longer than 200
// characters is cut to 200 + "…", and a line longer than MaxLine loses the
// members past it (see BoundLine), key order untouched, except in
// requests a person decides on (user_input_required, approval_required),
// which are never cut: an approver shown `echo AAAA…` cannot see the
// `; touch x` behind it. Characters that would draw nothing or move the
// cursor when the line is read on a terminal are written as \u escapes
// (see EscapeHidden).
func Render(ev messages.Event) []byte { return render(ev, nil, Whole(ev.Type)) }

// render is Render with red's secrets replaced before strings are cut.
func render(ev messages.Event, red *secrets.Redactor, whole bool) []byte {
	data := red.JSON(encode(ev))
	if !whole {
		data = BoundLine(TruncateStrings(data), MaxLine)
	}
	return append(EscapeHidden(data), '\n')
}

// RenderWhole is Render without truncation, for requests sent to a bridge,
// which must never be cut.
func RenderWhole(ev messages.Event) []byte {
	return append(EscapeHidden(encode(ev)), '\n')
}

// Whole reports whether events of this type are rendered uncut.
func Whole(eventType string) bool {
	return eventType == messages.EventUserInputRequired || eventType == messages.EventApprovalRequired
}

func encode(ev messages.Event) []byte {
	data, err := json.Marshal(ev)
	if err != nil {
		data = []byte(encodeErrorLine)
	}
	return data
}

// LogWriter turns what a standard logger writes (one Write per entry)
// into warning events on w, for a stderr that must carry JSON lines only.
// It never waits for w's reader: a logger serializes its writes, so one
// blocked on a reader that stopped reading (a full pipe) would stop every
// goroutine that logs, the run's actors among them. The entries go
// through w when w is the stream's Lines, so they never interleave with
// its other lines, or else through a Lines of their own for as long as
// the process (and its logger) lives; either way, while its backlog is
// full, entries are left out and counted.
func LogWriter(w io.Writer) io.Writer {
	l, ok := w.(*Lines)
	if !ok {
		l = NewLines(w, WarningNotice)
	}
	return logWriter{l}
}

type logWriter struct{ l *Lines }

func (lw logWriter) Write(p []byte) (int, error) {
	msg := strings.TrimRight(string(p), "\n")
	_, _ = lw.l.Write(Render(messages.Event{Type: messages.EventWarning, Message: msg}))
	return len(p), nil
}
