// Package httpx is the HTTP client jazz's own outbound calls go through:
// every model provider and the catalog fetch. It bounds each call in the
// ways a stalled or endless server would otherwise exploit (agent-loop.md
// §6): how long connecting may take, how long the server may sit on a
// request before its response headers arrive, how long a response body may
// go silent, and how many bytes one response may carry. It also applies the
// proxy settings of config.md §6.
//
// The bounds live in the transport, so a vendor SDK handed this client gets
// them too. The whole of a model step (retries included) is bounded by its
// caller's context; this package bounds each request within it.
package httpx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits bound one HTTP request. A zero field means no bound of that kind.
type Limits struct {
	// Connect bounds the TCP connect and the TLS handshake.
	Connect time.Duration
	// FirstByte bounds the wait from sending the request to its response
	// headers: a server that accepts and never answers.
	FirstByte time.Duration
	// Idle bounds the silence between two pieces of the response body: a
	// server that answers headers and then stalls, mid-stream or not.
	Idle time.Duration
	// MaxBytes bounds the response body: a server that streams forever.
	MaxBytes int64
}

// Default bounds. A non-streamed answer arrives whole after the model has
// written all of it, and a local model on a CPU may read a long prompt for
// minutes before its first byte, hence the generous FirstByte; the step
// ceiling (900 s, retries included) bounds the whole call anyway. The byte
// cap leaves room for the longest answer any model writes (128k tokens) in
// the SSE framing, about 200 bytes a token.
const (
	DefaultConnect   = 30 * time.Second
	DefaultFirstByte = 300 * time.Second
	DefaultIdle      = 300 * time.Second
	DefaultMaxBytes  = 32 << 20
)

// DefaultLimits are the bounds of a model call unless config says others.
func DefaultLimits() Limits {
	return Limits{Connect: DefaultConnect, FirstByte: DefaultFirstByte, Idle: DefaultIdle, MaxBytes: DefaultMaxBytes}
}

// Kind names which bound a LimitError broke.
type Kind string

// The kinds of LimitError.
const (
	KindFirstByte Kind = "first-byte"
	KindIdle      Kind = "idle"
	KindSize      Kind = "size"
)

// LimitError is a request stopped by one of its Limits.
type LimitError struct {
	Kind Kind
	// After is the time bound broken (FirstByte, Idle); Bytes the size one.
	After time.Duration
	Bytes int64
	// Host is the server's host:port.
	Host string
}

func (e *LimitError) Error() string {
	switch e.Kind {
	case KindFirstByte:
		return fmt.Sprintf("%s accepted the request but sent no response within %s", e.Host, seconds(e.After))
	case KindIdle:
		return fmt.Sprintf("%s stopped sending its response: nothing arrived for %s", e.Host, seconds(e.After))
	case KindSize:
		return fmt.Sprintf("%s sent a response larger than %d bytes; jazz stopped reading it", e.Host, e.Bytes)
	}
	return fmt.Sprintf("%s broke the %s limit", e.Host, e.Kind)
}

// Retryable says whether another attempt may fare better: a stall may be
// passing, an oversized answer would come again.
func (e *LimitError) Retryable() bool { return e.Kind != KindSize }

// AsLimit finds a LimitError in err's chain.
func AsLimit(err error) (*LimitError, bool) {
	var le *LimitError
	ok := errors.As(err, &le)
	return le, ok
}

func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%d s", int(d/time.Second))
	}
	return d.String()
}

// Options configure New.
type Options struct {
	Limits Limits
	// Getenv reads the proxy variables; nil reads none (direct).
	Getenv func(string) string
}

// New is an http.Client bounded by o.Limits and routed through the proxy
// the environment names. It has no overall Timeout: a streamed answer may
// take minutes, and its caller's context bounds the whole of it.
func New(o Options) *http.Client {
	l := o.Limits
	dialer := &net.Dialer{Timeout: l.Connect, KeepAlive: 30 * time.Second}
	base := &http.Transport{
		Proxy:               ProxyFunc(o.Getenv),
		DialContext:         dialer.DialContext,
		TLSHandshakeTimeout: l.Connect,
		ForceAttemptHTTP2:   true,
		// Parallel calls mostly go to one host (a worker's tasks, a
		// run's sub-agents): Go keeps 2 idle per host by default, so
		// each burst of more dialled, and shook hands, for the rest.
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: &Transport{Base: base, Limits: l}}
}

// Transport applies Limits (but Connect, which is the dialer's) to every
// round trip of Base.
type Transport struct {
	Base   http.RoundTripper
	Limits Limits
}

// RoundTrip sends req under the first-byte bound and hands back a body
// under the idle and size bounds. The request's own context still ends
// everything at once.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	host := req.URL.Host
	var first *time.Timer
	if d := t.Limits.FirstByte; d > 0 {
		first = time.AfterFunc(d, func() { cancel(&LimitError{Kind: KindFirstByte, After: d, Host: host}) })
	}
	resp, err := t.Base.RoundTrip(req.WithContext(ctx))
	if first != nil {
		first.Stop()
	}
	if err != nil {
		cause := context.Cause(ctx)
		cancel(nil)
		if le, ok := AsLimit(cause); ok {
			return nil, le
		}
		return nil, err
	}
	if le, ok := AsLimit(context.Cause(ctx)); ok {
		// The bound fired as the headers arrived: the body is void.
		resp.Body.Close()
		cancel(nil)
		return nil, le
	}
	b := &body{rc: resp.Body, ctx: ctx, cancel: cancel, limits: t.Limits, host: host}
	if d := t.Limits.Idle; d > 0 {
		b.idle = time.AfterFunc(d, func() { cancel(&LimitError{Kind: KindIdle, After: d, Host: host}) })
	}
	resp.Body = b
	return resp, nil
}

// body is a response body under the idle and size bounds. Breaking one
// cancels the request's context, which wakes a read blocked on the
// network; the read then reports the bound instead of "context canceled".
type body struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	limits Limits
	host   string
	idle   *time.Timer
	n      int64
	once   sync.Once
}

func (b *body) Read(p []byte) (int, error) {
	if max := b.limits.MaxBytes; max > 0 {
		if b.n >= max {
			return 0, b.fail(&LimitError{Kind: KindSize, Bytes: max, Host: b.host})
		}
		if room := max - b.n; int64(len(p)) > room+1 {
			// One byte past the cap is enough to know it was broken.
			p = p[:room+1]
		}
	}
	n, err := b.rc.Read(p)
	if n > 0 && b.idle != nil {
		b.idle.Reset(b.limits.Idle)
	}
	b.n += int64(n)
	if max := b.limits.MaxBytes; max > 0 && b.n > max {
		return n - int(b.n-max), b.fail(&LimitError{Kind: KindSize, Bytes: max, Host: b.host})
	}
	switch {
	case err == io.EOF:
		if b.idle != nil {
			b.idle.Stop() // all there: silence from now on is no stall
		}
	case err != nil:
		if le, ok := AsLimit(context.Cause(b.ctx)); ok {
			return n, le
		}
	}
	return n, err
}

func (b *body) fail(le *LimitError) error {
	b.cancel(le)
	return le
}

func (b *body) Close() error {
	var err error
	b.once.Do(func() {
		if b.idle != nil {
			b.idle.Stop()
		}
		err = b.rc.Close()
		b.cancel(nil)
	})
	return err
}
