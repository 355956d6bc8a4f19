// Package busclient turns a user's connection settings (URL, credentials,
// TLS) into nats.go options, so every jazz client (a run, the approvals
// CLI) reaches a shared bus the same way and no secret rides in a URL.
package busclient

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/busserver"
)

// Options are how to reach and authenticate to a bus.
type Options struct {
	URL string
	// Creds is a NATS .creds file (user JWT + seed), for clusters with
	// accounts.
	Creds string
	// Nkey is an nkey user seed file (operator-less servers such as
	// `jazz bus serve`).
	Nkey string
	// CA verifies the server's certificate; TLSPin pins its SHA-256
	// fingerprint instead (a self-signed `jazz bus serve`).
	CA     string
	TLSPin string
	// Cert and Key are a client certificate, when the server wants one.
	Cert, Key string
	Name      string
	// InboxPrefix replaces _INBOX for replies and deliveries: a worker's
	// must be busserver.WorkerInboxPrefix of its key, the only inboxes the
	// server lets it read.
	InboxPrefix string
	// ReconnectFor is how long a lost connection keeps retrying before it
	// closes for good (default 2 minutes).
	ReconnectFor time.Duration
	// Handlers for connection state; each may be nil.
	OnDisconnect func(error)
	OnReconnect  func()
	OnClosed     func()
}

// Environment variables for each setting, so scripts need no flags and
// nothing secret is in a command line.
const (
	EnvURL   = "JAZZ_NATS_URL"
	EnvCreds = "JAZZ_NATS_CREDS"
	EnvNkey  = "JAZZ_NATS_NKEY"
	EnvCA    = "JAZZ_NATS_CA"
	EnvPin   = "JAZZ_NATS_TLS_PIN"
	EnvCert  = "JAZZ_NATS_CERT"
	EnvKey   = "JAZZ_NATS_KEY"
)

// WithEnv fills every unset field from the environment.
func (o Options) WithEnv(getenv func(string) string) Options {
	set := func(dst *string, env string) {
		if *dst == "" {
			*dst = strings.TrimSpace(getenv(env))
		}
	}
	set(&o.URL, EnvURL)
	set(&o.Creds, EnvCreds)
	set(&o.Nkey, EnvNkey)
	set(&o.CA, EnvCA)
	set(&o.TLSPin, EnvPin)
	set(&o.Cert, EnvCert)
	set(&o.Key, EnvKey)
	return o
}

// WithLocal, when no URL was given, fills in the bus `jazz bus serve`
// runs under home: its URL and certificate pin, and identity as the seed
// file (a role's or an approver's) unless credentials were given. It is
// an error when no local bus was ever served.
func (o Options) WithLocal(home, identity string) (Options, error) {
	if o.URL != "" {
		return o, nil // someone else's server: only what was given
	}
	info, err := busserver.ReadInfo(home)
	if errors.Is(err, os.ErrNotExist) {
		return o, fmt.Errorf("no bus to connect to: start one with `jazz bus serve`, or pass --nats-url (or set %s)", EnvURL)
	}
	if err != nil {
		return o, err
	}
	o.URL = info.URL
	if o.TLSPin == "" && o.CA == "" {
		o.TLSPin = info.TLSPin
	}
	if o.Creds == "" && o.Nkey == "" && identity != "" {
		o.Nkey = identity
	}
	return o, nil
}

