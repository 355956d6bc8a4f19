// Package deadline is the run's wall-clock budget (`--timeout`), which
// stops counting while a human is being waited for: question and approval
// waits do not count against it.
package deadline

import (
	"context"
	"sync"
	"time"
)

// Deadline tracks elapsed run time minus time spent waiting on a human.
type Deadline struct {
	mu        sync.Mutex
	timeout   time.Duration
	start     time.Time
	paused    time.Duration
	waiting   int
	waitStart time.Time
	changed   chan struct{}
}

// New starts a budget of timeout from now; 0 means no limit.
func New(timeout time.Duration) *Deadline {
	return &Deadline{timeout: timeout, start: time.Now(), changed: make(chan struct{})}
}

// Pause marks the start of a human wait; call the returned func when it
// ends. Nested and parallel waits are counted once.
func (d *Deadline) Pause() (resume func()) {
	if d == nil {
		return func() {}
	}
	d.mu.Lock()
	if d.waiting == 0 {
		d.waitStart = time.Now()
	}
	d.waiting++
	d.notifyLocked()
	d.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			d.waiting--
			if d.waiting == 0 {
				d.paused += time.Since(d.waitStart)
			}
			d.notifyLocked()
			d.mu.Unlock()
		})
	}
}

func (d *Deadline) notifyLocked() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// remaining is the budget left and whether the clock is stopped.
func (d *Deadline) remaining() (time.Duration, bool, chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	used := time.Since(d.start) - d.paused
	if d.waiting > 0 {
		used -= time.Since(d.waitStart)
	}
	return d.timeout - used, d.waiting > 0, d.changed
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
