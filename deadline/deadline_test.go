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
}
