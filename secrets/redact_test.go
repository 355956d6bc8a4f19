package secrets_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/jazz-run/jazz/secrets"
)

func TestRedactorString(t *testing.T) {
	r := secrets.NewRedactor("sk-abcdef123456", "sk-abcdef123456-longer", "x", "  ", "pa<ss>&wd1")
	got := r.String("a sk-abcdef123456-longer b sk-abcdef123456 c x pa<ss>&wd1")
	want := "a [REDACTED] b [REDACTED] c x [REDACTED]"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	var nilR *secrets.Redactor
	if nilR.String("sk-abcdef123456") != "sk-abcdef123456" || nilR.JSON(json.RawMessage(`1`)) == nil {
		t.Fatal("a nil Redactor changes text")
	}
}

// Secrets are found however a result encodes them, and the JSON stays
// valid even when a secret is also a number.
func TestRedactorJSON(t *testing.T) {
	secret := `pa"ss<&>\wd/1`
	r := secrets.NewRedactor(secret, "12345678")
	doc := map[string]any{"content": "key=" + secret, "n": 12345678, "list": []any{"x" + secret}}
	raw, _ := json.Marshal(doc)
	out := r.JSON(raw)
	if !json.Valid(out) {
		t.Fatalf("invalid JSON after redaction: %s", out)
	}
	var back map[string]any
	_ = json.Unmarshal(out, &back)
	flat, _ := json.Marshal(back)
	if strings.Contains(string(flat), "wd/1") || strings.Contains(string(flat), "12345678") {
		t.Fatalf("secret survived: %s", out)
	}
	if back["content"] != "key=[REDACTED]" {
		t.Fatalf("content %q", back["content"])
	}
	// HTML-unescaped encoders write the secret as is.
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(doc)
	if out := r.JSON(json.RawMessage(b.String())); strings.Contains(string(out), `<&>`) {
		t.Fatalf("unescaped form survived: %s", out)
	}
}

