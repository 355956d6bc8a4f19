// Package mcpclient talks to MCP servers (mcp.md) for one run or one CLI
// command: it starts a stdio server under childproc (scrubbed environment
// plus the server's declared env) or reaches a Streamable HTTP one,
// connects on first need, lists its tools once, forwards calls as they
// are, and ends every session and server process on Close.
//
// A server is a stranger's program: it may hang, die, or answer garbage.
// Every wait is bounded (start, initialize and listing by the server's
// connect timeout, a call by its context), and every failure comes back as
// an error that names the server and says what happened, never a hang.
package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jazz-run/jazz/childproc"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/isolate"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/shellguard"
)

// Bounds on what a server may send.
const (
	// MaxMessage bounds one JSON-RPC message from a stdio server.
	MaxMessage = 8 << 20
	// MaxTools is the most tools taken from one server's listing.
	MaxTools = 512
	// stderrTail is how much of a server's stderr is kept for messages.
	stderrTail = 4 << 10
	// stopGrace is how long a stdio server may take to exit after its
	// stdin closes, before it is signalled.
	stopGrace = time.Second
	// closeBound bounds closing one session.
	closeBound = 2 * time.Second
)

// ErrClosed is returned once the client has been closed.
var ErrClosed = errors.New("the MCP client is closed: the run is ending")

// Options are a client's surroundings.
type Options struct {
	// Environ is jazz's environment; a stdio server gets it scrubbed
	// (shell-safety.md §4) with its declared env on top. nil means none.
	Environ []string
	// Dir is where a stdio server starts whose definition names no Dir
	// (config.MCPServer.Dir, which LoadMCPServers sets).
	Dir string
	// Outside is where a server starts that must start outside the
	// project (config.MCPServer.Outside): a directory the project does not
	// control, which the server can see (not one of Hide). "" is the root
	// directory.
	Outside string
	// Version is jazz's version, sent as the client's.
	Version string
	// NoCgroup is childproc's (tests of the fallback).
	NoCgroup bool
	// Hide are the paths a stdio server must not see (JAZZ_HOME, the
	// run's key files), and Isolator how (childproc.Spec).
	Hide     []string
	Isolator *isolate.Isolator
	// Known are the run's secrets by value (secrets.Set.Redactor): a
	// variable holding one is not passed to a stdio server, whatever its
	// name. Its declared env is passed as declared.
	Known *secrets.Redactor
}

// Client holds the servers of one run. It is safe for concurrent use.
type Client struct {
	opts    Options
	mu      sync.Mutex
	servers map[string]*server
	closed  bool
}

// server is one server's connection state.
type server struct {
	def config.MCPServer
	// creds hides the definition's own credentials in whatever the
	// server sends back (credentials).
	creds []*secrets.Redactor
	// mu serialises connecting and guards the fields below.
	mu    sync.Mutex
	sess  *mcp.ClientSession
	proc  *childproc.Proc
	tools []*mcp.Tool
	// pinned is the first listing of the run, which the run was given
	// (Tools), and pins each definition by name: a call runs only while
	// the server's current listing has that tool exactly as pinned.
	pinned []*mcp.Tool
	pins   map[string]string
	// stale is set by the server's tools/list_changed: the next call
	// lists again before it is made.
	stale  atomic.Bool
	dead   chan struct{} // closed when sess ends
	stderr *tail
	closed bool
}

// New is a client for defs; it connects to nothing yet.
func New(defs []config.MCPServer, o Options) *Client {
	c := &Client{opts: o, servers: make(map[string]*server, len(defs))}
	for _, d := range defs {
		c.servers[d.Name] = &server{def: d, creds: credentials(d)}
	}
	return c
}

// Server returns the definition of name.
func (c *Client) Server(name string) (config.MCPServer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.servers[name]
	if !ok {
		return config.MCPServer{}, false
	}
	return s.def, true
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *Client) server(name string) (*server, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	s, ok := c.servers[name]
	if !ok {
		return nil, fmt.Errorf("no MCP server named %q is configured", name)
	}
	if s.def.Err != nil {
		return nil, s.def.Err
	}
	if !s.def.Enabled {
		return nil, fmt.Errorf("MCP server %s is disabled", name)
	}
	return s, nil
}

