// Package retry owns the retry policy of model calls (agent-loop.md §6):
// how many attempts, the backoff between them, which failures are worth
// another try, and the fall back from a failed stream to a non-streaming
// call. It does no printing: each retry is reported as a Notice, and the
// caller turns it into the retry line and the recoverable error event.
package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jazz-run/jazz/provider"
)

// Backoff limits from agent-loop.md §6.
const (
	// FirstDelay is the wait before the second attempt; it doubles after.
	FirstDelay = time.Second
	// MaxDelay caps every wait.
	MaxDelay = 30 * time.Second
	// StepCeiling bounds one model step, every attempt and wait included.
	StepCeiling = 900 * time.Second
	// SlowHint is how long an attempt runs before the user is told it is
	// taking longer than expected.
	SlowHint = 45 * time.Second
)

// CeilingError is a model step that outran its ceiling. It wraps the last
// failure seen, if any.
type CeilingError struct {
	After time.Duration
	Last  error
}

func (e *CeilingError) Error() string {
	msg := fmt.Sprintf("The model did not finish within %s (the step ceiling, retries included)", ceilingText(e.After))
	if e.Last != nil {
		msg += "; last failure: " + e.Last.Error()
	}
	return msg + "."
}

func (e *CeilingError) Unwrap() error { return e.Last }

func ceilingText(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%d s", int(d/time.Second))
	}
	return d.String()
}

// SlowMessage is the slow hint for an agent named agent.
func SlowMessage(agent string) string {
	return agent + " is taking longer than expected… still waiting on the model."
}

// Notice reports a retry about to happen, before its wait.
type Notice struct {
	// Attempt is the attempt about to be made, 1-based, never above Max.
	// It is 1 on the first non-streaming call of a fallback, whose schedule
	// starts afresh.
	Attempt int
	// Max is the most attempts the current schedule will make.
	Max int
	// Reason is provider.Error.Reason: "rate limit", "network issue",
	// "server error (<code>)", "malformed response".
	Reason string
	// Cause is provider.Error.Cause: what went wrong, in a few words.
	Cause string
	// ServerAsked is set when Delay is the server's Retry-After.
	ServerAsked bool
	// Err is the failure being retried.
	Err error
	// Delay is how long the wait before the attempt is.
	Delay time.Duration
	// Fallback is true when the next attempt drops streaming after a
	// streamed attempt failed. Deltas that attempt already delivered are
	// void: the answer will come whole from the batch call.
	Fallback bool
}

// Message is the user-facing retry line, for an agent named agent:
// `<agent> hit a <reason> (<cause>). Trying again (attempt <n> of up to
// <max>)…`, saying so when the wait is the one the server asked for.
func (n Notice) Message(agent string) string {
	what := n.Reason
	if n.Cause != "" && !strings.Contains(n.Reason, n.Cause) {
		what += " (" + n.Cause + ")"
	}
	again := "Trying again"
	if n.ServerAsked {
		again = fmt.Sprintf("Waiting %s as the server asked, then trying again", n.Delay.Round(time.Second))
	}
	return fmt.Sprintf("%s hit a %s. %s (attempt %d of up to %d)…", agent, what, again, n.Attempt, n.Max)
}

// Options is the policy of one call.
type Options struct {
	// Attempts is 1 + maxRetries; below 1 means 1.
	Attempts int
	// StreamAttempts is how many streamed attempts DoStream makes before it
	// falls back to non-streaming calls; below 1 means 1 (fall back on the
	// first retryable streaming failure). It never exceeds Attempts.
	StreamAttempts int
	// Notify, if set, is called before each wait.
	Notify func(Notice)
	// Sleep waits d or until ctx ends; nil uses a timer. Tests inject one
	// that records the delays and returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// Ceiling bounds the whole call, attempts and waits included; past it
	// the call fails with a CeilingError. 0 means no ceiling.
	Ceiling time.Duration
	// Slow, if set, is called (from a timer goroutine) once for each
	// attempt still running SlowAfter after it started.
	Slow      func(attempt int)
	SlowAfter time.Duration
	// Jitter spreads a backoff delay so that many clients failing at once
	// do not retry in step; nil takes 80–100% of it at random. NoJitter
	// keeps the schedule exact (tests). A server's Retry-After is waited
	// out as asked, never jittered.
	Jitter func(time.Duration) time.Duration
}

// NoJitter is Options.Jitter for an exact schedule.
func NoJitter(d time.Duration) time.Duration { return d }

