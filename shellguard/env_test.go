package shellguard

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/secrets"
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
	env := SanitizedEnv(parent, nil, "/w", nil)
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
	if v, _ := LookupEnv(SanitizedEnv(parent, []string{"DATABASE_URL"}, "/w", nil), "DATABASE_URL"); v != "postgres://app:dbpass0123@db:5432/app" {
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
		env := SanitizedEnv([]string{name + "=" + val}, nil, "/w", nil)
		if isBaseName(name) {
			return
		}
		if _, ok := LookupEnv(env, name); ok && (spec.MatchString(name) || len(name) > 3 && name[:4] == "SSH_") {
			t.Fatalf("%s=%q reached the child", name, val)
		}
		if _, ok := LookupEnv(WithoutSecrets([]string{name + "=" + val}, nil), name); ok && (spec.MatchString(name) || len(name) > 3 && name[:4] == "SSH_") {
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
	got := WithoutSecrets([]string{"PATH=/bin", "LC_ALL=de_DE.UTF-8", "OPENAI_API_KEY=sk-x", "SSH_AUTH_SOCK=/s", "DATABASE_URL=postgres://u:pw0123@h/d", "LANG=C"}, nil)
	if len(got) != 3 || got[0] != "PATH=/bin" || got[1] != "LC_ALL=de_DE.UTF-8" || got[2] != "LANG=C" {
		t.Fatalf("WithoutSecrets = %q", got)
	}
}

// TestKnownSecretsNeverReachChildren: a secret the run knows (a provider
// key, a config's, the bus URL's password) is dropped from a child's
// environment whatever the variable is called and however plain its value
// looks, in either form (SanitizedEnv, WithoutSecrets), also when
// escaped the ways the Redactor knows; a base variable holding one gets its
// default. Only the agent's envAllowlist keeps such a variable.
func TestKnownSecretsNeverReachChildren(t *testing.T) {
	key := "plainword0123456789" // no secret shape: only knowing it tells
	known := secrets.NewRedactor(key, "pa ss/word&x")
	parent := []string{
		"FOO=" + key,
		"NOTES=the key is " + key + " today",
		"ESCAPED=" + url.QueryEscape("pa ss/word&x"),
		"HOME=/home/" + key,
		"EDITOR=vi", "OTHER=plain",
	}
	for name, env := range map[string][]string{
		"SanitizedEnv":   SanitizedEnv(parent, nil, "/w", known),
		"WithoutSecrets": WithoutSecrets(parent, known),
	} {
		for _, k := range []string{"FOO", "NOTES", "ESCAPED", "HOME"} {
			if v, ok := LookupEnv(env, k); ok {
				t.Errorf("%s: %s=%q reached the child", name, k, v)
			}
		}
		for _, k := range []string{"EDITOR", "OTHER"} {
			if _, ok := LookupEnv(env, k); !ok {
				t.Errorf("%s: %s was dropped, but holds no secret", name, k)
			}
		}
	}
	// Control: without the known secrets the same variables pass, so the
	// check is what drops them.
	if v, _ := LookupEnv(SanitizedEnv(parent, nil, "/w", nil), "FOO"); v != key {
		t.Fatalf("FOO without known secrets = %q: the shape check alone drops it, the test proves nothing", v)
	}
	if v, _ := LookupEnv(SanitizedEnv(parent, []string{"FOO"}, "/w", known), "FOO"); v != key {
		t.Errorf("allowlisted FOO = %q", v)
	}
}

// TestAutoEnvNoLazyFetch: an automatically approved git never fetches a
// partial clone's missing objects (a write into .git/objects and a
// request to the remote); a person's approval leaves git as configured.
func TestAutoEnvNoLazyFetch(t *testing.T) {
	base := []string{"PATH=/usr/bin", "GIT_NO_LAZY_FETCH=0"}
	if v, _ := LookupEnv(AutoEnv(base), "GIT_NO_LAZY_FETCH"); v != "1" {
		t.Errorf("AutoEnv: GIT_NO_LAZY_FETCH = %q, want 1 (the last value counts)", v)
	}
	if v, _ := LookupEnv(HardenEnv(base), "GIT_NO_LAZY_FETCH"); v != "0" {
		t.Errorf("HardenEnv changed GIT_NO_LAZY_FETCH to %q", v)
	}
}

// TestAutoEnvAbsoluteLocations: in an automatic approval's environment
// no variable that says where code or configuration comes from names the
// working directory, by a relative path or an empty list entry; other
// variables and absolute locations pass unchanged.
func TestAutoEnvAbsoluteLocations(t *testing.T) {
	parent := []string{
		"PATH=/usr/bin::bin", "LD_LIBRARY_PATH=/opt/x/lib:", "LD_PRELOAD=./evil.so /opt/ok.so", "LD_AUDIT=a.so",
		"HOME=./evilhome", "XDG_CONFIG_HOME=/home/u/.config", "GIT_EXEC_PATH=bin", "GIT_DIR=evilbare",
		"GIT_WORK_TREE=.", "GIT_CONFIG_GLOBAL=../x", "RIPGREP_CONFIG_PATH=.ripgreprc", "TMPDIR=tmp",
		"GNUPGHOME=g", "MAGIC=m.mgc", "GOPATH=/go:", "TERMINFO_DIRS=:/usr/share/terminfo", "NO_COLOR=1", "EDITOR=vi",
	}
	want := map[string]string{
		"PATH": "/usr/bin", "LD_LIBRARY_PATH": "/opt/x/lib", "LD_PRELOAD": "/opt/ok.so",
		"XDG_CONFIG_HOME": "/home/u/.config", "GOPATH": "/go", "TERMINFO_DIRS": "/usr/share/terminfo",
		"NO_COLOR": "1", "EDITOR": "vi",
	}
	env := AutoEnv(parent)
	for k, v := range want {
		if got, ok := LookupEnv(env, k); !ok || got != v {
			t.Errorf("%s = %q (set %v), want %q", k, got, ok, v)
		}
	}
	for _, k := range []string{"LD_AUDIT", "HOME", "GIT_EXEC_PATH", "GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG_GLOBAL", "RIPGREP_CONFIG_PATH", "TMPDIR", "GNUPGHOME", "MAGIC"} {
		if v, ok := LookupEnv(env, k); ok {
			t.Errorf("%s kept as %q", k, v)
		}
	}
	// The property, over every variable AutoEnv kept.
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		switch locationKind(name) {
		case "list":
			for _, e := range strings.FieldsFunc(val, func(r rune) bool { return r == ':' || r == ';' || r == ' ' }) {
				if !filepath.IsAbs(e) {
					t.Errorf("%s keeps the relative entry %q", name, e)
				}
			}
			if strings.HasPrefix(val, ":") || strings.HasSuffix(val, ":") || strings.Contains(val, "::") {
				t.Errorf("%s=%q keeps an empty entry (the working directory)", name, val)
			}
		case "one":
			if !filepath.IsAbs(val) {
				t.Errorf("%s=%q is relative", name, val)
			}
		}
	}
}

