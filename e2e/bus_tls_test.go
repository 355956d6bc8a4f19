package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// tlsFiles are the PEM files of a CA, and of a client certificate it
// signed.
type tlsFiles struct{ ca, cert, key string }

// issue writes a certificate for name signed by parent (self-signed when
// parent is nil) and returns it with its key.
func issue(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (*x509.Certificate, *ecdsa.PrivateKey, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl.SerialNumber = serial
	tmpl.Subject = pkix.Name{CommonName: name}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	tlsMust(t, os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	tlsMust(t, os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return cert, key, certPath, keyPath
}

// tlsBus starts a NATS server (JetStream on) on 127.0.0.1 that speaks
// only TLS and wants a client certificate signed by its CA; it returns
// its URL and the client's files.
func tlsBus(t *testing.T) (string, tlsFiles) {
	t.Helper()
	dir := t.TempDir()
	ca, caKey, caPath, _ := issue(t, dir, "ca", nil, nil, &x509.Certificate{
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature})
	_, _, srvCert, srvKey := issue(t, dir, "server", ca, caKey, &x509.Certificate{
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	_, _, cliCert, cliKey := issue(t, dir, "client", ca, caKey, &x509.Certificate{
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})

	pair, err := tls.LoadX509KeyPair(srvCert, srvKey)
	tlsMust(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: filepath.Join(dir, "js"),
		TLS: true, TLSVerify: true, TLSTimeout: 5,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
	})
	tlsMust(t, err)
	go srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("TLS NATS server not ready")
	}
	return fmt.Sprintf("tls://127.0.0.1:%d", srv.Addr().(*net.TCPAddr).Port), tlsFiles{ca: caPath, cert: cliCert, key: cliKey}
}

// TestBusTLSClientCertificate: a server that wants a client certificate
// is reached by `jazz run` with --tls-ca/--tls-cert/--tls-key, or with
// their environment variables; without the certificate the run fails
// before any model call, saying what is missing. The other commands that
// reach a bus (workers, approvals) take the same flags.
func TestBusTLSClientCertificate(t *testing.T) {
	t.Parallel()
	url, files := tlsBus(t)
	e := hlNewEnv(t)
	e.replayAgent("tls", map[string]any{"turns": []any{map[string]any{"text": "over TLS"}}})
	run := func(env []string, extra ...string) hlResult {
		args := append([]string{"run", "--agent", "tls", "--json", "--nats-url", url}, extra...)
		return e.run(hlRunOpts{args: append(args, "hi"), env: env, timeout: 60 * time.Second})
	}

	flags := []string{"--tls-ca", files.ca, "--tls-cert", files.cert, "--tls-key", files.key}
	if r := run(nil, flags...); r.code != 0 || !strings.Contains(r.stdout, "over TLS") {
		t.Fatalf("with the flags: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	env := []string{"JAZZ_NATS_CA=" + files.ca, "JAZZ_NATS_CERT=" + files.cert, "JAZZ_NATS_KEY=" + files.key}
	if r := run(env); r.code != 0 || !strings.Contains(r.stdout, "over TLS") {
		t.Fatalf("with the environment: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// No client certificate: refused, and the message says which flags
	// would have done it.
	r := run(nil, "--tls-ca", files.ca)
	if r.code != 1 || !strings.Contains(r.stdout, "client certificate") || !strings.Contains(r.stdout, "--tls-cert") {
		t.Fatalf("without a client certificate: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if env := r.envelope(t); env.OK == nil || *env.OK || !strings.Contains(env.Error, "client certificate") {
		t.Fatalf("envelope: %+v", env)
	}
	// No CA: the server's certificate is not trusted.
	if r := run(nil, "--tls-cert", files.cert, "--tls-key", files.key); r.code != 1 || !strings.Contains(r.stdout, "--tls-ca") {
		t.Fatalf("without the CA: exit %d\n%s", r.code, r.stdout)
	}
	// Half a client certificate is refused as such.
	if r := run(nil, "--tls-ca", files.ca, "--tls-cert", files.cert); r.code != 1 || !strings.Contains(r.stdout, "both --tls-cert and --tls-key") {
		t.Fatalf("a certificate without its key: exit %d\n%s", r.code, r.stdout)
	}

	// The other bus commands share the flag set (bus init first: it makes
	// the approvals bucket that approvals list reads).
	for _, args := range [][]string{
		{"bus", "init"},
		{"workers", "--wait", "200"},
		{"approvals", "list"},
	} {
		ok := e.run(hlRunOpts{args: append(append(args, "--nats-url", url), flags...), timeout: 60 * time.Second})
		if ok.code != 0 {
			t.Errorf("%v with the TLS flags: exit %d\n%s", args, ok.code, ok.stderr)
		}
		bad := e.run(hlRunOpts{args: append(args, "--nats-url", url, "--tls-ca", files.ca), timeout: 60 * time.Second})
		if bad.code == 0 || !strings.Contains(bad.stderr, "--tls-cert") {
			t.Errorf("%v without a client certificate: exit %d\n%s", args, bad.code, bad.stderr)
		}
	}
}

func tlsMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
