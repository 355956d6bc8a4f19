package secrets_test

import (
	"testing"

	"github.com/jazz-run/jazz/secrets"
)

// TestURL: a password or token never survives, whatever the URL's shape
// (parsable or not), and what is shown is readable (no URL escapes).
func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"nats://user:s3cret@host:4222":         "nats://user:***@host:4222",
		"nats://tok3n@host":                    "nats://***@host",
		"nats://host:4222":                     "nats://host:4222",
		"nats://us er:pa%zz@host":              "nats://***@host",
		"user:s3cret@host:4222":                "***@host:4222",
		"tls://al%40ice:p%40ss@127.0.0.1:4443": "tls://al%40ice:***@127.0.0.1:4443",
		"nats://user:with@at@host":             "nats://user:***@host",
		"nats://user:" + "\x00odd@host":        "nats://***@host",
		"https://u:pw@[::1":                    "https://***@[::1",
	} {
		if got := secrets.URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}