// TestAutoEnvLoaderIgnoresWorkingDirectory proves the loader case end to
// end: with a parent's LD_LIBRARY_PATH ending in a colon, a libc.so.6 in
// the working directory is what `cat` loads (it then fails for want of
// glibc's symbols, the sign it was loaded) unless AutoEnv drops the empty
// entry. It needs a C compiler.
func TestAutoEnvLoaderIgnoresWorkingDirectory(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	catPath, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "fake.c")
	if err := os.WriteFile(src, []byte("int jazz_fake_libc;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", filepath.Join(dir, "libc.so.6"), src).CombinedOutput(); err != nil {
		t.Skipf("cannot build a shared library: %v\n%s", err, out)
	}
	run := func(env []string) error {
		cmd := exec.Command(catPath, "/dev/null")
		cmd.Dir, cmd.Env = dir, env
		return cmd.Run()
	}
	parent := []string{"PATH=/usr/bin:/bin", "LD_LIBRARY_PATH=/nonexistent:"}
	if run(parent) == nil {
		t.Skip("this loader does not read an empty LD_LIBRARY_PATH entry as the working directory")
	}
	if err := run(AutoEnv(parent)); err != nil {
		t.Fatalf("under AutoEnv, cat still loaded the working directory's libc.so.6: %v", err)
	}
}
