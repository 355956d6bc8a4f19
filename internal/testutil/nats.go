// Package testutil holds what many packages' tests need: a real NATS
// server in-process, started the way nats-server's own tests start one,
// and a probe actor whose expectations are bound by a deadline.
package testutil

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// NATSOptions shape the server StartNATS runs.
type NATSOptions struct {
	// Listen opens a loopback port (Port -1: a free one), for clients in
	// other processes or that dial a URL; without it the server has no
	// socket at all (DontListen) and Conn connects in-process.
	Listen bool
	// JetStream turns JetStream on, its store in the test's temp dir.
	JetStream bool
	// Configure, when set, adjusts the options last (auth, accounts).
	Configure func(*server.Options)
}

// NATS is a running test server.
type NATS struct {
	Server *server.Server
	// URL is the client URL; empty without Listen.
	URL string
}

// readyTimeout bounds the wait for the server to accept connections.
const readyTimeout = 10 * time.Second

// StartNATS runs a real NATS server for the test and shuts it down (and
// waits for that) in the test's cleanup.
func StartNATS(t testing.TB, o NATSOptions) *NATS {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true, DontListen: !o.Listen}
	if o.JetStream {
		opts.JetStream, opts.StoreDir = true, t.TempDir()
	}
	if o.Configure != nil {
		o.Configure(opts)
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("create NATS server: %v", err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(readyTimeout) {
		t.Fatalf("NATS server not ready within %s", readyTimeout)
	}
	n := &NATS{Server: s}
	if o.Listen {
		n.URL = s.ClientURL()
	}
	return n
}

// Conn is a client connection to n (in-process without Listen), closed
// in the test's cleanup.
func (n *NATS) Conn(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	url := n.URL
	if url == "" {
		opts = append(opts, nats.InProcessServer(n.Server))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("connect to the test NATS server: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}