// Tools connects to name if it is not connected and returns its tools,
// listed once per connection.
func (c *Client) Tools(ctx context.Context, name string) ([]*mcp.Tool, error) {
	s, err := c.server(name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := c.connectLocked(ctx, s); err != nil {
		return nil, s.scrubErr(err)
	}
	out := make([]*mcp.Tool, len(s.pinned))
	for i, t := range s.pinned {
		out[i] = scrub(s, t)
	}
	return out, nil
}

// Call runs tool on server name with args exactly as given, connecting
// (or reconnecting, once, after the server died) first. A tool the server
// does not list is refused without a call.
//
// What comes back, result or error, has the definition's credentials
// hidden and an error's text bounded (scrubErr).
func (c *Client) Call(ctx context.Context, name, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	s, err := c.server(name)
	if err != nil {
		return nil, err
	}
	res, err := c.call(ctx, s, tool, args)
	if err != nil {
		return nil, s.scrubErr(err)
	}
	return scrub(s, res), nil
}

func (c *Client) call(ctx context.Context, s *server, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	name := s.def.Name
	s.mu.Lock()
	sess, err := c.connectLocked(ctx, s)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if err := c.relistLocked(ctx, s); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	err = s.checkPinLocked(tool)
	dead, proc, stderr := s.dead, s.proc, s.stderr
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err == nil {
		return res, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("MCP server %s did not answer %s in time: %w", name, tool, ctx.Err())
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	// Did the server go away under the call? Its session ends with it.
	// When the connection itself broke, it is going: its end is waited
	// for (bounded), so the error says how it ended, not "EOF", however
	// late a busy machine reaps it; a server that answered with an error
	// is alive and is given a moment only.
	wait := 50 * time.Millisecond
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		wait = 5 * time.Second
	}
	select {
	case <-dead:
		return nil, fmt.Errorf("MCP server %s %s during the call to %s%s", name, ended(proc), tool, stderr.suffix())
	case <-time.After(wait):
	}
	return nil, fmt.Errorf("MCP tool execution failed: %s: %v", name, err)
}

// relistLocked lists s's tools again when the server said they changed
// since the last listing. s.mu is held.
func (c *Client) relistLocked(ctx context.Context, s *server) error {
	if !s.stale.Swap(false) {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, s.def.ConnectTimeout)
	defer cancel()
	tools, err := listTools(lctx, s.sess)
	if err != nil {
		// Whatever it lists now is unknown: the next call asks again.
		s.stale.Store(true)
		return fmt.Errorf("MCP server %s said its tools changed and could not list them again: %v%s", s.def.Name, err, s.stderr.suffix())
	}
	s.tools = tools
	return nil
}

// checkPinLocked refuses a call of tool unless the server's current
// listing has it with the definition the run was given: a server that
// changes a tool's description, schema or annotations after the run
// listed it (on tools/list_changed, or across a restart), between the
// approval and the call even, does not get the call under the old
// definition's name. s.mu is held.
func (s *server) checkPinLocked(tool string) error {
	pin, known := s.pins[tool]
	if !known {
		return fmt.Errorf("Tool %s not found in MCP server %s. Available tools: %s", shownName(tool), s.def.Name, toolList(s.pinned))
	}
	for _, t := range s.tools {
		if t.Name != tool {
			continue
		}
		if d := definition(t); d != pin {
			return fmt.Errorf("MCP server %s changed the definition of its tool %s after the run listed it; the call was not made, since what the run was shown is not what the server now offers. A new run uses the new definition", s.def.Name, shownName(tool))
		}
		return nil
	}
	return fmt.Errorf("Tool %s not found in MCP server %s. Available tools: %s", shownName(tool), s.def.Name, toolList(s.tools))
}

// definition is what pins a tool: everything its listing says about it,
// encoded (json sorts map keys, so the same definition encodes the same).
func definition(t *mcp.Tool) string {
	b, err := json.Marshal(t)
	if err != nil {
		// Unencodable is no definition anything can match.
		return "unencodable: " + err.Error()
	}
	return string(b)
}

// maxListed bounds the tools a message names, and maxShownName the
// length of each: a server's names are its own, any size and content.
const (
	maxListed    = 30
	maxShownName = 80
)

// shownName is a server's tool name for a message: bounded, and quoted
// when it holds anything but letters, digits, _, - and . (a control
// character, a space, a confusable).
func shownName(n string) string {
	cut := n
	if len(cut) > maxShownName {
		cut = strings.ToValidUTF8(cut[:maxShownName], "") + "…"
	}
	for _, r := range n {
		if !(r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')) {
			return strconv.QuoteToASCII(cut)
		}
	}
	return cut
}

// toolList names tools for a message, sorted and bounded.
func toolList(ts []*mcp.Tool) string {
	names := make([]string, 0, len(ts))
	for _, t := range ts {
		names = append(names, shownName(t.Name))
	}
	slices.Sort(names)
	if len(names) > maxListed {
		return strings.Join(names[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(names)-maxListed)
	}
	return strings.Join(names, ", ")
}

// credentials are the values of d that are secret wherever they show up:
// every header value (and the token after "Bearer "), however short; the
// URL's credentials (user info, query values); each env value whose name
// or shape says secret. A server knows them (they were sent to it or set
// for it) and may echo them in a result, an error or a description: they
// are hidden there before anything reads it, whether or not the run's
// own secrets (Options.Known) hold them.
func credentials(d config.MCPServer) []*secrets.Redactor {
	exact := secrets.FromHeaders(d.Headers)
	if u, err := url.Parse(d.URL); err == nil && d.URL != "" {
		if p, has := u.User.Password(); has {
			exact = append(exact, p)
		}
		for _, vs := range u.Query() {
			exact = append(exact, vs...)
		}
	}
	long := secrets.Find(d.URL)
	for k, v := range d.Env {
		if secrets.SecretName(k) || secrets.SecretValue(v) {
			long = append(long, v)
		}
	}
	return []*secrets.Redactor{secrets.NewExactRedactor(exact...), secrets.NewRedactor(long...)}
}

// maxErrText bounds the text of an error that carries what a server
// said: its JSON-RPC error message is its own, any size.
const maxErrText = 2 << 10

// scrubErr is err with s's credentials hidden and its text bounded; the
// chain stays for errors.Is (ErrClosed).
func (s *server) scrubErr(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for _, r := range s.creds {
		clean = r.String(clean)
	}
	if len(clean) > maxErrText {
		clean = strings.ToValidUTF8(clean[:maxErrText], "") + fmt.Sprintf("… [%d more bytes of the MCP server's message not shown]", len(clean)-maxErrText)
	}
	if clean == msg {
		return err
	}
	return &scrubbedError{msg: clean, err: err}
}

// scrubbedError is an error whose text scrubErr rewrote.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrub is v (a result, a tool's definition) with s's credentials hidden
// wherever they are in it: encoded, redacted as JSON, decoded again, only
// when it holds one. What cannot be encoded or decoded again is dropped
// rather than passed on unredacted.
func scrub[T any](s *server, v *T) *T {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return new(T)
	}
	held := false
	for _, r := range s.creds {
		held = held || r.Contains(string(b))
	}
	if !held {
		return v
	}
	for _, r := range s.creds {
		b = r.JSON(b)
	}
	out := new(T)
	if json.Unmarshal(b, out) != nil {
		return new(T)
	}
	return out
}

// ended says how a server's session ended: its process's exit, when it
// has one.
func ended(p *childproc.Proc) string {
	if p == nil {
		return "closed the connection"
	}
	select {
	case <-p.Done():
		if e := p.Exit(); e != "" {
			return "exited (" + e + ")"
		}
		return "exited"
	case <-time.After(2 * time.Second):
		// Its process was not reaped in that time (a busy machine): it
		// may still be running.
		return "closed the connection"
	}
}

// connectLocked returns s's live session, connecting (bounded by the
// server's connect timeout) when it has none or its last one died. s.mu
// is held.
func (c *Client) connectLocked(ctx context.Context, s *server) (*mcp.ClientSession, error) {
	if s.closed {
		return nil, ErrClosed
	}
	if s.sess != nil {
		select {
		case <-s.dead:
			c.dropLocked(s)
		default:
			return s.sess, nil
		}
	}
	cctx, cancel := context.WithTimeout(ctx, s.def.ConnectTimeout)
	defer cancel()
	s.stale.Store(false)
	sess, proc, errTail, err := c.dial(cctx, s.def, func() { s.stale.Store(true) })
	if err != nil {
		if ctx.Err() == nil && cctx.Err() != nil {
			err = fmt.Errorf("MCP server %s did not finish connecting within %s (start, initialize and tools/list)%s", s.def.Name, s.def.ConnectTimeout, errTail.suffix())
		}
		return nil, err
	}
	tools, err := listTools(cctx, sess)
	if err != nil {
		closeSession(sess, proc)
		if ctx.Err() == nil && cctx.Err() != nil {
			return nil, fmt.Errorf("MCP server %s did not list its tools within %s%s", s.def.Name, s.def.ConnectTimeout, errTail.suffix())
		}
		return nil, fmt.Errorf("MCP server %s: list tools: %v%s", s.def.Name, err, errTail.suffix())
	}
	s.sess, s.proc, s.stderr, s.tools = sess, proc, errTail, tools
	if s.pins == nil {
		s.pinned, s.pins = tools, make(map[string]string, len(tools))
		for _, t := range tools {
			if _, dup := s.pins[t.Name]; dup {
				// Two definitions under one name: neither is the one.
				s.pins[t.Name] = "listed twice"
				continue
			}
			s.pins[t.Name] = definition(t)
		}
	}
	dead := make(chan struct{})
	s.dead = dead
	go func() { _ = sess.Wait(); close(dead) }()
	return sess, nil
}

// dropLocked forgets a dead session and stops what is left of it.
func (c *Client) dropLocked(s *server) {
	closeSession(s.sess, s.proc)
	s.sess, s.proc, s.dead = nil, nil, nil
}

// dial starts or reaches the server and runs the initialize handshake.
// changed is called on the server's tools/list_changed.
func (c *Client) dial(ctx context.Context, d config.MCPServer, changed func()) (*mcp.ClientSession, *childproc.Proc, *tail, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "jazz", Version: c.version()}, &mcp.ClientOptions{
		// No roots, sampling or elicitation: a server gets nothing from
		// jazz but the calls the gate let through.
		Capabilities:           &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed() },
	})
	client.AddReceivingMiddleware(onlyServed)
	errTail := &tail{}
	switch d.Transport {
	case config.MCPHTTP:
		t := &mcp.StreamableClientTransport{
			Endpoint:             d.URL,
			HTTPClient:           httpClient(d),
			MaxRetries:           -1,
			DisableStandaloneSSE: true,
			// One event holds one message: the bound a stdio line has.
			MaxEventSize: MaxMessage,
		}
		sess, err := client.Connect(ctx, t, nil)
		if err != nil {
			return nil, nil, errTail, fmt.Errorf("connect to MCP server %s at %s: %v", d.Name, d.URL, err)
		}
		return sess, nil, errTail, nil
	default:
		if d.Refused != nil {
			return nil, nil, errTail, fmt.Errorf("MCP server %s was not started: %w", d.Name, d.Refused)
		}
		dir := d.Dir
		switch {
		case d.Outside:
			dir = c.opts.Outside
			if dir == "" {
				dir = string(filepath.Separator)
			}
		case dir == "":
			dir = c.opts.Dir
		}
		env := shellguard.SanitizedEnv(c.opts.Environ, nil, dir, c.opts.Known)
		env = overlay(env, d.Env)
		if d.Outside {
			// Away from an untrusted project, nothing relative may lead
			// back into it once the server changes directory there.
			env = shellguard.AbsoluteLocations(env)
		}
		proc, err := childproc.Start(childproc.Spec{
			Argv: append([]string{d.Command}, d.Args...), Env: env, Dir: dir, Stderr: errTail, NoCgroup: c.opts.NoCgroup,
			Hide: c.opts.Hide, Isolator: c.opts.Isolator,
		})
		if err != nil {
			return nil, nil, errTail, fmt.Errorf("start MCP server %s: %v", d.Name, err)
		}
		guard := &lineGuard{r: proc.Stdout(), onBad: func() {
			// Fail closed: a server that breaks the framing is stopped,
			// so every call waiting on it ends now.
			go func() { _ = proc.Kill(context.Background()) }()
		}}
		errTail.guard = guard
		t := &mcp.IOTransport{Reader: guard, Writer: proc.Stdin(), MaxLineLength: MaxMessage}
		// Connect honours ctx, but a server that exits before it answers
		// is told faster by its exit than by the timeout.
		out := make(chan connected, 1)
		go func() {
			sess, err := client.Connect(ctx, t, nil)
			out <- connected{sess, err}
		}()
		var r connected
		select {
		case r = <-out:
		case <-proc.Done():
			if r = awaitConnect(out, errors.New("exited")); r.err != nil {
				closeSession(nil, proc)
				return nil, nil, errTail, fmt.Errorf("MCP server %s %s before it finished initializing%s", d.Name, ended(proc), errTail.suffix())
			}
		case <-ctx.Done():
			r = awaitConnect(out, ctx.Err())
		}
		if r.err != nil {
			if ctx.Err() != nil {
				closeSession(nil, proc)
				return nil, nil, errTail, r.err
			}
			// A closed connection is usually the server's exit: say so.
			t := time.NewTimer(500 * time.Millisecond)
			select {
			case <-proc.Done():
				t.Stop()
				closeSession(nil, proc)
				return nil, nil, errTail, fmt.Errorf("MCP server %s %s before it finished initializing%s", d.Name, ended(proc), errTail.suffix())
			case <-t.C:
			}
			closeSession(nil, proc)
			return nil, nil, errTail, fmt.Errorf("MCP server %s failed to initialize: %v%s", d.Name, r.err, errTail.suffix())
		}
		return r.sess, proc, errTail, nil
	}
}