func TestFromEnviron(t *testing.T) {
	// A path that exists is where a secret is, not the secret.
	xauth := filepath.Join(t.TempDir(), "xauth")
	if err := os.WriteFile(xauth, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got := secrets.FromEnviron([]string{
		"OPENAI_API_KEY=sk-envkey0123456789abcd",
		"OTEL_EXPORTER_OTLP_HEADERS=x-honeycomb-team=hc0123456789,Authorization=Bearer%20tok0123456789",
		"DATABASE_URL=postgres://u:dbpassword9@h/db",
		"MYSQL_PWD=mysqlpw123",
		"PATH=/usr/bin:/bin",
		"XAUTHORITY=" + xauth,
		"TOKENIZERS_PARALLELISM=false",
	})
	for _, w := range []string{"sk-envkey0123456789abcd", "hc0123456789", "tok0123456789", "dbpassword9", "mysqlpw123"} {
		if !contains(got, w) {
			t.Errorf("FromEnviron missed %q: %q", w, got)
		}
	}
	for _, n := range []string{"/usr/bin:/bin", xauth, "false"} {
		if contains(got, n) {
			t.Errorf("FromEnviron took %q, which is no secret", n)
		}
	}
}

func TestFromJSON(t *testing.T) {
	got := secrets.FromJSON([]byte(`{
		"llm": {"openai": {"api_key": "sk-cfg0123456789abcdef", "base_url": "https://api.example.com"}},
		"llmApiKeys": {"anthropic": "ant-key-0123456789"},
		"telemetry": {"otlp": {"headers": {"x-team": "team0123456"}}},
		"mcpServers": {"x": {"env": {"GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123"}}},
		"apiKeyEnv": "OPENAI_API_KEY",
		"note": "uses nats://bus:buspassword1@127.0.0.1:4222",
		"maxTokens": 123456789
	}`))
	for _, w := range []string{"sk-cfg0123456789abcdef", "ant-key-0123456789", "team0123456", "ghp_abcdefghijklmnopqrstuvwxyz0123", "buspassword1"} {
		if !contains(got, w) {
			t.Errorf("FromJSON missed %q: %q", w, got)
		}
	}
	for _, n := range []string{"https://api.example.com", "OPENAI_API_KEY", "123456789"} {
		if contains(got, n) {
			t.Errorf("FromJSON took %q", n)
		}
	}
}

// FromHome reads every small file of JAZZ_HOME, files added later
// included, and never blocks on a FIFO planted there.
func TestFromHome(t *testing.T) {
	home := t.TempDir()
	write(t, filepath.Join(home, "config.json"), `{"llm":{"openai":{"api_key":"sk-home0123456789abcdef"}}}`)
	write(t, filepath.Join(home, "agents", "a.json"), `{"config":{"llmApiKeys":{"openai":"agentkey0123456"}}}`)
	write(t, filepath.Join(home, "remote", "approver.creds"), "-----BEGIN USER NKEY SEED-----\nSUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY\n------END USER NKEY SEED------\n")
	write(t, filepath.Join(home, "history", "c.json"), `{"password":"not-scanned-history"}`)
	if err := syscall.Mkfifo(filepath.Join(home, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := secrets.FromHome(context.Background(), home)
	for _, w := range []string{"sk-home0123456789abcdef", "agentkey0123456", "SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY"} {
		if !contains(got, w) {
			t.Errorf("FromHome missed %q: %q", w, got)
		}
	}
	if contains(got, "not-scanned-history") {
		t.Errorf("FromHome scanned history")
	}
}

func TestCollectGuardsOnlyConfigFilesWithSecrets(t *testing.T) {
	dir := t.TempDir()
	withKey := filepath.Join(dir, "global.json")
	plain := filepath.Join(dir, "project.json")
	write(t, withKey, `{"llm":{"openai":{"api_key":"sk-file0123456789abcdef"}}}`)
	write(t, plain, `{"maxIterations":5}`)
	s := secrets.Collect(context.Background(), secrets.Sources{Files: []string{withKey, plain}, Headers: map[string]string{"authorization": "Bearer hdr0123456789"}})
	if got := s.Files(); len(got) != 1 || got[0] != withKey {
		t.Fatalf("guarded files %q, want only %s", got, withKey)
	}
	if out := s.Redact("a sk-file0123456789abcdef b hdr0123456789 c Bearer hdr0123456789"); strings.Contains(out, "0123456789") {
		t.Fatalf("redacted %q", out)
	}
	var none *secrets.Set
	if none.Redact("sk-file0123456789abcdef") != "sk-file0123456789abcdef" || none.Files() != nil {
		t.Fatal("a nil Set is not empty")
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Property: a value held under a secret-looking name is collected
// whatever its shape — all capitals like a variable name, digits, base64
// (a leading '/' included), a URL whose path or query carries the token —
// in the environment and in JSON alike. Only values that cannot be
// secrets are left: flag words, paths that exist, bare service URLs, and
// a variable name under a key that says it names one (apiKeyEnv).
func TestSecretsOfAnyShapeAreCollected(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabets := map[string]string{
		"capitals":        "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
		"capitals+digits": "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_",
		"base64":          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
		"hex":             "0123456789abcdef",
	}
	draw := func(alpha string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alpha[rng.IntN(len(alpha))]
		}
		return string(b)
	}
	var values []string
	for _, alpha := range alphabets {
		for range 50 {
			values = append(values, draw(alpha[:len(alpha)-1], 1)+draw(alpha, secrets.MinSecretLen-1+rng.IntN(40)))
		}
	}
	values = append(values, "/"+draw(alphabets["base64"], 30), "AKIAIOSFODNN7EXAMPLE", "GHPTOKENVALUE",
		"https://hooks.example.com/services/T0000/B0000/"+draw(alphabets["base64"][:62], 24),
		"https://api.example.com/v1?key="+draw(alphabets["hex"], 20),
		"https://api.example.com/v1#"+draw(alphabets["hex"], 20))
	for _, name := range []string{"SERVICE_TOKEN", "MY_API_KEY", "DB_PASSWORD", "x_secret"} {
		for _, v := range values {
			if got := secrets.FromEnviron([]string{name + "=" + v}); !contains(got, v) {
				t.Errorf("FromEnviron(%s=%q) missed it: %q", name, v, got)
			}
			doc, _ := json.Marshal(map[string]string{strings.ToLower(name): v})
			if got := secrets.FromJSON(doc); !contains(got, v) {
				t.Errorf("FromJSON(%s) missed it: %q", doc, got)
			}
		}
	}
	dir := t.TempDir()
	for _, v := range []string{"false", "enabled", dir, "https://api.example.com/v1", "https://api.example.com"} {
		if got := secrets.FromEnviron([]string{"SERVICE_TOKEN=" + v}); contains(got, v) {
			t.Errorf("FromEnviron took %q, which is no secret", v)
		}
	}
	if got := secrets.FromJSON([]byte(`{"apiKeyEnv":"OPENAI_API_KEY","token_env":"GITHUB_TOKEN"}`)); len(got) != 0 {
		t.Errorf("FromJSON took variable names under keys that name variables: %q", got)
	}
}

// TestCollectIsEveryPartOnItsOwn: Collect reads a config file in
// JAZZ_HOME once for both of its roles (a file of the home, a config file
// read) and walks its documents instead of marshalling them; what it
// knows is still exactly each source collected on its own, the way
// Collect first did it.
func TestCollectIsEveryPartOnItsOwn(t *testing.T) {
	home := t.TempDir()
	elsewhere := t.TempDir()
	global := filepath.Join(home, "config.json")
	project := filepath.Join(elsewhere, "config.json")
	plain := filepath.Join(elsewhere, "plain.json")
	keyFile := filepath.Join(elsewhere, "nkey")
	write(t, global, `{"llm":{"openai":{"api_key":"sk-global0123456789abcdef"}},"note":"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}`)
	write(t, filepath.Join(home, "agents", "a.json"), `{"id":"a","config":{"llmApiKeys":{"x":"agent-file-key-0123"}}}`)
	write(t, project, `{"web_search":{"apiKey":"project-search-key-0123"}}`)
	write(t, plain, `{"maxIterations":5}`)
	write(t, keyFile, "SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY\n")
	doc := map[string]any{"llm": map[string]any{"anthropic": map[string]string{"api_key": "doc-key-0123456789"}}, "Files": []string{global}}
	src := secrets.Sources{
		Environ:   []string{"OPENAI_API_KEY=sk-env0123456789abcdef", "PATH=/usr/bin"},
		Home:      home,
		Files:     []string{global, project, plain, filepath.Join(elsewhere, "missing.json")},
		KeyFiles:  []string{keyFile, ""},
		Documents: []any{doc, struct{ Token string }{"struct-token-0123456"}},
		Headers:   map[string]string{"authorization": "Bearer hdr0123456789"},
		Values:    []string{"known-value-0123456"},
	}
	got := secrets.Collect(context.Background(), src)

	// Each source on its own.
	vals := append([]string{}, src.Values...)
	vals = append(vals, secrets.FromEnviron(src.Environ)...)
	vals = append(vals, secrets.FromHome(context.Background(), home)...)
	vals = append(vals, secrets.FromHeaders(src.Headers)...)
	var guarded []string
	for _, f := range src.Files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if found := secrets.FromJSON(b); secrets.NewRedactor(found...).Len() > 0 {
			vals = append(vals, found...)
			guarded = append(guarded, f)
		}
	}
	b, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	vals = append(vals, secrets.FromJSON(b)...)
	guarded = append(guarded, keyFile)
	for _, d := range src.Documents {
		vals = append(vals, secrets.RoundTrip(d)...)
	}
	want := secrets.NewSet(vals, guarded...)

	if !slices.Equal(got.Files(), want.Files()) || !slices.Equal(got.Files(), []string{global, project, keyFile}) {
		t.Errorf("guarded %q, want %q", got.Files(), want.Files())
	}
	probe := strings.Join(vals, " | ")
	if g, w := got.Redact(probe), want.Redact(probe); g != w || got.Redactor().Len() != want.Redactor().Len() {
		t.Errorf("Collect redacts\n %q\nthe parts redact\n %q", g, w)
	}
	if got.Redact(probe) == probe {
		t.Error("nothing was redacted: the test compares nothing")
	}
}

// String skips text in which it finds no form of a secret; that must
// never change a result. Texts are built from pieces of the secrets'
// forms (so near misses and overlaps are common) and filler, for
// redactors below and above the scan limit.
func TestRedactorScanAgreesWithReplacer(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1, 3, 10, 40} {
		var vals []string
		for i := range n {
			vals = append(vals, fmt.Sprintf("sk-%d-%s", i, strings.Repeat(string(rune('a'+i%26)), 6+i%5))+`"<&>/ %`)
		}
		r := secrets.NewRedactor(vals...)
		pieces := []string{"x", " ", "\n", `"`, `\u003c`, "%22", "+", "sk-", "[REDACTED]"}
		for _, v := range vals {
			pieces = append(pieces, v, v[:len(v)/2], v[len(v)/2:], url.QueryEscape(v), url.PathEscape(v))
			if b, err := json.Marshal(v); err == nil {
				pieces = append(pieces, string(b[1:len(b)-1]))
			}
		}
		hits := 0
		for range 2000 {
			var b strings.Builder
			for range rng.IntN(12) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			s := b.String()
			got, want := r.String(s), r.ReplaceAll(s)
			if got != want {
				t.Fatalf("%d secrets: String(%q) = %q, the Replacer gives %q", n, s, got, want)
			}
			if want != s {
				hits++
			}
			raw, _ := json.Marshal(map[string]string{"content": s})
			if out := r.JSON(raw); string(out) != r.ReplaceAll(string(raw)) && json.Valid([]byte(r.ReplaceAll(string(raw)))) {
				t.Fatalf("%d secrets: JSON(%s) = %s, the Replacer gives %s", n, raw, out, r.ReplaceAll(string(raw)))
			}
		}
		if hits < 200 {
			t.Fatalf("%d secrets: only %d of 2000 texts held a secret; the test is not looking", n, hits)
		}
	}
}
