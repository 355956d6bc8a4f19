package bus

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Client is how a client reaches and proves itself to an external server:
// credentials, TLS, inbox prefix, reconnect behaviour and connection-state
// hooks. The zero value is a plain connection with jazz's reconnect
// defaults.
type Client struct {
	// Name is the connection name shown by server monitoring; empty keeps
	// Options.Name.
	Name string
	// Creds is a NATS .creds file (user JWT + seed), for clusters with
	// accounts. At most one of Creds, NkeySeed and Nkey is set.
	Creds string
	// NkeySeed is an nkey user seed file (operator-less servers such as
	// `jazz bus serve`).
	NkeySeed string
	// Nkey signs the server's challenge with a key held in memory (the
	// bus server's own admin connection).
	Nkey *NkeyUser
	// CA verifies the server's certificate against this PEM file instead
	// of the system roots.
	CA string
	// TLSPin trusts exactly the server certificate whose SHA-256 is this
	// ("sha256:<64 hex digits>"), as printed by a self-signed `jazz bus
	// serve`; it replaces chain verification.
	TLSPin string
	// Cert and Key are a PEM client certificate and its key, for servers
	// that verify clients.
	Cert, Key string
	// InboxPrefix replaces _INBOX for replies and deliveries (a worker's
	// must be the only inboxes the server lets it read).
	InboxPrefix string
	// ReconnectFor is how long a lost connection keeps retrying before it
	// closes for good (default 2 minutes).
	ReconnectFor time.Duration
	// Handlers for connection state; each may be nil.
	OnDisconnect func(error)
	OnReconnect  func()
	OnClosed     func()
}

// UserKey is the nkey public key c proves itself with (of its seed, its
// .creds file or its in-memory key); "" for none or one unreadable. The
// server lets each identity write only what its permissions name, some
// of them by this key (its audit lines).
func (c Client) UserKey() string {
	u := c.User()
	if u == nil {
		return ""
	}
	return u.Public
}

// User is the nkey identity c proves itself with, able to sign (nil for
// none, or a seed or .creds file that cannot be read): what c says
// under its own key (an audit line) is signed with it, so a copy the
// server delivers elsewhere (a consumer's deliver subject) or a line
// written by anyone else is told apart from its own.
func (c Client) User() *NkeyUser {
	switch {
	case c.Nkey != nil:
		return c.Nkey
	case c.NkeySeed != "" || c.Creds != "":
		path := c.NkeySeed
		if path == "" {
			path = c.Creds
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		kp, err := nkeys.ParseDecoratedNKey(data)
		if err != nil {
			return nil
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return nil
		}
		return &NkeyUser{Public: pub, Sign: kp.Sign}
	}
	return nil
}

// NkeyUser is an nkey identity whose private half stays with Sign.
type NkeyUser struct {
	Public string
	Sign   func(nonce []byte) ([]byte, error)
}

// ErrRefused wraps the server's refusal of a client's credentials.
var ErrRefused = errors.New("the server refused these credentials")

// Check reports what is wrong with c (both credential kinds, a missing
// file, a bad pin, an unreadable certificate) without connecting, so a
// command can fail before it does any work.
func (c Client) Check() error {
	_, err := c.natsOptions("")
	return err
}

// NATSOptions are c as nats.go options, for tests that dial with nats.go
// themselves (to add an error handler, say); url only decides whether TLS
// is on for a tls:// server.
func (c Client) NATSOptions(url string) ([]nats.Option, error) { return c.natsOptions(url) }

// natsOptions are the nats.go options for c (the URL aside); url only
// decides whether TLS is on for a tls:// server.
func (c Client) natsOptions(url string) ([]nats.Option, error) {
	reconnectFor := c.ReconnectFor
	if reconnectFor <= 0 {
		reconnectFor = 2 * time.Minute
	}
	const wait = 250 * time.Millisecond
	opts := []nats.Option{
		nats.ReconnectWait(wait),
		nats.MaxReconnects(int(reconnectFor / wait)),
		nats.ReconnectJitter(50*time.Millisecond, 100*time.Millisecond),
		// Keep publishing into the reconnect buffer while the server is
		// away; what cannot wait fails and is retried by its owner.
		nats.ReconnectBufSize(8 << 20),
		nats.PingInterval(5 * time.Second),
		nats.MaxPingsOutstanding(3),
	}
	if c.Name != "" {
		opts = append(opts, nats.Name(c.Name))
	}
	kinds := 0
	for _, set := range []bool{c.Creds != "", c.NkeySeed != "", c.Nkey != nil} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds > 1:
		return nil, errors.New("pass either --creds or --nkey, not both")
	case c.Creds != "":
		if _, err := os.Stat(c.Creds); err != nil {
			return nil, fmt.Errorf("credentials file: %w", err)
		}
		opts = append(opts, nats.UserCredentials(c.Creds))
	case c.NkeySeed != "":
		opt, err := nats.NkeyOptionFromSeed(c.NkeySeed)
		if err != nil {
			return nil, fmt.Errorf("nkey seed file %s: %w", c.NkeySeed, err)
		}
		opts = append(opts, opt)
	case c.Nkey != nil:
		opts = append(opts, nats.Nkey(c.Nkey.Public, c.Nkey.Sign))
	}
	if c.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(c.InboxPrefix))
	}
	tlsCfg, err := c.tlsConfig(url)
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		opts = append(opts, nats.Secure(tlsCfg))
	}
	if c.OnDisconnect != nil {
		opts = append(opts, nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { c.OnDisconnect(err) }))
	}
	if c.OnReconnect != nil {
		opts = append(opts, nats.ReconnectHandler(func(*nats.Conn) { c.OnReconnect() }))
	}
	if c.OnClosed != nil {
		opts = append(opts, nats.ClosedHandler(func(*nats.Conn) { c.OnClosed() }))
	}
	return opts, nil
}

