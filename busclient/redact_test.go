package busclient_test

import (
	"testing"

	"github.com/jazz-run/jazz/busclient"
)

// TestRedact: each URL of a cluster list loses its password (secrets.URL
// words each one).
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"nats://a:p1@h1:4222, nats://b:p2@h2:4222":      "nats://a:***@h1:4222,nats://b:***@h2:4222",
		"nats://user:pass@[::1]:4222,nats://[::1]:4223": "nats://user:***@[::1]:4222,nats://[::1]:4223",
		"nats://tok3n@host":                             "nats://***@host",
	} {
		if got := busclient.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
