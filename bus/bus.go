// Package bus owns the NATS connection every jazz actor publishes on: an
// embedded nats-server running in-process (no socket) by default, or an
// external server or cluster given by URL.
package bus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/messages"
)

// Options choose the server. An empty URL embeds one in-process.
type Options struct {
	// URL of an external NATS server or cluster (comma-separated).
	URL string
	// Name is the client connection name, shown by server monitoring.
	Name string
	// ReadyTimeout bounds waiting for the embedded server; default 5 s.
	ReadyTimeout time.Duration
	// Client is how to reach and authenticate to an external server (or
	// to InProcess): credentials, TLS, reconnects, state hooks.
	Client Client
	// InProcess connects to this server in-process (no socket) instead of
	// URL or an embedded one: the bus server's own admin connection, and
	// tests.
	InProcess *server.Server
	// Redact hides secrets in URL when it is printed; nil prints it as is.
	Redact func(url string) string
}

// Bus is one connection, plus the embedded server when it owns one. The
// embedded server starts on first use: a run nobody listens to (no
// --events, no human, no remote process) never pays for it, and since an
// in-process server that nobody subscribed to drops every message, not
// publishing is the same as publishing.
type Bus struct {
	opts Options

	mu   sync.Mutex
	srv  *server.Server
	conn *nats.Conn

	// hooks are the connection-state listeners; their own lock, since
	// they are called from nats.go's goroutines while mu may be held.
	hooks hooks
}

type hooks struct {
	mu        sync.Mutex
	next      int
	reconnect map[int]func()
	closed    map[int]func()
}

func (h *hooks) add(set *map[int]func(), fn func()) (remove func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if *set == nil {
		*set = map[int]func(){}
	}
	id := h.next
	h.next++
	(*set)[id] = fn
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(*set, id)
	}
}

