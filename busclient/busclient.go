// Package busclient turns a user's connection settings (URL, credentials,
// TLS, from flags, the environment or the local `jazz bus serve`) into bus
// options, so every jazz client (a run, the approvals
// CLI) reaches a shared bus the same way and no secret rides in a URL.
package busclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/secrets"
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

// Resolved makes every file path of o (credentials, seed, CA, client
// certificate and key) absolute against start, the directory jazz was
// started in, once. The connection opens and the isolation hides these
// same values: a relative path resolved twice, against two directories
// (--cwd is not the process's), would hide one file and read another.
func (o Options) Resolved(start string) Options {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(start, *p)
		}
	}
	abs(&o.Creds)
	abs(&o.Nkey)
	abs(&o.CA)
	abs(&o.Cert)
	abs(&o.Key)
	return o
}

// SecretFiles are the files of o that hold a secret (credentials, seed,
// client key): what no program jazz starts may read.
func (o Options) SecretFiles() []string {
	var out []string
	for _, f := range []string{o.Creds, o.Nkey, o.Key} {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
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

// Redact hides any password or token in a URL (each of a comma list),
// so an error message never prints a secret: nats://user:pass@host
// reads nats://user:***@host, and nats://token@host (a user alone is a
// token to NATS) reads nats://***@host.
func Redact(raw string) string {
	parts := strings.Split(raw, ",")
	for i, p := range parts {
		parts[i] = secrets.URL(strings.TrimSpace(p))
	}
	return strings.Join(parts, ",")
}

// Client is o as the bus's client settings (the URL aside).
func (o Options) Client() bus.Client {
	name := o.Name
	if name == "" {
		name = "jazz"
	}
	return bus.Client{Name: name, Creds: o.Creds, NkeySeed: o.Nkey, CA: o.CA, TLSPin: o.TLSPin, Cert: o.Cert, Key: o.Key,
		InboxPrefix: o.InboxPrefix, ReconnectFor: o.ReconnectFor,
		OnDisconnect: o.OnDisconnect, OnReconnect: o.OnReconnect, OnClosed: o.OnClosed}
}

// Bus is o as options for bus.Start; it reports bad settings (both
// credential kinds, a missing file, a bad pin) before anything connects.
func (o Options) Bus() (bus.Options, error) {
	c := o.Client()
	if err := c.Check(); err != nil {
		return bus.Options{}, err
	}
	return bus.Options{URL: o.URL, Name: c.Name, Client: c, Redact: Redact}, nil
}

// Connect dials o.URL with o's credentials.
func Connect(ctx context.Context, o Options) (*bus.Bus, error) {
	if o.URL == "" {
		return nil, fmt.Errorf("no bus URL: pass --nats-url or set %s", EnvURL)
	}
	bo, err := o.Bus()
	if err != nil {
		return nil, err
	}
	return bus.Start(ctx, bo)
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