// served says which messages a server may send jazz that reach the SDK's
// handlers: a ping (answered), a cancellation of a request it asked, a
// change of its tools (which makes the next call list them again).
// Every other request is refused and every other notification dropped
// (onlyServed), so what jazz does for a server is this list, not whatever
// the SDK happens to answer (it serves roots/list whatever the
// capabilities say), and a flood of log or progress notifications costs
// a comparison each.
func served(method string) bool {
	switch method {
	case "ping", "notifications/cancelled", "notifications/tools/list_changed":
		return true
	}
	return false
}

// onlyServed is the receiving middleware enforcing served.
func onlyServed(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if served(method) {
			return next(ctx, method, req)
		}
		if strings.HasPrefix(method, "notifications/") {
			return nil, nil
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "jazz does not serve " + method + " to MCP servers"}
	}
}

// connected is the outcome of one Connect.
type connected struct {
	sess *mcp.ClientSession
	err  error
}

// awaitConnect gives a Connect that should be ending a moment to report;
// past it, the outcome is err (the session, should it come later, is
// closed with the connection's end).
func awaitConnect(out <-chan connected, err error) connected {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case r := <-out:
		return r
	case <-t.C:
		return connected{err: err}
	}
}

func (c *Client) version() string {
	if c.opts.Version == "" {
		return "dev"
	}
	return c.opts.Version
}