// randomJitter is 80–100% of d.
func randomJitter(d time.Duration) time.Duration {
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

// tally is what one call's whole schedule has seen, fallback included.
type tally struct{ malformed int }

// Call is one attempt of a model call.
type Call func(ctx context.Context) (provider.Response, error)

// Backoff is the wait after failed attempt n (1-based): 1 s, 2 s, 4 s, …,
// capped at 30 s.
func Backoff(n int) time.Duration {
	d := FirstDelay
	for i := 1; i < n && d < MaxDelay; i++ {
		d *= 2
	}
	return min(d, MaxDelay)
}

// Do runs call until it succeeds, fails with an error provider.IsRetryable
// rejects (a 400, an auth failure, an error building the request, a
// cancelled ctx), or Attempts are spent. A malformed answer is retried at
// most once, and a Retry-After beyond provider.MaxRetryAfter not at all.
// It returns the last error unchanged, so the caller can still inspect
// its *provider.Error.
func Do(ctx context.Context, opts Options, call Call) (provider.Response, error) {
	return ceiling(ctx, opts, func(ctx context.Context) (provider.Response, error) {
		return run(ctx, opts, max(opts.Attempts, 1), 1, call, &tally{})
	})
}

// ceiling runs f under opts.Ceiling and turns its expiry into a
// CeilingError, whatever error the attempt in flight reported for it.
func ceiling(ctx context.Context, opts Options, f Call) (provider.Response, error) {
	if opts.Ceiling <= 0 {
		return f(ctx)
	}
	cerr := &CeilingError{After: opts.Ceiling}
	inner, cancel := context.WithTimeoutCause(ctx, opts.Ceiling, cerr)
	defer cancel()
	resp, err := f(inner)
	if err != nil && ctx.Err() == nil && context.Cause(inner) == cerr {
		return provider.Response{}, &CeilingError{After: opts.Ceiling, Last: lastFailure(err)}
	}
	return resp, err
}

// lastFailure is what an attempt said before the ceiling stopped it,
// unless that was only the ceiling itself.
func lastFailure(err error) error {
	var ce *CeilingError
	if errors.As(err, &ce) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// DoStream runs a streaming call under the policy; after StreamAttempts
// retryable failures it switches to the batch call with a fresh schedule
// (agent-loop.md §6), announced by a Notice with Fallback set.
func DoStream(ctx context.Context, opts Options, stream, batch Call) (provider.Response, error) {
	return ceiling(ctx, opts, func(ctx context.Context) (provider.Response, error) {
		return doStream(ctx, opts, stream, batch)
	})
}

func doStream(ctx context.Context, opts Options, stream, batch Call) (provider.Response, error) {
	attempts := max(opts.Attempts, 1)
	seen := &tally{}
	resp, err := run(ctx, opts, min(max(opts.StreamAttempts, 1), attempts), attempts, stream, seen)
	if err == nil || !retryable(ctx, err, seen) {
		return resp, err
	}
	if err := wait(ctx, opts, Notice{Attempt: 1, Max: attempts, Err: err, Fallback: true, Delay: Backoff(1)}); err != nil {
		return provider.Response{}, err
	}
	return run(ctx, opts, attempts, 1, batch, seen)
}

// Chat calls p under the policy: streamed requests go through DoStream,
// with the same request unstreamed as the fallback.
func Chat(ctx context.Context, p provider.Provider, req provider.Request, onDelta func(provider.Delta), opts Options) (provider.Response, error) {
	streamed := func(ctx context.Context) (provider.Response, error) { return p.Chat(ctx, req, onDelta) }
	if !req.Stream {
		return Do(ctx, opts, streamed)
	}
	batchReq := req
	batchReq.Stream = false
	batch := func(ctx context.Context) (provider.Response, error) { return p.Chat(ctx, batchReq, nil) }
	return DoStream(ctx, opts, streamed, batch)
}

// run makes up to attempts calls. noticeMax is the Max the notices show:
// the streamed phase of DoStream reports against the whole schedule.
func run(ctx context.Context, opts Options, attempts, noticeMax int, call Call, seen *tally) (provider.Response, error) {
	noticeMax = max(noticeMax, attempts)
	for n := 1; ; n++ {
		var slow *time.Timer
		if opts.Slow != nil && opts.SlowAfter > 0 {
			attempt := n
			slow = time.AfterFunc(opts.SlowAfter, func() { opts.Slow(attempt) })
		}
		resp, err := call(ctx)
		if slow != nil {
			slow.Stop()
		}
		if err == nil {
			return resp, nil
		}
		if n >= attempts || !retryable(ctx, err, seen) {
			return resp, err
		}
		if err := wait(ctx, opts, Notice{Attempt: n + 1, Max: noticeMax, Err: err, Delay: Backoff(n)}); err != nil {
			return provider.Response{}, err
		}
	}
}

// retryable says whether err is worth another attempt now, counting it
// in seen: a malformed answer gets one more try in all, a server asking
// to wait longer than MaxRetryAfter none.
func retryable(ctx context.Context, err error, seen *tally) bool {
	if ctx.Err() != nil || !provider.IsRetryable(err) {
		return false
	}
	var pe *provider.Error
	if errors.As(err, &pe) {
		if pe.RetryAfter > provider.MaxRetryAfter {
			return false
		}
		if pe.Reason == provider.ReasonMalformed {
			seen.malformed++
			return seen.malformed <= 1
		}
	}
	return true
}

// wait announces the retry and sleeps: the server's Retry-After when it
// sent one, else the backoff, jittered. A ctx that ends during the wait
// wins over the failure being retried.
func wait(ctx context.Context, opts Options, n Notice) error {
	jitter := opts.Jitter
	if jitter == nil {
		jitter = randomJitter
	}
	n.Delay = jitter(n.Delay)
	var pe *provider.Error
	if errors.As(n.Err, &pe) {
		n.Reason, n.Cause = pe.Reason, pe.Cause
		if pe.RetryAfter > 0 {
			n.Delay, n.ServerAsked = pe.RetryAfter, true
		}
	}
	if opts.Notify != nil {
		opts.Notify(n)
	}
	sleep := opts.Sleep
	if sleep == nil {
		sleep = timerSleep
	}
	if err := sleep(ctx, n.Delay); err != nil {
		return fmt.Errorf("stopped waiting to retry after %v: %w", n.Err, err)
	}
	return nil
}

func timerSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
