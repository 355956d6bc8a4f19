package bus

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/messages"
)

// Msg is one message as a subscriber sees it: its subject, its body
// decoded as T, and the trace context its NATS headers carried (nil when
// none), with the W3C keys in lower case whatever case the sender wrote.
type Msg[T any] struct {
	Subject string
	Value   T
	Trace   messages.Trace
	// Header is every NATS header the message carried (nil when none).
	Header Header
}

// Header is a message's NATS headers, keys as the sender wrote them.
type Header map[string][]string

// Get is the first value of key (exact case), "" when absent.
func (h Header) Get(key string) string {
	if vs := h[key]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// Raw is a message left undecoded, for a subscriber that reads several
// message types on one wildcard (and so in one order).
type Raw = Msg[[]byte]

// Subscription is one live subscription made by Subscribe or Forward.
type Subscription struct {
	sub *nats.Subscription
}

// Stop ends the subscription: no handler call starts after it returns.
// Stopping twice, or a nil subscription, is harmless.
func (s *Subscription) Stop() {
	if s == nil || s.sub == nil {
		return
	}
	_ = s.sub.Unsubscribe()
}

// SubOption tunes a subscription.
type SubOption func(*subOptions)

type subOptions struct {
	onPanic   func(reason string)
	unbounded bool
	flush     bool
}

// OnPanic is told the reason when a handler panics. The panic is always
// recovered (a panic on a NATS delivery goroutine would end the process);
// without OnPanic it is dropped with the message.
func OnPanic(fn func(reason string)) SubOption {
	return func(o *subOptions) { o.onPanic = fn }
}

// Unbounded lifts NATS's pending limits: a handler slower than the
// publisher makes the backlog grow instead of the server dropping
// messages as a slow consumer. For streams where a lost message is worse
// than memory held until the run ends (rendered events, requests).
func Unbounded() SubOption { return func(o *subOptions) { o.unbounded = true } }

// Registered waits until the server knows the subscription before
// Subscribe returns, so a message published right after (by another
// connection) cannot pass unseen.
func Registered() SubOption { return func(o *subOptions) { o.flush = true } }

// SubscribeRaw hands every message on subject (wildcards allowed) to fn,
// undecoded, one at a time in delivery order. It connects the bus (and
// starts the embedded server) if nothing did yet.
func SubscribeRaw(ctx context.Context, b *Bus, subject string, fn func(Raw), opts ...SubOption) (*Subscription, error) {
	var o subOptions
	for _, opt := range opts {
		opt(&o)
	}
	conn, err := b.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sub, err := conn.Subscribe(subject, func(m *nats.Msg) {
		defer func() {
			if v := recover(); v != nil && o.onPanic != nil {
				o.onPanic(fmt.Sprintf("%v\n%s", v, debug.Stack()))
			}
		}()
		fn(Raw{Subject: m.Subject, Value: m.Data, Trace: headerTrace(m.Header), Header: Header(m.Header)})
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	if o.unbounded {
		if err := sub.SetPendingLimits(-1, -1); err != nil {
			_ = sub.Unsubscribe()
			return nil, fmt.Errorf("subscribe %s: %w", subject, err)
		}
	}
	if o.flush {
		fctx, done := context.WithTimeout(ctx, dialTimeout(ctx))
		err := conn.FlushWithContext(fctx)
		done()
		if err != nil {
			_ = sub.Unsubscribe()
			return nil, fmt.Errorf("subscribe %s: %w", subject, err)
		}
	}
	return &Subscription{sub: sub}, nil
}

// Subscribe decodes every message on subject as T (messages.Decode) and
// hands it to fn in delivery order; a message that does not decode is
// dropped, since anyone on the bus may publish anything.
func Subscribe[T any](ctx context.Context, b *Bus, subject string, fn func(Msg[T]), opts ...SubOption) (*Subscription, error) {
	return SubscribeRaw(ctx, b, subject, func(r Raw) {
		v, err := messages.Decode[T](r.Value)
		if err != nil {
			return
		}
		fn(Msg[T]{Subject: r.Subject, Value: v, Trace: r.Trace, Header: r.Header})
	}, opts...)
}

// Sender delivers a message to an actor; *actor.Engine is one.
type Sender[P any] interface {
	Send(pid P, msg any)
}

// Forward decodes every message on subject as T and sends it to the actor
// pid through engine. adjust, when not nil, may rewrite the message with
// what the delivery knew (its header trace) before it is sent.
func Forward[T any, P any](ctx context.Context, b *Bus, subject string, engine Sender[P], pid P, adjust func(Msg[T]) T, opts ...SubOption) (*Subscription, error) {
	return Subscribe(ctx, b, subject, func(m Msg[T]) {
		v := m.Value
		if adjust != nil {
			v = adjust(m)
		}
		engine.Send(pid, v)
	}, opts...)
}

// headerTrace reads the W3C trace context out of NATS headers. Header
// keys are case-sensitive in NATS, so a peer that wrote "Traceparent"
// is matched too; the carrier always uses the lower-case names.
func headerTrace(h nats.Header) messages.Trace {
	if len(h) == 0 {
		return nil
	}
	var t messages.Trace
	for k, vs := range h {
		if len(vs) == 0 || vs[0] == "" {
			continue
		}
		switch key := strings.ToLower(k); key {
		case "traceparent", "tracestate":
			if t == nil {
				t = messages.Trace{}
			}
			if _, exact := h[key]; !exact || k == key {
				t[key] = vs[0]
			}
		}
	}
	return t
}