// maxPages bounds the pages of one listing: a server that answers every
// page with another cursor (and no tools, so MaxTools never stops it)
// would otherwise be asked until the connect timeout.
const maxPages = 100

// listTools reads every page of the listing, at most MaxTools tools in at
// most maxPages pages.
func listTools(ctx context.Context, sess *mcp.ClientSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	params := &mcp.ListToolsParams{}
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("it listed more than %d pages of tools and was not asked for more", maxPages)
		}
		res, err := sess.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		out = append(out, res.Tools...)
		if len(out) >= MaxTools {
			return out[:MaxTools], nil
		}
		if res.NextCursor == "" {
			return out, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// closeSession ends a session and its process, bounded.
func closeSession(sess *mcp.ClientSession, proc *childproc.Proc) {
	if sess != nil {
		done := make(chan struct{})
		go func() { _ = sess.Close(); close(done) }()
		t := time.NewTimer(closeBound)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	if proc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = proc.Stop(ctx, stopGrace)
		cancel()
	}
}

// Close ends every session and stops every server process, in parallel,
// and returns when they are gone. Later calls fail with ErrClosed.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	servers := make([]*server, 0, len(c.servers))
	for _, s := range c.servers {
		servers = append(servers, s)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A call in flight holds s.mu only while connecting, which is
			// bounded by the connect timeout.
			s.mu.Lock()
			s.closed = true
			sess, proc := s.sess, s.proc
			s.sess, s.proc = nil, nil
			s.mu.Unlock()
			closeSession(sess, proc)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close MCP servers: %w", ctx.Err())
	}
}

