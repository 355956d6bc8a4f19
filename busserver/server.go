// Package busserver runs the NATS server a team's runs and approvers
// share (`jazz bus serve`): an embedded nats-server with JetStream, its
// store in JAZZ_HOME, on 127.0.0.1 by default and behind TLS anywhere
// else, with one nkey identity per role and subject permissions the
// server enforces.
package busserver

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/workstore"
)

// DefaultPort is where `jazz bus serve` listens unless told otherwise.
const DefaultPort = 4242

// Options configure one server.
type Options struct {
	// Home is JAZZ_HOME: identities, store and server.json live under
	// Home/bus.
	Home string
	// Host defaults to 127.0.0.1; any non-loopback host requires TLS.
	Host string
	// Port defaults to DefaultPort; -1 picks a free one.
	Port int
	// TLS forces TLS on a loopback address too.
	TLS bool
	// TLSCert and TLSKey are the user's certificate; without them a
	// self-signed one is generated and its fingerprint published.
	TLSCert, TLSKey string
	// Reload is how often approvers.json is re-read (default 1 s).
	Reload time.Duration
	// Logf receives the server's notices; nil keeps it quiet.
	Logf func(format string, args ...any)
}

// Info is what clients need to reach the server; `jazz bus serve` writes
// it to JAZZ_HOME/bus/server.json.
type Info struct {
	URL string `json:"url"`
	// TLSPin is the SHA-256 fingerprint of the server's certificate.
	TLSPin string `json:"tlsPin,omitempty"`
	// TLSCert is the certificate file (a CA for clients that prefer it).
	TLSCert string `json:"tlsCert,omitempty"`
	PID     int    `json:"pid"`
}

// InfoPath is JAZZ_HOME/bus/server.json.
func InfoPath(home string) string { return filepath.Join(home, approvals.BusDir, "server.json") }

// ReadInfo reads server.json.
func ReadInfo(home string) (Info, error) {
	var in Info
	data, err := os.ReadFile(InfoPath(home))
	if err != nil {
		return in, err
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return in, fmt.Errorf("%s: %w", InfoPath(home), err)
	}
	return in, nil
}

// Server is a running bus.
type Server struct {
	srv      *server.Server
	opts     server.Options
	info     Info
	roles    map[string]string
	adminPub string
	admin    nkeys.KeyPair
	cancel   context.CancelFunc
	done     chan struct{}
}

// Start brings the server up, creates the approvals bucket and the audit
// stream, writes server.json, and keeps the approver list current.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Home == "" {
		return nil, errors.New("bus serve: no JAZZ_HOME")
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.Reload <= 0 {
		o.Reload = time.Second
	}
	roles, admin, adminPub, err := serverKeys(o.Home)
	if err != nil {
		return nil, err
	}
	approvers, err := approvals.ReadApproversFile(o.Home)
	if err != nil {
		return nil, err
	}
	workers, err := ReadWorkersFile(o.Home)
	if err != nil {
		return nil, err
	}
	storeDir := filepath.Join(o.Home, approvals.BusDir, "jetstream")
	if err := os.MkdirAll(storeDir, 0o700); err != nil {
		return nil, fmt.Errorf("create store %s: %w", storeDir, err)
	}
	sopts := serverOptions("jazz-bus", o.Host, o.Port, storeDir, o.Logf == nil, users(roles, approvers, workers, adminPub))
	// A client that vanished is noticed within seconds.
	sopts.PingInterval, sopts.MaxPingsOut = 5*time.Second, 3
	info := Info{PID: os.Getpid()}
	scheme := "nats"
	if o.TLS || o.TLSCert != "" || !IsLoopback(o.Host) {
		cert, certPath, err := loadOrCreateCert(o.Home, o.Host, o.TLSCert, o.TLSKey)
		if err != nil {
			return nil, err
		}
		sopts.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		sopts.TLS = true
		sopts.TLSTimeout = 5
		info.TLSPin = Fingerprint(cert.Certificate[0])
		info.TLSCert = certPath
		scheme = "tls"
	}
	srv, err := server.NewServer(&sopts)
	if err != nil {
		return nil, fmt.Errorf("create NATS server: %w", err)
	}
	if o.Logf != nil {
		srv.SetLoggerV2(logger{o.Logf}, false, false, false)
	}
	srv.Start()
	if !srv.ReadyForConnections(15 * time.Second) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("the NATS server did not start on %s:%d (is the port in use? pass --port)", o.Host, o.Port)
	}
	addr, ok := srv.Addr().(*net.TCPAddr)
	if !ok {
		srv.Shutdown()
		return nil, errors.New("the NATS server has no TCP address")
	}
	host := o.Host
	if host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	info.URL = scheme + "://" + net.JoinHostPort(host, strconv.Itoa(addr.Port))
	s := &Server{srv: srv, opts: sopts, info: info, roles: roles, adminPub: adminPub, admin: admin, done: make(chan struct{})}
	if err := s.ensureAssets(ctx, PoolLeases(workers)); err != nil {
		s.shutdown()
		return nil, err
	}
	data, _ := json.MarshalIndent(info, "", "  ")
	if err := approvals.WriteSecret(InfoPath(o.Home), append(data, '\n')); err != nil {
		s.shutdown()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.watchApprovers(rctx, o.Home, identities{approvers, workers}, o.Reload, o.Logf)
	return s, nil
}

// ensureAssets creates the approvals bucket, the audit stream and the
// worker pools' streams, bucket and consumers (pools) through an
// in-process admin connection.
func (s *Server) ensureAssets(ctx context.Context, pools map[string]time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return ensureAssets(cctx, s.srv, s.adminPub, s.admin, 1, pools)
}

