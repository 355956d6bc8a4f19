// Package deadline is the run's wall-clock budget (`--timeout`). Time
// spent waiting on a person does not count against it, and only that
// time: the clock stops while a question or an approval is pending and
// nothing else of the run is working. A model call or a tool that runs
// beside a pending question (another call of the same batch, a sibling
// sub-agent) keeps the clock going, so a wait never lends unbounded time
// to the rest of the run.
//
// Work marks itself busy (Busy, WithBusy) and a person's wait marks itself
// waiting (Pause, Wait); the clock runs unless something waits and
// nothing is busy. A busy mark can travel in a context, so a wait inside
// that work (an ask tool's question) or a handler that only waits on
// other work (spawn_subagent, whose child marks its own work) stops its
// own mark from counting for that time (Wait, Idle).
package deadline

import (
	"context"
	"sync"
	"time"
)

// Deadline tracks the run's budget.
type Deadline struct {
	mu      sync.Mutex
	timeout time.Duration
	// used is the counted time up to since; since is when counting last
	// started, meaningful while counting.
	used     time.Duration
	since    time.Time
	counting bool
	busy     int // active busy marks
	waits    int // pending human waits
	changed  chan struct{}
}

// New starts a budget of timeout from now; 0 means no limit.
func New(timeout time.Duration) *Deadline {
	return &Deadline{timeout: timeout, since: time.Now(), counting: true, changed: make(chan struct{})}
}

// updateLocked settles the time counted so far and whether the clock
// runs now, after busy or waits changed. Watch is woken only when the
// clock starts or stops: while it keeps running (one more busy tool
// call), the time left it waits for is the same.
func (d *Deadline) updateLocked() {
	now := time.Now()
	if d.counting {
		d.used += now.Sub(d.since)
	}
	was := d.counting
	d.counting = d.busy > 0 || d.waits == 0
	d.since = now
	if d.counting != was {
		close(d.changed)
		d.changed = make(chan struct{})
	}
}

// Pause marks the start of a human wait; call the returned func when it
// ends. Nested and parallel waits are counted once.
func (d *Deadline) Pause() (resume func()) {
	if d == nil {
		return func() {}
	}
	d.mu.Lock()
	d.waits++
	d.updateLocked()
	d.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			d.waits--
			d.updateLocked()
			d.mu.Unlock()
		})
	}
}

// Wait is Pause for a wait inside work that carries a busy mark in ctx
// (WithBusy): the mark stops counting while the person is waited for.
func (d *Deadline) Wait(ctx context.Context) (resume func()) {
	if d == nil {
		return func() {}
	}
	idle := func() {}
	if m := markOf(ctx); m != nil && m.d == d {
		idle = m.suspend()
	}
	end := d.Pause()
	return func() {
		end()
		idle()
	}
}

// Busy marks work in progress (a model call, a tool handler) until done
// is called: the clock runs while it lasts, waits or not.
func (d *Deadline) Busy() (done func()) {
	_, done = d.WithBusy(context.Background())
	return done
}

// WithBusy is Busy with the mark carried in the returned context, for
// Wait and Idle to find.
func (d *Deadline) WithBusy(ctx context.Context) (context.Context, func()) {
	if d == nil {
		return ctx, func() {}
	}
	m := &mark{d: d}
	d.mu.Lock()
	d.busy++
	d.updateLocked()
	d.mu.Unlock()
	return context.WithValue(ctx, markKey{}, m), m.end
}

// Idle stops the busy mark in ctx from counting until resume is called:
// for a handler that only waits on work marking itself (a sub-agent's
// model calls and tools). Without a mark in ctx it does nothing.
func Idle(ctx context.Context) (resume func()) {
	if m := markOf(ctx); m != nil {
		return m.suspend()
	}
	return func() {}
}

type markKey struct{}

func markOf(ctx context.Context) *mark {
	m, _ := ctx.Value(markKey{}).(*mark)
	return m
}

// mark is one unit of busy work. Its fields are guarded by d.mu.
type mark struct {
	d         *Deadline
	suspended int
	done      bool
}

func (m *mark) end() {
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	if m.done {
		return
	}
	m.done = true
	if m.suspended == 0 {
		m.d.busy--
		m.d.updateLocked()
	}
}

func (m *mark) suspend() (resume func()) {
	d := m.d
	d.mu.Lock()
	if !m.done && m.suspended == 0 {
		d.busy--
		d.updateLocked()
	}
	m.suspended++
	d.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			m.suspended--
			if !m.done && m.suspended == 0 {
				d.busy++
				d.updateLocked()
			}
			d.mu.Unlock()
		})
	}
}

// remaining is the budget left, whether the clock is stopped, and a
// channel closed when the clock next starts or stops.
func (d *Deadline) remaining() (time.Duration, bool, chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	used := d.used
	if d.counting {
		used += time.Since(d.since)
	}
	return d.timeout - used, !d.counting, d.changed
}

// Watch calls onExpire once when the budget runs out, unless ctx ends
// first. It returns at once when there is no limit.
func (d *Deadline) Watch(ctx context.Context, onExpire func()) {
	if d == nil || d.timeout <= 0 {
		return
	}
	go func() {
		for {
			left, stopped, changed := d.remaining()
			if stopped {
				select {
				case <-changed:
					continue
				case <-ctx.Done():
					return
				}
			}
			if left <= 0 {
				onExpire()
				return
			}
			t := time.NewTimer(left)
			select {
			case <-t.C:
			case <-changed:
				t.Stop()
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
	}()
}