func (h *hooks) call(set *map[int]func()) {
	h.mu.Lock()
	fns := make([]func(), 0, len(*set))
	for _, fn := range *set {
		fns = append(fns, fn)
	}
	h.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// watchState fans the connection's reconnect and close out to the bus's
// listeners, after whatever handler the connection was made with.
func (b *Bus) watchState(conn *nats.Conn) {
	prevUp, prevClosed := conn.Opts.ReconnectedCB, conn.Opts.ClosedCB
	conn.SetReconnectHandler(func(c *nats.Conn) {
		if prevUp != nil {
			prevUp(c)
		}
		b.hooks.call(&b.hooks.reconnect)
	})
	conn.SetClosedHandler(func(c *nats.Conn) {
		if prevClosed != nil {
			prevClosed(c)
		}
		b.hooks.call(&b.hooks.closed)
	})
}

// OnReconnect calls fn each time the connection comes back after a loss
// (on a nats.go goroutine: fn must not block); remove stops it.
func (b *Bus) OnReconnect(fn func()) (remove func()) { return b.hooks.add(&b.hooks.reconnect, fn) }

// OnClosed calls fn once the connection is closed for good (given up
// reconnecting, or closed); remove stops it.
func (b *Bus) OnClosed(fn func()) (remove func()) { return b.hooks.add(&b.hooks.closed, fn) }

// ErrNotReady is returned when the embedded server does not come up.
var ErrNotReady = errors.New("embedded NATS server did not become ready")

// New returns a bus that connects (and starts its embedded server) on
// first use.
func New(opts Options) *Bus {
	if opts.Name == "" {
		opts.Name = "jazz"
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 5 * time.Second
	}
	return &Bus{opts: opts}
}

// Start returns a bus that is connected now.
func Start(ctx context.Context, opts Options) (*Bus, error) {
	b := New(opts)
	if _, err := b.Connect(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// User is the nkey identity the bus's connection proves itself with
// (Client.User); nil on the embedded server and for other kinds of
// credentials.
func (b *Bus) User() *NkeyUser {
	if b == nil || b.opts.URL == "" && b.opts.InProcess == nil {
		return nil
	}
	return b.opts.Client.User()
}

// Connect returns the connection, connecting (and starting the embedded
// server) the first time.
func (b *Bus) Connect(ctx context.Context) (*nats.Conn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn != nil {
		return b.conn, nil
	}
	srv, conn, err := connect(ctx, b.opts)
	if err != nil {
		return nil, err
	}
	b.watchState(conn)
	b.srv, b.conn = srv, conn
	return conn, nil
}

func connect(ctx context.Context, opts Options) (*server.Server, *nats.Conn, error) {
	if opts.URL != "" {
		copts, err := opts.Client.natsOptions(opts.URL)
		if err != nil {
			return nil, nil, err
		}
		nopts := append([]nats.Option{nats.Name(opts.Name)}, copts...)
		conn, err := dial(ctx, opts.URL, append(nopts, nats.Timeout(dialTimeout(ctx)))...)
		if err != nil {
			shown := opts.URL
			if opts.Redact != nil {
				shown = opts.Redact(shown)
			}
			return nil, nil, fmt.Errorf("connect to NATS at %s: %w", shown, describe(err))
		}
		return nil, conn, nil
	}
	if opts.InProcess != nil {
		// No reconnects: a server in this process that went away is not
		// coming back on its own.
		copts, err := opts.Client.natsOptions("")
		if err != nil {
			return nil, nil, err
		}
		copts = append([]nats.Option{nats.InProcessServer(opts.InProcess), nats.Name(opts.Name)}, copts...)
		copts = append(copts, nats.NoReconnect())
		conn, err := dial(ctx, "", copts...)
		if err != nil {
			return nil, nil, fmt.Errorf("connect to the NATS server in this process: %w", describe(err))
		}
		return nil, conn, nil
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: opts.Name,
		DontListen: true, // in-process connections only: no port, no socket
		NoSigs:     true, // signals belong to jazz, not to the embedded server
		NoLog:      true,
		MaxPayload: 8 << 20,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("create embedded NATS server: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(opts.ReadyTimeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, nil, ErrNotReady
	}
	conn, err := nats.Connect("", nats.InProcessServer(srv), nats.Name(opts.Name))
	if err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, nil, fmt.Errorf("connect to embedded NATS server: %w", err)
	}
	return srv, conn, nil
}

// loginTries is how often a login is tried that a server may have
// refused only because it was reloading its users at that instant (an
// approver or worker added or removed): nats-server then refuses every
// client whose handshake is half done, a valid one too, as an
// authorization violation or by closing the socket. Between tries jazz
// waits 25 ms, then 100, then 400, so a key that is really refused is
// believed about half a second later.
const loginTries = 4

// dial is nats.Connect, tried again (within ctx) after a refusal a
// server's reload can cause.
func dial(ctx context.Context, url string, opts ...nats.Option) (*nats.Conn, error) {
	for try := 0; ; try++ {
		conn, err := nats.Connect(url, opts...)
		if err == nil || try == loginTries-1 || !refusedByAReload(err) {
			return conn, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(25 * time.Millisecond << (2 * try)):
		}
	}
}

// refusedByAReload reports an error a login overlapping the server's
// reload of its users ends with (besides a real refusal).
func refusedByAReload(err error) bool {
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)
}

func dialTimeout(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		if d := time.Until(dl); d > 0 {
			return d
		}
	}
	return 5 * time.Second
}

// Conn is the shared connection, nil before Connect; it is safe for
// concurrent use.
func (b *Bus) Conn() *nats.Conn {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conn
}

// Embedded reports whether the bus runs (or will run) its own server.
func (b *Bus) Embedded() bool { return b.opts.URL == "" && b.opts.InProcess == nil }

// Idle reports that nobody can be listening: the embedded server has not
// started (it starts for the first subscriber), so Publish would drop
// whatever it is given. Emitters ask before they build an event.
func (b *Bus) Idle() bool { return b.Embedded() && b.Conn() == nil }

// Publish encodes msg with the messages codec and publishes it, carrying
// the trace carrier (if any) in NATS headers too.
func (b *Bus) Publish(subject string, msg any, trace messages.Trace) error {
	return b.PublishSealed(subject, msg, trace, nil)
}

// PublishSealed is Publish with seal's header added (none when nil).
func (b *Bus) PublishSealed(subject string, msg any, trace messages.Trace, seal Seal) error {
	conn := b.Conn()
	if conn == nil {
		if b.Embedded() {
			return nil // nobody can be listening to a server not started yet (Idle)
		}
		var err error
		if conn, err = b.Connect(context.Background()); err != nil {
			return err
		}
	}
	data, err := messages.Encode(msg)
	if err != nil {
		return err
	}
	m := &nats.Msg{Subject: subject, Data: data}
	if len(trace) > 0 || seal != nil {
		m.Header = nats.Header{}
		for k, v := range trace {
			m.Header.Set(k, v)
		}
		if seal != nil {
			k, v := seal(subject, data)
			m.Header.Set(k, v)
		}
	}
	if err := fits(conn, "publish "+subject, len(data)+headerSize(m.Header)); err != nil {
		return err
	}
	if err := conn.PublishMsg(m); err != nil {
		return fmt.Errorf("publish %s: %w", subject, err)
	}
	return nil
}

// Flush waits until the server has seen everything published so far,
// at most until ctx ends (or 5 s, when ctx has no deadline).
func (b *Bus) Flush(ctx context.Context) error {
	conn := b.Conn()
	if conn == nil {
		return nil
	}
	fctx, done := context.WithTimeout(ctx, dialTimeout(ctx))
	defer done()
	if err := conn.FlushWithContext(fctx); err != nil {
		return fmt.Errorf("flush bus: %w", err)
	}
	return nil
}

// Close drains the connection (pending deliveries finish), then stops the
// embedded server and waits for it, so no goroutine is left behind.
func (b *Bus) Close(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	if b.conn != nil && !b.conn.IsClosed() {
		done := make(chan struct{})
		var once sync.Once
		remove := b.OnClosed(func() { once.Do(func() { close(done) }) })
		defer remove()
		if err := b.conn.Drain(); err != nil {
			b.conn.Close()
		} else {
			select {
			case <-done:
			case <-ctx.Done():
				b.conn.Close()
				errs = append(errs, fmt.Errorf("drain bus: %w", ctx.Err()))
			}
		}
	}
	if b.srv != nil {
		b.srv.Shutdown()
		b.srv.WaitForShutdown()
	}
	return errors.Join(errs...)
}

// Wrap makes a bus of a connection someone else dialled (tests, and
// test rigs that hold a *nats.Conn); Close drains it like any other.
func Wrap(conn *nats.Conn) *Bus {
	b := &Bus{opts: Options{Name: "jazz", URL: conn.ConnectedUrlRedacted()}, conn: conn}
	b.watchState(conn)
	return b
}

// CloseNow closes the connection at once, without draining, and stops the
// embedded server: for a command that is done and whose last publishes
// were already confirmed.
func (b *Bus) CloseNow() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn != nil {
		b.conn.Close()
	}
	if b.srv != nil {
		b.srv.Shutdown()
		b.srv.WaitForShutdown()
	}
}

// Connected reports whether the connection is up now (not closed, not
// between a loss and a reconnect).
func (b *Bus) Connected() bool {
	conn := b.Conn()
	return conn != nil && !conn.IsClosed() && conn.IsConnected()
}