// overlay sets each of vars in env, replacing an existing entry.
func overlay(env []string, vars map[string]string) []string {
	if len(vars) == 0 {
		return env
	}
	out := make([]string, 0, len(env)+len(vars))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, over := vars[name]; !over {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// httpClient reaches a Streamable HTTP server: its configured headers
// (a token, most often) go with requests to the configured origin only,
// and a redirect is followed only within that origin. The headers are
// added below the redirect logic, to every request the client sends, so
// without both rules a Location naming another host would get them.
func httpClient(d config.MCPServer) *http.Client {
	origin, _ := url.Parse(d.URL)
	return &http.Client{
		Transport: headerTransport{base: http.DefaultTransport, headers: d.Headers, origin: origin},
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if origin == nil || !sameOrigin(origin, r.URL) {
				return fmt.Errorf("MCP server %s redirected to %s, outside %s; not followed", d.Name, redacted(r.URL), redacted(origin))
			}
			if len(via) >= 5 {
				return fmt.Errorf("MCP server %s: stopped after %d redirects", d.Name, len(via))
			}
			return nil
		},
	}
}

// sameOrigin: same scheme, host (any case) and port.
func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		return map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// redacted is u without its userinfo and query, for messages.
func redacted(u *url.URL) string {
	if u == nil {
		return "the configured URL"
	}
	c := *u
	c.User, c.RawQuery, c.ForceQuery = nil, "", false
	return c.String()
}

// headerTransport adds a server's configured headers to every request
// to its origin.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	origin  *url.URL
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 && h.origin != nil && sameOrigin(h.origin, r.URL) {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	resp, err := h.base.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	// The SDK reads a JSON answer whole (io.ReadAll): bound it as a stdio
	// line is. An event stream is bounded per event (MaxEventSize), not
	// whole: it may carry many messages.
	if ct := strings.ToLower(resp.Header.Get("Content-Type")); !strings.HasPrefix(strings.TrimSpace(ct), "text/event-stream") {
		resp.Body = &boundedBody{r: resp.Body, left: MaxMessage}
	}
	return resp, nil
}

// errTooBig ends the body of an answer over MaxMessage bytes.
var errTooBig = fmt.Errorf("the MCP server's answer is over %d bytes; it was not read further", MaxMessage)

// boundedBody reads at most left bytes of a response body, and fails the
// read past them rather than cutting the message short in silence.
type boundedBody struct {
	r    io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more says whether the body ends exactly at the bound.
		var one [1]byte
		if n, err := b.r.Read(one[:]); n > 0 {
			return 0, errTooBig
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.r.Close() }

// tail keeps the last stderrTail bytes a server wrote to stderr, and
// what its stdout's guard saw.
type tail struct {
	mu    sync.Mutex
	buf   []byte
	guard *lineGuard
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > stderrTail {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-stderrTail:]...)
	}
	return len(p), nil
}

