package busserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"time"

	"github.com/jazz-run/jazz/approvals"
)

// IsLoopback reports whether host names only this machine; anything else
// needs TLS.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Fingerprint is the pin clients check: SHA-256 of the leaf certificate.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Paths of the generated certificate.
func tlsPaths(home string) (cert, key string) {
	dir := filepath.Join(home, approvals.BusDir, "tls")
	return filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
}

// loadOrCreateCert returns the user's certificate when given, else the one
// generated on an earlier start, else a new self-signed one for host.
func loadOrCreateCert(home, host, certFile, keyFile string) (tls.Certificate, string, error) {
	if certFile != "" || keyFile != "" {
		if certFile == "" || keyFile == "" {
			return tls.Certificate{}, "", errors.New("--tls-cert and --tls-key go together")
		}
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return tls.Certificate{}, "", fmt.Errorf("load TLS certificate: %w", err)
		}
		return c, certFile, nil
	}
	cp, kp := tlsPaths(home)
	if c, err := tls.LoadX509KeyPair(cp, kp); err == nil && certCovers(c, host) {
		return c, cp, nil
	}
	certPEM, keyPEM, err := selfSigned(host)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	if err := approvals.WriteSecret(kp, keyPEM); err != nil {
		return tls.Certificate{}, "", err
	}
	if err := approvals.WriteSecret(cp, certPEM); err != nil {
		return tls.Certificate{}, "", err
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("generated TLS certificate: %w", err)
	}
	return c, cp, nil
}

func certCovers(c tls.Certificate, host string) bool {
	if len(c.Certificate) == 0 {
		return false
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil || time.Now().After(leaf.NotAfter.Add(-24*time.Hour)) {
		return false
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		return true
	}
	return leaf.VerifyHostname(host) == nil
}

func selfSigned(host string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate TLS key: %w", err)
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "jazz bus"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(5, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	} else if host != "" && ip == nil {
		tmpl.DNSNames = append(tmpl.DNSNames, host)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create TLS certificate: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode TLS key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}
