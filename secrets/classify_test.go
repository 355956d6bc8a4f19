package secrets_test

import (
	"regexp"
	"slices"
	"testing"

	"github.com/jazz-run/jazz/secrets"
)

// specName is shell-safety.md §4's rule: the floor SecretName may widen
// but never narrow.
var specName = regexp.MustCompile(`(?i)API|KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL|AUTH`)

func TestSecretName(t *testing.T) {
	for _, n := range []string{
		"OPENAI_API_KEY", "GITHUB_TOKEN", "aws_secret_access_key", "DB_PASSWORD", "GOOGLE_APPLICATION_CREDENTIALS",
		"XAUTHORITY", "MYSQL_PWD", "SMTP_PASS", "PGPASSFILE", "GPG_PASSPHRASE", "OTEL_EXPORTER_OTLP_HEADERS",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "SESSION_COOKIE", "SSH_PRIVATE", "SENTRY_DSN", "NATS_CREDS", "NKEY_SEED",
		"JWT", "BEARER", "WEBHOOK_SIGNATURE", "llmApiKeys", "api_key", "headers",
	} {
		if !secrets.SecretName(n) {
			t.Errorf("SecretName(%q) = false", n)
		}
	}
	for _, n := range []string{"PATH", "HOME", "PWD", "OLDPWD", "LANG", "TERM", "EDITOR", "GOPATH", "USER", "SHELL", "model", "baseUrl"} {
		if secrets.SecretName(n) {
			t.Errorf("SecretName(%q) = true", n)
		}
	}
}

// FuzzSecretNameFloor: every name the spec hides stays hidden.
func FuzzSecretNameFloor(f *testing.F) {
	for _, s := range []string{"X_API", "keyring", "MY_SeCrEt", "tok", "TOKEN_2", "passwordless", "Credential", "oauth"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if specName.MatchString(name) && !secrets.SecretName(name) {
			t.Fatalf("%q matches the spec's rule but SecretName says no", name)
		}
	})
}

func TestFind(t *testing.T) {
	tests := []struct {
		value string
		want  []string
	}{
		{"postgres://app:hunter2secret@db:5432/x", []string{"hunter2secret"}},
		{"postgres://app:p%40ss%2Fword@db/x", []string{"p@ss/word", "p%40ss%2Fword"}},
		{"https://abcdef0123456789@o1.ingest.sentry.io/1", []string{"abcdef0123456789"}},
		{"Authorization=Bearer%20tok-abcdef123", []string{"tok-abcdef123"}},
		{"authorization=Basic dXNlcjpwYXNz", []string{"dXNlcjpwYXNz"}},
		{"x-api-key=k1k2k3k4k5,other=1", []string{"k1k2k3k4k5"}},
		{"use sk-proj-abcdefghijklmnop1234 here", []string{"sk-proj-abcdefghijklmnop1234"}},
		{"ghp_abcdefghijklmnopqrstuvwxyz0123456789", []string{"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}},
		{"xoxb-123456789012-abcdefghij", []string{"xoxb-123456789012-abcdefghij"}},
		{"AKIAIOSFODNN7EXAMPLE", []string{"AKIAIOSFODNN7EXAMPLE"}},
		{"SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY", []string{"SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY"}},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----", []string{"-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----"}},
		// A URL whose path is its credential, under any name.
		{"https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/abcdefghijkl0123456789wx", []string{"https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/abcdefghijkl0123456789wx"}},
		{"post to https://discord.com/api/webhooks/1234567890/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 now", []string{"https://discord.com/api/webhooks/1234567890/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"}},
		{"https://docs.example.com/guides/getting-started-with-the-runtime", nil},
		{"https://example.com/issues/123456789012345678901234", nil},
		{"https://api.openai.com/v1", nil},
		{"/usr/local/bin:/usr/bin", nil},
		{"https://example.com/path?q=1", nil},
		{"en_US.UTF-8", nil},
		{"task-abcdefghijklmnopqrstuvwx", nil},
	}
	for _, tt := range tests {
		got := secrets.Find(tt.value)
		for _, w := range tt.want {
			if !slices.Contains(got, w) {
				t.Errorf("Find(%q) = %q, want it to hold %q", tt.value, got, w)
			}
		}
		if tt.want == nil && len(got) > 0 {
			t.Errorf("Find(%q) = %q, want nothing", tt.value, got)
		}
		if secrets.SecretValue(tt.value) != (tt.want != nil) {
			t.Errorf("SecretValue(%q) = %v", tt.value, !(tt.want != nil))
		}
	}
}