// suffix is what a message about the server adds: the protocol
// violation that stopped it, or the last line of its stderr, or "".
func (t *tail) suffix() string {
	if t == nil {
		return ""
	}
	if bad := t.guard.violation(); bad != "" {
		return fmt.Sprintf("; it broke the protocol: it sent %q, which is not a JSON-RPC message, so it was stopped", bad)
	}
	t.mu.Lock()
	s := strings.TrimSpace(string(t.buf))
	t.mu.Unlock()
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return "; its stderr says: " + s
}

// lineGuard passes a stdio server's output through, checking the
// framing: every line must start a JSON object or array. The SDK's reader
// stops at the first line that does not, leaving a handshake in progress
// to wait for its timeout; the guard stops the server instead (onBad), so
// whatever waits on it ends at once, and remembers what it sent.
type lineGuard struct {
	r       io.ReadCloser
	onBad   func()
	inLine  bool
	mu      sync.Mutex
	bad     []byte
	tripped bool
}

func (g *lineGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	for i := 0; i < n; i++ {
		c := p[i]
		if g.inLine {
			if c == '\n' {
				g.inLine = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[':
			g.inLine = true
			continue
		}
		g.trip(p[i:n])
		return i, errors.New("not a JSON-RPC message")
	}
	return n, err
}

// Close closes the server's stdout.
func (g *lineGuard) Close() error { return g.r.Close() }

func (g *lineGuard) trip(rest []byte) {
	g.mu.Lock()
	first := !g.tripped
	g.tripped = true
	if line, _, _ := bytes.Cut(rest, []byte("\n")); first {
		g.bad = append([]byte(nil), line[:min(len(line), 120)]...)
	}
	g.mu.Unlock()
	if first && g.onBad != nil {
		g.onBad()
	}
}

// violation is the start of the offending line, or "".
func (g *lineGuard) violation() string {
	if g == nil {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return string(g.bad)
}
