package secrets

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// prefilterSeeds are values near every pattern's edge: each literal in
// every case, split, with the folding letters (the Kelvin sign, the long
// s), and real-looking credentials.
var prefilterSeeds = []string{
	"postgres://app:hunter2secret@db:5432/x", "https://abcdef0123456789@o1.ingest.sentry.io/1", "a://b@c",
	"Authorization=Bearer%20tok-abcdef123", "authorization=Basic dXNlcjpwYXNz", "x-api-key=k1k2k3k4k5,other=1",
	"BEARER abcdefgh", "Token+abcdefgh", "DIGEST%20abcdefgh", "apikey  abcdefgh", "Secret: hunter22", "PWD=abcdefg",
	"passwd:\"abcdefgh\"", "{cookie=abcdefghij", "Credential = abcdefgh", "API-KEY=abcdefgh", "api_key: abcdefgh",
	"to\u212aen=abcdefgh", "\u017fecret=abcdefgh", "bearer\u00a0abcdefgh", "Bearer abcdefgh\u212a",
	"use sk-proj-abcdefghijklmnop1234 here", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "gho_abcdefghijklmnopqrst",
	"github_pat_abcdefghijklmnopqrstuv", "glpat-abcdefghijklmnopqrst", "npm_abcdefghijklmnopqrstuvwxyz0123",
	"hf_abcdefghijklmnopqrstuvwxyz0123", "gsk_abcdefghijklmnopqrstuvwxyz0123", "xai-abcdefghijklmnopqrstuvwxyz0123",
	"xoxb-123456789012-abcdefghij", "AKIAIOSFODNN7EXAMPLE", "ASIAIOSFODNN7EXAMPLE", "AIzaabcdefghijklmnopqrstuvwxyz012345678",
	"sk_live_abcdefghijklmnop", "rk_test_abcdefghijklmnop", "eyJabcdefghij.eyJabcdefghij.sig",
	"SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY",
	"-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----",
	"/usr/local/bin:/usr/bin", "https://example.com/path?q=1", "en_US.UTF-8", "task-abcdefghijklmnopqrstuvwx", "", "=",
}

func checkPrefilter(t *testing.T, v string) {
	t.Helper()
	if got, want := find(v, true), find(v, false); !slices.Equal(got, want) {
		t.Fatalf("Find(%q) = %q with the prefilter, %q from the regexps alone", v, got, want)
	}
}

// TestPrefilterIsExact: Find with its prefilter gives exactly what every
// regexp run over the value gives, for the seeds and for values built at
// random from the patterns' literals, their case variants and filler.
func TestPrefilterIsExact(t *testing.T) {
	for _, s := range prefilterSeeds {
		checkPrefilter(t, s)
	}
	parts := []string{"sk-", "gh", "p_", "github_pat_", "glpat-", "npm_", "hf_", "gsk_", "xai-", "xox", "b-", "AKIA", "AIza",
		"sk_live_", "k_test_", "eyJ", ".", "S", "U", "-----BEGIN ", "PRIVATE KEY", "-----", "-----END ", "://", "@",
		"bearer", "BeArEr", "basic", "token", "TOKEN", "apikey", "api-key", "authorization", "secret", "password", "passwd",
		"pwd", "cookie", "credential", "\u212a", "\u017f", "=", ":", " ", "%20", "+", "\"", ",", ";", "{", "\n", "é",
		"abcdefgh", "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789", "x", "_"}
	rng := rand.New(rand.NewPCG(11, 6))
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			p := parts[rng.IntN(len(parts))]
			if rng.IntN(4) == 0 {
				p = strings.ToUpper(p)
			}
			b.WriteString(p)
		}
		checkPrefilter(t, b.String())
	}
}

// FuzzFindPrefilter: the same property on whatever the fuzzer makes.
func FuzzFindPrefilter(f *testing.F) {
	for _, s := range prefilterSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) { checkPrefilter(t, v) })
}

func BenchmarkFindPlain(b *testing.B) {
	for b.Loop() {
		for _, v := range []string{"/usr/local/bin:/usr/bin:/bin", "en_US.UTF-8", "/home/user", "xterm-256color", "gpt-4o-mini"} {
			_ = Find(v)
		}
	}
}
