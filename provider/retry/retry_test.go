package retry

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
)

// script is a Call that fails with errs in order, then succeeds.
type script struct {
	errs  []error
	calls int
}

func (s *script) call(ctx context.Context) (provider.Response, error) {
	s.calls++
	if s.calls <= len(s.errs) {
		return provider.Response{}, s.errs[s.calls-1]
	}
	return provider.Response{ID: fmt.Sprintf("ok-%d", s.calls)}, nil
}

// recorder collects notices and the waits, and never sleeps.
type recorder struct {
	notices []Notice
	delays  []time.Duration
}

func (r *recorder) opts(attempts int) Options {
	return Options{
		Attempts: attempts,
		Notify:   func(n Notice) { r.notices = append(r.notices, n) },
		Jitter:   NoJitter,
		Sleep: func(ctx context.Context, d time.Duration) error {
			r.delays = append(r.delays, d)
			return ctx.Err()
		},
	}
}

func (r *recorder) attempts() []int {
	var out []int
	for _, n := range r.notices {
		out = append(out, n.Attempt)
	}
	return out
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

var (
	e400     = provider.ClassifyStatus(400, "bad request")
	e401     = provider.ClassifyStatus(401, "bad key")
	e429     = provider.ClassifyStatus(429, "slow down")
	e500     = provider.ClassifyStatus(500, "boom")
	eNetwork = provider.NetworkError(errors.New("connect: connection refused"), "")
	s        = time.Second
)

func TestDo(t *testing.T) {
	tests := []struct {
		name      string
		attempts  int
		errs      []error
		wantCalls int
		wantErr   error
		delays    []time.Duration
		notices   []int
		reason    string
	}{
		{name: "first try", attempts: 11, wantCalls: 1},
		{name: "500 twice then ok", attempts: 11, errs: []error{e500, e500}, wantCalls: 3, delays: []time.Duration{s, 2 * s}, notices: []int{2, 3}, reason: "server error (500)"},
		{name: "network issue retried", attempts: 3, errs: []error{eNetwork}, wantCalls: 2, delays: []time.Duration{s}, notices: []int{2}, reason: "network issue"},
		{name: "400 never retried", attempts: 11, errs: []error{e400}, wantCalls: 1, wantErr: e400},
		{name: "401 never retried", attempts: 11, errs: []error{e401}, wantCalls: 1, wantErr: e401},
		{name: "plain error never retried", attempts: 11, errs: []error{errors.New("unknown tool")}, wantCalls: 1},
		{
			name: "429 until attempts run out", attempts: 11, errs: repeat(e429, 20), wantCalls: 11, wantErr: e429,
			delays:  []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s, 30 * s, 30 * s, 30 * s},
			notices: []int{2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, reason: "rate limit",
		},
		{name: "zero attempts means one", attempts: 0, errs: []error{e500}, wantCalls: 1, wantErr: e500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			sc := &script{errs: tt.errs}
			resp, err := Do(context.Background(), rec.opts(tt.attempts), sc.call)
			if sc.calls != tt.wantCalls {
				t.Errorf("calls = %d, want %d", sc.calls, tt.wantCalls)
			}
			switch {
			case tt.wantErr != nil && err != tt.wantErr:
				t.Errorf("err = %v, want the last error %v unchanged", err, tt.wantErr)
			case tt.wantErr == nil && len(tt.errs) >= tt.wantCalls && err == nil:
				t.Error("want an error")
			case len(tt.errs) < tt.wantCalls && (err != nil || resp.ID == ""):
				t.Errorf("want success, got %v", err)
			}
			if !reflect.DeepEqual(rec.delays, tt.delays) {
				t.Errorf("delays = %v, want %v", rec.delays, tt.delays)
			}
			if !reflect.DeepEqual(rec.attempts(), tt.notices) {
				t.Errorf("notice attempts = %v, want %v", rec.attempts(), tt.notices)
			}
			for _, n := range rec.notices {
				if n.Reason != tt.reason || n.Max != tt.attempts || n.Attempt > n.Max || n.Err == nil || n.Fallback {
					t.Errorf("notice %+v, want reason %q max %d", n, tt.reason, tt.attempts)
				}
			}
		})
	}
}