// serverKeys are the keys a bus server starts with: the role keys under
// home (made the first time) and an admin key that lives only in this
// process.
func serverKeys(home string) (roles map[string]string, admin nkeys.KeyPair, adminPub string, err error) {
	if roles, err = ensureRoleKeys(home); err != nil {
		return nil, nil, "", err
	}
	if admin, err = nkeys.CreateUser(); err != nil {
		return nil, nil, "", fmt.Errorf("create admin key: %w", err)
	}
	adminPub, _ = admin.PublicKey()
	return roles, admin, adminPub, nil
}

// serverOptions are what every jazz bus server (one, or a cluster's
// node) runs with: JetStream stored under store, jazz's signals left
// alone, 8 MB payloads, nkey users only.
func serverOptions(name, host string, port int, store string, quiet bool, nkeys []*server.NkeyUser) server.Options {
	return server.Options{
		ServerName: name,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   store,
		NoSigs:     true, // signals belong to jazz
		NoLog:      quiet,
		MaxPayload: 8 << 20,
		Nkeys:      nkeys,
	}
}

// ensureAssets creates every bucket and stream jazz needs (replicas
// copies each), and the consumers of pools, through an admin connection
// to srv.
func ensureAssets(ctx context.Context, srv *server.Server, adminPub string, admin nkeys.KeyPair, replicas int, pools map[string]time.Duration) error {
	b, err := adminBus(ctx, srv, adminPub, admin)
	if err != nil {
		return err
	}
	defer b.CloseNow()
	if _, err := approvals.OpenStore(ctx, b, true); err != nil {
		return err
	}
	if err := approvals.Harden(ctx, b); err != nil {
		return err
	}
	if err := workstore.Ensure(ctx, b, replicas); err != nil {
		return err
	}
	return workstore.EnsurePools(ctx, b, pools)
}

// ensurePools creates or updates the consumers of pools through an
// admin connection to srv.
func ensurePools(ctx context.Context, srv *server.Server, adminPub string, admin nkeys.KeyPair, pools map[string]time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, err := adminBus(ctx, srv, adminPub, admin)
	if err != nil {
		return err
	}
	defer b.CloseNow()
	return workstore.EnsurePools(ctx, b, pools)
}

// adminBus is an in-process connection to srv as the admin key, which
// has every permission and exists only in this process.
func adminBus(ctx context.Context, srv *server.Server, adminPub string, admin nkeys.KeyPair) (*bus.Bus, error) {
	return bus.Start(ctx, bus.Options{InProcess: srv, Name: "jazz-bus-admin",
		Client: bus.Client{Nkey: &bus.NkeyUser{Public: adminPub, Sign: admin.Sign}}})
}

// identities are the people and workers JAZZ_HOME lets in.
type identities struct {
	approvers []approvals.Approver
	workers   []Worker
}

func readIdentities(home string) (identities, error) {
	a, err := approvals.ReadApproversFile(home)
	if err != nil {
		return identities{}, err
	}
	if _, err := approvals.NewRegistry(a); err != nil {
		return identities{}, err
	}
	w, err := ReadWorkersFile(home)
	if err != nil {
		return identities{}, err
	}
	return identities{a, w}, nil
}

// AdminBus is an in-process connection with every permission (for
// setup and tests); the admin key exists only in this process.
func (s *Server) AdminBus(ctx context.Context) (*bus.Bus, error) {
	return adminBus(ctx, s.srv, s.adminPub, s.admin)
}

// watchApprovers reloads the server's users when approvers.json or
// workers.json changes, so `jazz bus add-approver` and `jazz bus
// add-worker` take effect without a restart.
func (s *Server) watchApprovers(ctx context.Context, home string, last identities, every time.Duration, logf func(string, ...any)) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		list, err := readIdentities(home)
		if err != nil {
			if logf != nil {
				logf("approvers not reloaded: %v", err)
			}
			continue
		}
		if reflect.DeepEqual(list, last) {
			continue
		}
		// The pools' consumers first: a worker let in finds its pool.
		if err := ensurePools(ctx, s.srv, s.adminPub, s.admin, PoolLeases(list.workers)); err != nil {
			if logf != nil {
				logf("workers not reloaded: their pools: %v", err)
			}
			continue
		}
		next := s.opts
		next.Nkeys = users(s.roles, list.approvers, list.workers, s.adminPub)
		if err := s.srv.ReloadOptions(&next); err != nil {
			if logf != nil {
				logf("approvers not reloaded: %v", err)
			}
			continue
		}
		s.opts, last = next, list
		if logf != nil {
			logf("approvers reloaded: %d, workers: %d", len(list.approvers), len(list.workers))
		}
	}
}

// Info is how to reach the server.
func (s *Server) Info() Info { return s.info }

// ClientURL is the server's URL.
func (s *Server) ClientURL() string { return s.info.URL }

// Close stops the server and waits for it.
func (s *Server) Close() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	s.shutdown()
}

func (s *Server) shutdown() {
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
}

type logger struct{ f func(string, ...any) }

func (l logger) Noticef(format string, v ...any) { l.f(format, v...) }
func (l logger) Warnf(format string, v ...any)   { l.f("warning: "+format, v...) }
func (l logger) Fatalf(format string, v ...any)  { l.f("fatal: "+format, v...) }
func (l logger) Errorf(format string, v ...any)  { l.f("error: "+format, v...) }
func (l logger) Debugf(string, ...any)           {}
func (l logger) Tracef(string, ...any)           {}
