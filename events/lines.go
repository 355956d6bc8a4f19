package events

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/jazz-run/jazz/messages"
)

// Lines is the one writer of a stream whose reader may stop reading: a
// process's stderr, which a parent that never reads it (a full pipe)
// would otherwise make every writer wait on, the run's actors and its
// exit among them. Everyone else hands it entries (Write); one goroutine
// writes them to w, each whole and in the order they were taken, so two
// writers' lines never interleave. Write never waits: while the entries
// not yet written hold more than maxLinesBacklog bytes, an entry is left
// out and counted, and the next one written is preceded by a notice
// saying how many were (the notice func; nil writes none).
//
// A Sink writing to a Lines does not lose lines this way: it waits for
// room on its own goroutine, so its own policy (text deltas first, see
// Sink.queue) decides what a slow reader loses.
type Lines struct {
	w       io.Writer
	notice  func(left int64) []byte
	q       *queue[[]byte]
	backlog atomic.Int64
	dropped atomic.Int64
	drained chan struct{}
	// quit is closed by Close: nothing more is taken, and a Sink waiting
	// for room stops waiting.
	quit      chan struct{}
	closeOnce sync.Once
	abandoned atomic.Bool
	// room is closed, and replaced, each time an entry was written while
	// a Sink waits for room (waiting > 0).
	mu      sync.Mutex
	room    chan struct{}
	waiting atomic.Int32
}

// maxLinesBacklog bounds the bytes a Lines holds for a reader that fell
// behind; entryCost is what one entry counts beyond its bytes, so that a
// flood of empty writes is bounded too.
const (
	maxLinesBacklog = 1 << 20
	entryCost       = 64
)

// NewLines starts the writer of w. notice renders the line telling how
// many entries were left out. Close it when the process (or command) is
// done with w.
func NewLines(w io.Writer, notice func(left int64) []byte) *Lines {
	l := &Lines{w: w, notice: notice, q: newQueue[[]byte](), drained: make(chan struct{}),
		quit: make(chan struct{}), room: make(chan struct{})}
	go l.run()
	return l
}

// WarningNotice is the notice of a stream of JSON lines: a warning event.
func WarningNotice(left int64) []byte {
	return Render(messages.Event{Type: messages.EventWarning,
		Message: fmt.Sprintf("%d lines of this stream were left out: its reader fell behind", left)})
}

// Write takes p as one entry (a copy), written whole later, and never
// waits; it always reports p written.
func (l *Lines) Write(p []byte) (int, error) {
	l.put(p, false)
	return len(p), nil
}

// Dropped is how many entries were left out and not yet told.
func (l *Lines) Dropped() int64 { return l.dropped.Load() }

// put queues a copy of p, or leaves it out when the backlog is full;
// patient waits for room instead, until Close.
func (l *Lines) put(p []byte, patient bool) {
	n := int64(len(p)) + entryCost
	for {
		select {
		case <-l.quit:
			l.dropped.Add(1)
			return
		default:
		}
		l.mu.Lock()
		room := l.room
		l.mu.Unlock()
		cur := l.backlog.Load()
		// An entry larger than the whole bound is taken when nothing else
		// waits: the backlog stays bounded by one entry.
		if cur == 0 || cur+n <= maxLinesBacklog {
			if !l.backlog.CompareAndSwap(cur, cur+n) {
				continue
			}
			break
		}
		if !patient {
			l.dropped.Add(1)
			return
		}
		l.waiting.Add(1)
		select {
		case <-room:
		case <-l.quit:
		}
		l.waiting.Add(-1)
	}
	if !l.q.push(append([]byte(nil), p...)) {
		l.backlog.Add(-n)
		l.dropped.Add(1)
	}
}

// run is the one goroutine that writes to w.
func (l *Lines) run() {
	defer close(l.drained)
	for p := range l.q.out {
		l.tell()
		_, _ = l.w.Write(p)
		l.backlog.Add(-(int64(len(p)) + entryCost))
		if l.waiting.Load() > 0 {
			l.mu.Lock()
			close(l.room)
			l.room = make(chan struct{})
			l.mu.Unlock()
		}
	}
	if !l.abandoned.Load() {
		l.tell()
	}
}

// tell writes the notice of entries left out since the last one.
func (l *Lines) tell() {
	if l.notice == nil {
		return
	}
	if n := l.dropped.Swap(0); n > 0 {
		_, _ = l.w.Write(l.notice(n))
	}
}

// Close takes no more entries and waits until those taken are written,
// or until ctx ends: then what is left is dropped, and the writer
// goroutine ends once the Write it may be blocked in returns.
func (l *Lines) Close(ctx context.Context) error {
	l.closeOnce.Do(func() {
		close(l.quit)
		l.q.close()
	})
	select {
	case <-l.drained:
		return nil
	case <-ctx.Done():
		l.abandoned.Store(true)
		l.q.abandon()
		return fmt.Errorf("%d bytes of stderr were not written: its reader stopped reading: %w", l.backlog.Load(), ctx.Err())
	}
}

// patient is how a Sink writes to a Lines: it waits for room.
type patient struct{ l *Lines }

func (p patient) Write(b []byte) (int, error) {
	p.l.put(b, true)
	return len(b), nil
}