// Redact hides any user, password or token in a URL (each of a comma
// list), so an error message never prints a secret.
func Redact(raw string) string {
	parts := strings.Split(raw, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		if err != nil || u.User == nil {
			if at := strings.LastIndex(p, "@"); at >= 0 {
				parts[i] = "[redacted]@" + p[at+1:]
			}
			continue
		}
		u.User = url.User("[redacted]")
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}

// NATSOptions are the nats.go options for o (the URL aside).
func (o Options) NATSOptions() ([]nats.Option, error) {
	name := o.Name
	if name == "" {
		name = "jazz"
	}
	reconnectFor := o.ReconnectFor
	if reconnectFor <= 0 {
		reconnectFor = 2 * time.Minute
	}
	const wait = 250 * time.Millisecond
	opts := []nats.Option{
		nats.Name(name),
		nats.ReconnectWait(wait),
		nats.MaxReconnects(int(reconnectFor / wait)),
		nats.ReconnectJitter(50*time.Millisecond, 100*time.Millisecond),
		// Keep publishing into the reconnect buffer while the server is
		// away; what cannot wait fails and is retried by its owner.
		nats.ReconnectBufSize(8 << 20),
		nats.PingInterval(5 * time.Second),
		nats.MaxPingsOutstanding(3),
	}
	switch {
	case o.Creds != "" && o.Nkey != "":
		return nil, errors.New("pass either --creds or --nkey, not both")
	case o.Creds != "":
		if _, err := os.Stat(o.Creds); err != nil {
			return nil, fmt.Errorf("credentials file: %w", err)
		}
		opts = append(opts, nats.UserCredentials(o.Creds))
	case o.Nkey != "":
		opt, err := nats.NkeyOptionFromSeed(o.Nkey)
		if err != nil {
			return nil, fmt.Errorf("nkey seed file %s: %w", o.Nkey, err)
		}
		opts = append(opts, opt)
	}
	if o.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(o.InboxPrefix))
	}
	tlsOpt, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}
	if tlsOpt != nil {
		opts = append(opts, nats.Secure(tlsOpt))
	}
	if o.OnDisconnect != nil {
		opts = append(opts, nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { o.OnDisconnect(err) }))
	}
	if o.OnReconnect != nil {
		opts = append(opts, nats.ReconnectHandler(func(*nats.Conn) { o.OnReconnect() }))
	}
	if o.OnClosed != nil {
		opts = append(opts, nats.ClosedHandler(func(*nats.Conn) { o.OnClosed() }))
	}
	return opts, nil
}

func (o Options) tlsConfig() (*tls.Config, error) {
	if o.CA == "" && o.TLSPin == "" && o.Cert == "" && !strings.HasPrefix(o.URL, "tls://") {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CA != "" {
		data, err := os.ReadFile(o.CA)
		if err != nil {
			return nil, fmt.Errorf("TLS CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("TLS CA %s holds no certificate", o.CA)
		}
		cfg.RootCAs = pool
	}
	if o.Cert != "" || o.Key != "" {
		c, err := tls.LoadX509KeyPair(o.Cert, o.Key)
		if err != nil {
			return nil, fmt.Errorf("TLS client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	if o.TLSPin != "" {
		pin := strings.ToLower(strings.TrimSpace(o.TLSPin))
		if !strings.HasPrefix(pin, "sha256:") || len(pin) != len("sha256:")+64 {
			return nil, fmt.Errorf("TLS pin %q: expected sha256:<64 hex digits>", o.TLSPin)
		}
		// The pin replaces chain verification: the certificate is
		// self-signed, and it is trusted because its hash is the one the
		// server printed, not because of who signed it.
		cfg.InsecureSkipVerify = true
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("the server sent no certificate")
			}
			sum := sha256.Sum256(raw[0])
			if got := "sha256:" + hex.EncodeToString(sum[:]); got != pin {
				return fmt.Errorf("the server's certificate is %s, not the pinned %s", got, pin)
			}
			return nil
		}
	}
	return cfg, nil
}

// Connect dials o.URL with o's credentials.
func Connect(ctx context.Context, o Options) (*nats.Conn, error) {
	if o.URL == "" {
		return nil, fmt.Errorf("no bus URL: pass --nats-url or set %s", EnvURL)
	}
	opts, err := o.NATSOptions()
	if err != nil {
		return nil, err
	}
	timeout := 5 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		if d := time.Until(dl); d > 0 && d < timeout {
			timeout = d
		}
	}
	opts = append(opts, nats.Timeout(timeout))
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", Redact(o.URL), describe(err))
	}
	return nc, nil
}

// describe words the server's refusals for a person.
func describe(err error) error {
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
		return fmt.Errorf("the server refused these credentials (%w)", err)
	}
	return err
}

// Signer is the key a person signs decisions with: the seed of --nkey or
// of --creds.
func (o Options) Signer() (nkeys.KeyPair, error) {
	path := o.Nkey
	if path == "" {
		path = o.Creds
	}
	if path == "" {
		return nil, errors.New("no identity to sign with: pass --as NAME, --nkey FILE or --creds FILE")
	}
	return approvals.LoadSigner(path)
}
