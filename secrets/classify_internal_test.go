package secrets

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// nameSeeds are names at the words' edges: each word in mixed case, cut
// short, as a suffix or not (_PWD), and with the folding letters.
var nameSeeds = []string{
	"OPENAI_API_KEY", "api", "ApI_kEy", "AP", "PWD", "OLDPWD", "MYSQL_PWD", "mysql_pwd", "_PWD_X", "_pwd\n", "X_PWD ",
	"PASSWD", "passwordless", "CRED", "crEdentials", "SEED", "seeds", "JWT", "jw", "BEARER", "SIGNATURE", "signatur",
	"DSN", "dsn_url", "COOKIE", "PRIVATE", "HEADERS", "AUTH", "OAUTH", "TOKEN", "to\u212aen", "\u017fecret", "\u212aEY",
	"PATH", "HOME", "", "_", "A", "Z9_", "9A", "a", "AbC", "ABC-D", "ÄBC", "A\x00",
}

func checkName(t *testing.T, name string) {
	t.Helper()
	if got, want := SecretName(name), secretNameRe().MatchString(name); got != want {
		t.Fatalf("SecretName(%q) = %v, the regexp says %v", name, got, want)
	}
}

// TestSecretNameWords: SecretName's word search answers as secretNameRe
// does, for the seeds and for names built at
// random from the words, their case variants and filler.
func TestSecretNameWords(t *testing.T) {
	for _, s := range nameSeeds {
		checkName(t, s)
	}
	parts := []string{"api", "key", "secret", "token", "password", "credential", "auth", "pass", "_pwd", "pwd", "header",
		"cookie", "private", "dsn", "cred", "seed", "jwt", "bearer", "signature", "_", "x", "9", "-", " ", "\n",
		"\u212a", "\u017f", "é", "PATH", "HOME", "ap", "ke", "secre", "toke", "passwor", "cre", "see", "jw", "beare"}
	rng := rand.New(rand.NewPCG(4, 11))
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(5) {
			p := parts[rng.IntN(len(parts))]
			switch rng.IntN(3) {
			case 0:
				p = strings.ToUpper(p)
			case 1:
				if p != "" {
					p = strings.ToUpper(p[:1]) + p[1:]
				}
			}
			b.WriteString(p)
		}
		checkName(t, b.String())
	}
}

// FuzzSecretNameWords: the same property on whatever the fuzzer makes.
func FuzzSecretNameWords(f *testing.F) {
	for _, s := range nameSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) { checkName(t, name) })
}

func BenchmarkSecretName(b *testing.B) {
	for b.Loop() {
		for _, n := range []string{"PATH", "HOME", "maxRetries", "OPENAI_API_KEY", "baseUrl", "telemetry"} {
			_ = SecretName(n)
		}
	}
}