func (c Client) tlsConfig(url string) (*tls.Config, error) {
	if c.CA == "" && c.TLSPin == "" && c.Cert == "" && c.Key == "" && !strings.HasPrefix(url, "tls://") {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CA != "" {
		data, err := os.ReadFile(c.CA)
		if err != nil {
			return nil, fmt.Errorf("TLS CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("TLS CA %s holds no certificate", c.CA)
		}
		cfg.RootCAs = pool
	}
	if (c.Cert == "") != (c.Key == "") {
		return nil, errors.New("a TLS client certificate needs both --tls-cert and --tls-key")
	}
	if c.Cert != "" {
		cert, err := tls.LoadX509KeyPair(c.Cert, c.Key)
		if err != nil {
			return nil, fmt.Errorf("TLS client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if c.TLSPin != "" {
		pin := strings.ToLower(strings.TrimSpace(c.TLSPin))
		if !strings.HasPrefix(pin, "sha256:") || len(pin) != len("sha256:")+64 {
			return nil, fmt.Errorf("TLS pin %q: expected sha256:<64 hex digits>", c.TLSPin)
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

// describe words a failed connection for a person: a refusal of the
// credentials, and each way TLS fails, with the options that would mend
// it.
func describe(err error) error {
	var unknownCA x509.UnknownAuthorityError
	var host x509.HostnameError
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
		return fmt.Errorf("%w (%w)", ErrRefused, err)
	case errors.As(err, &unknownCA):
		return fmt.Errorf("the server's certificate is not signed by a CA this client trusts: pass --tls-ca FILE or --tls-pin sha256:… (%w)", err)
	case errors.As(err, &host):
		return fmt.Errorf("the server's certificate is not for this address (%w)", err)
	case errors.Is(err, nats.ErrSecureConnWanted):
		return fmt.Errorf("TLS was asked for but the server does not offer it (%w)", err)
	case errors.Is(err, nats.ErrSecureConnRequired):
		return fmt.Errorf("the server requires TLS: use a tls:// URL or pass --tls-ca (%w)", err)
	}
	// The server's TLS alerts reach the client as text only, and under
	// TLS 1.3 the client's handshake completes before the server judged
	// its certificate: the alert or a closed connection, by timing.
	for _, alert := range []string{"tls: certificate required", "tls: bad certificate", "tls: unknown certificate authority",
		"tls: certificate expired", "tls: unsupported certificate", "closed by remote after TLS handshake"} {
		if strings.Contains(err.Error(), alert) {
			return fmt.Errorf("the server wants a client certificate it trusts: pass --tls-cert FILE and --tls-key FILE (%w)", err)
		}
	}
	return err
}