func TestNoticeMessage(t *testing.T) {
	n := Notice{Attempt: 2, Max: 11, Reason: "rate limit"}
	if got, want := n.Message("coder"), "coder hit a rate limit. Trying again (attempt 2 of up to 11)…"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: s, 2: 2 * s, 3: 4 * s, 5: 16 * s, 6: 30 * s, 50: 30 * s} {
		if got := Backoff(n); got != want {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestCancelDuringWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	sc := &script{errs: repeat(e500, 5)}
	opts := Options{Attempts: 5, Notify: func(Notice) { cancel() }} // real timer sleep
	_, err := Do(ctx, opts, sc.call)
	if !errors.Is(err, context.Canceled) || sc.calls != 1 {
		t.Errorf("err = %v after %d calls, want context.Canceled after 1", err, sc.calls)
	}
}

func TestCancelledCallNotRetried(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sc := &script{errs: repeat(eNetwork, 5)} // looks retryable, but ctx is done
	var rec recorder
	if _, err := Do(ctx, rec.opts(5), sc.call); err == nil || sc.calls != 1 {
		t.Errorf("err %v, calls %d", err, sc.calls)
	}
}

func TestDoStream(t *testing.T) {
	tests := []struct {
		name           string
		streamAttempts int
		streamErrs     []error
		batchErrs      []error
		streamCalls    int
		batchCalls     int
		notices        []Notice // Err and Delay are not compared
		fail           bool
	}{
		{name: "stream ok", streamCalls: 1},
		{name: "400 on stream: no fallback", streamErrs: []error{e400}, streamCalls: 1, fail: true},
		{
			name: "broken stream falls back with a fresh schedule", streamErrs: []error{eNetwork}, batchErrs: []error{e429, e429},
			streamCalls: 1, batchCalls: 3,
			notices: []Notice{
				{Attempt: 1, Max: 4, Reason: "network issue", Fallback: true},
				{Attempt: 2, Max: 4, Reason: "rate limit"},
				{Attempt: 3, Max: 4, Reason: "rate limit"},
			},
		},
		{
			name: "stream retried before the fallback", streamAttempts: 2, streamErrs: []error{e500, e500},
			streamCalls: 2, batchCalls: 1,
			notices: []Notice{
				{Attempt: 2, Max: 4, Reason: "server error (500)"},
				{Attempt: 1, Max: 4, Reason: "server error (500)", Fallback: true},
			},
		},
		{
			name: "fallback also exhausted", streamErrs: []error{e500}, batchErrs: repeat(e500, 9),
			streamCalls: 1, batchCalls: 4, fail: true,
			notices: []Notice{
				{Attempt: 1, Max: 4, Reason: "server error (500)", Fallback: true},
				{Attempt: 2, Max: 4, Reason: "server error (500)"},
				{Attempt: 3, Max: 4, Reason: "server error (500)"},
				{Attempt: 4, Max: 4, Reason: "server error (500)"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			opts := rec.opts(4)
			opts.StreamAttempts = tt.streamAttempts
			st, ba := &script{errs: tt.streamErrs}, &script{errs: tt.batchErrs}
			_, err := DoStream(context.Background(), opts, st.call, ba.call)
			if (err != nil) != tt.fail {
				t.Errorf("err = %v, want failure %v", err, tt.fail)
			}
			if st.calls != tt.streamCalls || ba.calls != tt.batchCalls {
				t.Errorf("stream calls %d batch calls %d, want %d %d", st.calls, ba.calls, tt.streamCalls, tt.batchCalls)
			}
			var got []Notice
			for _, n := range rec.notices {
				if n.Delay <= 0 || n.Err == nil {
					t.Errorf("notice without delay or error: %+v", n)
				}
				n.Err, n.Delay, n.Cause = nil, 0, ""
				got = append(got, n)
			}
			if !reflect.DeepEqual(got, tt.notices) {
				t.Errorf("notices:\n%+v\nwant\n%+v", got, tt.notices)
			}
		})
	}
}

// flaky is a Provider whose streamed calls fail; batch calls answer.
type flaky struct{ reqs []provider.Request }

func (f *flaky) Chat(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	f.reqs = append(f.reqs, req)
	if req.Stream {
		onDelta(provider.Delta{Text: "par"})
		return provider.Response{}, eNetwork
	}
	return provider.Response{Message: messages.ChatMessage{Role: "assistant", Content: "whole"}}, nil
}

func TestChatFallsBackToBatch(t *testing.T) {
	var rec recorder
	p := &flaky{}
	resp, err := Chat(context.Background(), p, provider.Request{Model: "m", Stream: true}, func(provider.Delta) {}, rec.opts(3))
	if err != nil || resp.Message.Content != "whole" {
		t.Fatalf("resp %+v err %v", resp, err)
	}
	if len(p.reqs) != 2 || !p.reqs[0].Stream || p.reqs[1].Stream {
		t.Errorf("requests = %+v, want one streamed then one batch", p.reqs)
	}
	if len(rec.notices) != 1 || !rec.notices[0].Fallback {
		t.Errorf("notices = %+v", rec.notices)
	}
}

// A malformed answer is tried once more in the whole schedule (the
// stream's fallback counts); other failures keep their schedule.
func TestMalformedRetriedOnce(t *testing.T) {
	bad := &provider.Error{Message: "openai sent a malformed answer: an HTML page", Retryable: true, Reason: provider.ReasonMalformed}
	var rec recorder
	sc := &script{errs: repeat(bad, 5)}
	if _, err := Do(context.Background(), rec.opts(11), sc.call); err != bad || sc.calls != 2 {
		t.Fatalf("err %v after %d calls, want the malformed error after 2", err, sc.calls)
	}
	rec = recorder{}
	st, ba := &script{errs: []error{bad}}, &script{errs: []error{bad, bad}}
	if _, err := DoStream(context.Background(), rec.opts(11), st.call, ba.call); err != bad || st.calls != 1 || ba.calls != 1 {
		t.Fatalf("err %v after %d+%d calls, want 1 streamed and 1 batch", err, st.calls, ba.calls)
	}
}

// Retry-After is waited out as the server asked, and said so; one beyond
// MaxRetryAfter is not retried at all.
func TestRetryAfter(t *testing.T) {
	slow := &provider.Error{Status: 429, Message: "slow down", Retryable: true, Reason: provider.ReasonRateLimit, Cause: "slow down", RetryAfter: 20 * time.Second}
	var rec recorder
	sc := &script{errs: []error{slow}}
	if _, err := Do(context.Background(), rec.opts(3), sc.call); err != nil {
		t.Fatal(err)
	}
	if len(rec.delays) != 1 || rec.delays[0] != 20*time.Second {
		t.Fatalf("delays %v, want the server's 20s", rec.delays)
	}
	if got := rec.notices[0].Message("coder"); got != "coder hit a rate limit (slow down). Waiting 20s as the server asked, then trying again (attempt 2 of up to 3)…" {
		t.Errorf("notice %q", got)
	}
	never := *slow
	never.RetryAfter = provider.MaxRetryAfter + time.Second
	rec = recorder{}
	sc = &script{errs: []error{&never}}
	if _, err := Do(context.Background(), rec.opts(3), sc.call); err == nil || sc.calls != 1 {
		t.Fatalf("a Retry-After past the bound was retried: %v, %d calls", err, sc.calls)
	}
}

// The default jitter keeps each wait within 80-100% of the backoff.
func TestJitter(t *testing.T) {
	for n := 1; n <= 8; n++ {
		d := Backoff(n)
		for range 50 {
			if j := randomJitter(d); j < d*8/10 || j > d {
				t.Fatalf("jitter of %v gave %v", d, j)
			}
		}
	}
}
