package deadline

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// expiresAt runs body under a fake clock and reports when onExpire fired,
// measured from the start of the budget.
func expiresAt(t *testing.T, timeout time.Duration, body func(d *Deadline)) time.Duration {
	t.Helper()
	var fired time.Duration
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		d := New(timeout)
		done := make(chan struct{})
		d.Watch(context.Background(), func() { fired = time.Since(start); close(done) })
		body(d)
		<-done
	})
	return fired
}

func TestExpiresAfterTheTimeout(t *testing.T) {
	if got := expiresAt(t, 3*time.Second, func(*Deadline) {}); got != 3*time.Second {
		t.Fatalf("fired at %v", got)
	}
}

func TestHumanWaitDoesNotCount(t *testing.T) {
	got := expiresAt(t, 3*time.Second, func(d *Deadline) {
		time.Sleep(time.Second)
		resume := d.Pause() // a person takes 10 s to answer
		time.Sleep(10 * time.Second)
		resume()
	})
	if got != 13*time.Second {
		t.Fatalf("fired at %v, want 13s (3s of run time + 10s of waiting)", got)
	}
}

func TestOverlappingWaitsCountOnce(t *testing.T) {
	got := expiresAt(t, 2*time.Second, func(d *Deadline) {
		a := d.Pause()
		time.Sleep(time.Second)
		b := d.Pause() // a question while an approval is pending
		time.Sleep(time.Second)
		a()
		time.Sleep(time.Second)
		b()
		b() // resuming twice changes nothing
	})
	if got != 5*time.Second {
		t.Fatalf("fired at %v, want 5s", got)
	}
}

// TestWorkBesideAWaitCounts: a pending question pauses the clock only
// while nothing else works. A tool call of the same batch running beside
// it keeps consuming the budget: here the budget runs out while the
// question is still pending, 2 s into a 5 s command.
func TestWorkBesideAWaitCounts(t *testing.T) {
	got := expiresAt(t, 2*time.Second, func(d *Deadline) {
		ask, answered := d.WithBusy(context.Background()) // the ask tool's handler
		resume := d.Wait(ask)                             // its question is pending
		done := d.Busy()                                  // a parallel command
		time.Sleep(5 * time.Second)
		done()
		time.Sleep(time.Minute)
		resume()
		answered()
	})
	if got != 2*time.Second {
		t.Fatalf("fired at %v, want 2s: the command beside the question counts", got)
	}
}

// TestOnlyTheWaitIsExcluded: work, then work beside a wait, then the
// wait alone, then work again: only the lone wait is left out.
func TestOnlyTheWaitIsExcluded(t *testing.T) {
	got := expiresAt(t, 4*time.Second, func(d *Deadline) {
		time.Sleep(time.Second) // 1 s counted
		resume := d.Pause()     // an approval is pending
		done := d.Busy()        // a sibling's model call
		time.Sleep(time.Second) // 2 s counted
		done()
		time.Sleep(10 * time.Second) // the wait alone: not counted
		resume()
	})
	if got != 14*time.Second {
		t.Fatalf("fired at %v, want 14s (4s of run time + 10s of waiting alone)", got)
	}
}

// TestIdleHandlerDefersToItsChild: a handler that only waits on a child
// (spawn_subagent) does not keep the clock running through the child's
// human wait; the child's own work does.
func TestIdleHandlerDefersToItsChild(t *testing.T) {
	got := expiresAt(t, 3*time.Second, func(d *Deadline) {
		spawn, ended := d.WithBusy(context.Background())
		resume := Idle(spawn)
		model := d.Busy() // the child's model call
		time.Sleep(time.Second)
		model()
		wait := d.Pause() // the child's approval
		time.Sleep(20 * time.Second)
		wait()
		resume()
		ended()
	})
	if got != 23*time.Second {
		t.Fatalf("fired at %v, want 23s", got)
	}
}

func TestMarksAreIdempotent(t *testing.T) {
	got := expiresAt(t, time.Second, func(d *Deadline) {
		ctx, done := d.WithBusy(context.Background())
		r := Idle(ctx)
		done() // ends while suspended
		r()
		r()
		done()
		w := d.Pause()
		time.Sleep(5 * time.Second) // nothing busy: not counted
		w()
	})
	if got != 6*time.Second {
		t.Fatalf("fired at %v, want 6s", got)
	}
}

func TestNoLimitAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		New(0).Watch(context.Background(), func() { t.Error("no limit must never fire") })
		ctx, cancel := context.WithCancel(context.Background())
		New(time.Second).Watch(ctx, func() { t.Error("a cancelled watch must not fire") })
		cancel()
		time.Sleep(2 * time.Second)
		synctest.Wait()
	})
	var d *Deadline
	d.Pause()() // a nil deadline (no --timeout) is usable
	d.Busy()()
	d.Wait(context.Background())()
	_, done := d.WithBusy(context.Background())
	done()
	Idle(context.Background())()
}
