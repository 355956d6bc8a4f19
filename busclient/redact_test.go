package busclient_test

import (
	"testing"

	"github.com/jazz-run/jazz/busclient"
)

// TestRedact: a password or token never survives, whatever the URL's
// shape (parsable or not, one or a cluster list), and what is shown is
// readable (no URL escapes).
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"nats://user:s3cret@host:4222":                  "nats://user:***@host:4222",
		"nats://tok3n@host":                             "nats://***@host",
		"nats://host:4222":                              "nats://host:4222",
		"nats://a:p1@h1:4222, nats://b:p2@h2:4222":      "nats://a:***@h1:4222,nats://b:***@h2:4222",
		"nats://us er:pa%zz@host":                       "nats://***@host",
		"user:s3cret@host:4222":                         "***@host:4222",
		"tls://al%40ice:p%40ss@127.0.0.1:4443":          "tls://al%40ice:***@127.0.0.1:4443",
		"nats://user:with@at@host":                      "nats://user:***@host",
		"nats://user:" + "\x00odd@host":                 "nats://***@host",
		"nats://user:pass@[::1]:4222,nats://[::1]:4223": "nats://user:***@[::1]:4222,nats://[::1]:4223",
	} {
		if got := busclient.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
