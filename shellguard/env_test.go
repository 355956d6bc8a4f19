package shellguard

import (
	"regexp"
	"testing"
)

// The scrub hides variables by what their values look like as well as
// by name: none of these names matches the spec's rule.
func TestSanitizedEnvHidesSecretValues(t *testing.T) {
	parent := []string{
		"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20otlp-token-0123",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS=x-honeycomb-team=hc0123456789",
		"DATABASE_URL=postgres://app:dbpass0123@db:5432/app",
		"REDIS_URL=redis://:redispass99@cache:6379",
		"SENTRY_DSN=https://abcdef0123456789@o1.ingest.sentry.io/1",
		"MYSQL_PWD=mysqlpw123",
		"SMTP_PASS=smtppass99",
		"PGPASSFILE=/home/u/.pgpass",
		"SOME_VAR=sk-proj-abcdefghijklmnop1234",
		"CI_NOTE=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
		"LEGACY=AKIAIOSFODNN7EXAMPLE",
		"BOT=xoxb-123456789012-abcdefghij",
		"DEPLOY=-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
		"CURL_OPTS=--header Authorization: Bearer tok-0123456789",
		"EDITOR=vi", "GOPATH=/go", "HTTP_PROXY=http://proxy:3128", "OLDPWD=/prev",
	}
	env := SanitizedEnv(parent, nil, "/w")
	for _, k := range []string{
		"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "DATABASE_URL", "REDIS_URL", "SENTRY_DSN",
		"MYSQL_PWD", "SMTP_PASS", "PGPASSFILE", "SOME_VAR", "CI_NOTE", "LEGACY", "BOT", "DEPLOY", "CURL_OPTS",
	} {
		if v, ok := LookupEnv(env, k); ok {
			t.Errorf("%s leaked: %q", k, v)
		}
	}
	for _, k := range []string{"EDITOR", "GOPATH", "HTTP_PROXY", "OLDPWD"} {
		if _, ok := LookupEnv(env, k); !ok {
			t.Errorf("%s was hidden, but holds no secret", k)
		}
	}
	// The allowlist still un-hides a variable the user chose.
	if v, _ := LookupEnv(SanitizedEnv(parent, []string{"DATABASE_URL"}, "/w"), "DATABASE_URL"); v != "postgres://app:dbpass0123@db:5432/app" {
		t.Errorf("allowlisted DATABASE_URL = %q", v)
	}
}

// FuzzSanitizedEnvFloor: whatever the value, a name the spec's rule
// matches never reaches a child unless allowlisted, and SSH_ never does.
func FuzzSanitizedEnvFloor(f *testing.F) {
	spec := regexp.MustCompile(`(?i)API|KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL|AUTH`)
	for _, s := range [][2]string{{"X_API", "1"}, {"my_key", "v"}, {"SSH_AGENT_PID", "7"}, {"Auth_Thing", ""}, {"PLAIN", "x"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, val string) {
		if name == "" || regexp.MustCompile(`[=\x00]`).MatchString(name) {
			return
		}
		env := SanitizedEnv([]string{name + "=" + val}, nil, "/w")
		if isBaseName(name) {
			return
		}
		if _, ok := LookupEnv(env, name); ok && (spec.MatchString(name) || len(name) > 3 && name[:4] == "SSH_") {
			t.Fatalf("%s=%q reached the child", name, val)
		}
		if _, ok := LookupEnv(WithoutSecrets([]string{name + "=" + val}), name); ok && (spec.MatchString(name) || len(name) > 3 && name[:4] == "SSH_") {
			t.Fatalf("WithoutSecrets kept %s=%q", name, val)
		}
	})
}

func isBaseName(n string) bool {
	switch n {
	case "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "PWD", "TMPDIR", "XDG_RUNTIME_DIR", "GIT_PAGER", "GIT_TERMINAL_PROMPT":
		return true
	}
	return false
}

func TestWithoutSecrets(t *testing.T) {
	got := WithoutSecrets([]string{"PATH=/bin", "LC_ALL=de_DE.UTF-8", "OPENAI_API_KEY=sk-x", "SSH_AUTH_SOCK=/s", "DATABASE_URL=postgres://u:pw0123@h/d", "LANG=C"})
	if len(got) != 3 || got[0] != "PATH=/bin" || got[1] != "LC_ALL=de_DE.UTF-8" || got[2] != "LANG=C" {
		t.Fatalf("WithoutSecrets = %q", got)
	}
}
