// Package secrets keeps jazz's own secrets (provider keys, OTLP headers,
// bus credentials, whatever JAZZ_HOME holds) out of everything a model,
// an event stream or a collector can see. It has three parts:
//
//   - a classifier that tells secret-looking variable names and values
//     apart (what the child-process environment scrub and the redactor
//     use);
//   - a Guard that refuses, to the read tools, every path that resolves
//     into process information under /proc or into JAZZ_HOME;
//   - a Redactor that knows the run's actual secret values and replaces
//     them in any text before it leaves.
//
// The Guard is the rule; the Redactor is the backstop for what the rule
// cannot see (a copy of a key in some other file).
package secrets

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// secretNameRe is shell-safety.md §4's name rule (API, KEY, SECRET, TOKEN,
// PASSWORD, CREDENTIAL, AUTH anywhere, any case), kept as the floor and
// widened: PASS (SMTP_PASS, PASSPHRASE), a PWD suffix (MYSQL_PWD; not the
// PWD base variable or OLDPWD), HEADER (OTEL_EXPORTER_OTLP_HEADERS),
// COOKIE, PRIVATE, DSN, CRED (CREDS), SEED (nkey seeds), JWT, BEARER,
// SIGNATURE.
//
// The regexp decides only names that are not all ASCII, where (?i) also
// folds the Kelvin sign onto k and the long s onto s; an ASCII name is
// upper-cased and searched for the same words, which gives the same
// answer (TestSecretNameWords, FuzzSecretNameWords) at a fraction of the
// cost: every run asks this of every environment variable and of every
// key of its config and agent, and the backtracker took ~0.4 ms of it.
var secretNameRe = compiled(`(?i)API|KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL|AUTH|PASS|_PWD$|HEADER|COOKIE|PRIVATE|DSN|CRED|SEED|JWT|BEARER|SIGNATURE`)

// SecretName reports whether a variable or field name says its value is
// a secret.
func SecretName(name string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			return secretNameRe().MatchString(name)
		}
	}
	u := strings.ToUpper(name)
	// secretNameRe's words but _PWD$; PASSWORD and CREDENTIAL are implied
	// by PASS and CRED.
	for _, w := range [...]string{"API", "KEY", "SECRET", "TOKEN", "AUTH", "PASS", "HEADER", "COOKIE",
		"PRIVATE", "DSN", "CRED", "SEED", "JWT", "BEARER", "SIGNATURE"} {
		if strings.Contains(u, w) {
			return true
		}
	}
	return strings.HasSuffix(u, "_PWD")
}

// pattern is one credential regexp, compiled on first use, and a cheap
// test a value passes whenever the regexp could match it: what every
// match must contain. Most values (paths, names, numbers, model ids) hold
// none of it, so Find skips the regexp for them; compiling all of them at
// init and running each over every string of the environment and the
// config cost every run about a millisecond. TestPrefilterIsExact and
// FuzzFindPrefilter check, as a differential oracle, that Find with the
// tests gives exactly what the regexps alone give.
type pattern struct {
	re func() *regexp.Regexp
	// may reports whether the regexp could match v.
	may func(v value) bool
}

func compiled(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// value is a string Find searches, with its ASCII lower case for the
// case-insensitive tests.
type value struct {
	s string
	// lower is s in lower case; valid only when ascii.
	lower string
	ascii bool
}

func newValue(s string) value {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return value{s: s}
		}
	}
	return value{s: s, lower: strings.ToLower(s), ascii: true}
}

// has reports whether the value holds one of lits, exactly.
func (v value) has(lits ...string) bool {
	for _, l := range lits {
		if strings.Contains(v.s, l) {
			return true
		}
	}
	return false
}

// hasFold is has in any case, for (?i) regexps. A value that is not all
// ASCII always passes: (?i) also folds non-ASCII letters onto ASCII ones
// (the Kelvin sign onto k, the long s onto s).
func (v value) hasFold(lits ...string) bool {
	if !v.ascii {
		return true
	}
	for _, l := range lits {
		if strings.Contains(v.lower, l) {
			return true
		}
	}
	return false
}

func lits(l ...string) func(value) bool { return func(v value) bool { return v.has(l...) } }

// tokenPats match credentials by their shape, wherever they appear in a
// value: the well-known key formats, JWTs, nkey seeds and PEM blocks.
var tokenPats = []pattern{
	// OpenAI (sk-, sk-proj-), Anthropic (sk-ant-), DeepSeek and kin.
	{compiled(`\bsk-[A-Za-z0-9_\-]{16,}`), lits("sk-")},
	// GitHub tokens.
	{compiled(`\bgh[pousr]_[A-Za-z0-9]{20,}`), lits("ghp_", "gho_", "ghu_", "ghs_", "ghr_")},
	{compiled(`\bgithub_pat_[A-Za-z0-9_]{20,}`), lits("github_pat_")},
	// GitLab, npm, Hugging Face, Groq, xAI.
	{compiled(`\bglpat-[A-Za-z0-9_\-]{20,}`), lits("glpat-")},
	{compiled(`\bnpm_[A-Za-z0-9]{30,}`), lits("npm_")},
	{compiled(`\bhf_[A-Za-z0-9]{30,}`), lits("hf_")},
	{compiled(`\bgsk_[A-Za-z0-9]{30,}`), lits("gsk_")},
	{compiled(`\bxai-[A-Za-z0-9]{30,}`), lits("xai-")},
	// Slack.
	{compiled(`\bxox[abposr]-[A-Za-z0-9\-]{10,}`), lits("xox")},
	// AWS access key ids.
	{compiled(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b`),
		lits("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA")},
	// Google API keys.
	{compiled(`\bAIza[0-9A-Za-z_\-]{35}`), lits("AIza")},
	// Stripe.
	{compiled(`\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}`), lits("k_live_", "k_test_")},
	// JWTs (a NATS user JWT too).
	{compiled(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*`), lits("eyJ")},
	// NATS nkey seeds: S, a type letter, then base32: 52 bytes at least.
	{compiled(`\bS[UOANCPX][A-Z2-7]{50,}\b`), func(v value) bool { return len(v.s) >= 52 && v.has("S") }},
	// PEM blocks of keys and credentials, whole.
	{compiled(`-----BEGIN [A-Z0-9 ]*(?:PRIVATE KEY|SEED|JWT|CREDENTIAL|SECRET)[A-Z0-9 ]*-----[\s\S]*?-----END [A-Z0-9 ]*-----`),
		lits("-----BEGIN ")},
}

// authPats match credentials by context: an Authorization-style header or
// a key=value pair naming a secret, in a header list such as
// OTEL_EXPORTER_OTLP_HEADERS ("Authorization=Bearer%20abc,x-api-key=k").
// The first group is the secret.
var authPats = []pattern{
	// A scheme and its credential, the space raw or percent-encoded.
	{compiled(`(?i)\b(?:bearer|basic|digest|token|apikey)(?:\s+|%20|\+)([A-Za-z0-9._~+/=\-%]{6,})`),
		func(v value) bool { return v.hasFold("bearer", "basic", "digest", "token", "apikey") }},
	// name=value or name: value where the name is secret-looking.
	{compiled(`(?i)(?:^|[\s,;&?"'{])[\w.\-]*(?:authorization|api[-_]?key|token|secret|password|passwd|pwd|cookie|credential)[\w.\-]*\s*[:=]\s*"?([^\s,;&"']{6,})`),
		func(v value) bool {
			return v.has(":", "=") && v.hasFold("authorization", "api", "token", "secret", "passw", "pwd", "cookie", "credential")
		}},
}

// urlPat finds URLs that carry userinfo (user:password@ or a bare token@,
// as in a Sentry DSN).
var urlPat = pattern{compiled(`\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#@"']+@[^\s"']*`),
	func(v value) bool { return v.has("://") && v.has("@") }}

// tokenURLPat finds URLs with a path; those whose path carries their
// credential (a Slack, Discord or Teams webhook, a signed link: see
// tokenPath) are secrets whole, whatever the variable holding them is
// called.
var tokenURLPat = pattern{compiled(`\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#"'@]+/[^\s?#"']*`), lits("://")}

// SecretValue reports whether a value holds something credential-shaped:
// a URL with userinfo, an Authorization-style header, a known key format
// or a PEM key block.
func SecretValue(v string) bool { return len(Find(v)) > 0 }

// Find returns the credentials inside v: the userinfo secret of each URL
// (the password, else the user), the credential of each header-style
// pair, each key-shaped token and PEM block. Duplicates are kept once.
func Find(v string) []string { return find(v, true) }

// find is Find; without prefilter every regexp runs (the oracle the
// tests compare Find with).
func find(v string, prefilter bool) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	val := value{s: v}
	if prefilter {
		val = newValue(v)
	}
	skip := func(p pattern) bool { return prefilter && !p.may(val) }
	if !skip(urlPat) {
		for _, m := range urlPat.re().FindAllString(v, -1) {
			if u, err := url.Parse(m); err == nil && u.User != nil {
				if pw, ok := u.User.Password(); ok && pw != "" {
					add(pw)
					if raw := rawPassword(m); raw != pw {
						add(raw) // as written, percent-encoding and all
					}
				} else {
					add(u.User.Username())
				}
				continue
			}
			// Unparsable but userinfo-shaped: the whole userinfo.
			scheme := strings.Index(m, "://")
			add(m[scheme+3 : strings.LastIndexByte(m, '@')])
		}
	}
	for _, p := range authPats {
		if skip(p) {
			continue
		}
		for _, m := range p.re().FindAllStringSubmatch(v, -1) {
			add(m[1])
			if dec, err := url.QueryUnescape(m[1]); err == nil && dec != m[1] {
				add(dec)
			}
		}
	}
	for _, p := range tokenPats {
		if skip(p) {
			continue
		}
		for _, m := range p.re().FindAllString(v, -1) {
			add(m)
		}
	}
	if !skip(tokenURLPat) {
		for _, m := range tokenURLPat.re().FindAllString(v, -1) {
			if tokenPath(m) {
				add(m)
			}
		}
	}
	return out
}

// minTokenSegment is the shortest URL path segment tokenPath takes for a
// credential.
const minTokenSegment = 20

// tokenPath reports whether a URL's path has a segment shaped like a
// token: minTokenSegment or more of [A-Za-z0-9_-], letters and digits
// both (a word-only slug or a number is a page, not a key).
func tokenPath(u string) bool {
	rest := u[strings.Index(u, "://")+3:]
	for _, seg := range strings.Split(rest, "/")[1:] {
		if len(seg) < minTokenSegment {
			continue
		}
		letter, digit, other := false, false, false
		for i := 0; i < len(seg); i++ {
			switch c := seg[i]; {
			case c >= '0' && c <= '9':
				digit = true
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
				letter = true
			case c == '_' || c == '-':
			default:
				other = true
			}
		}
		if letter && digit && !other {
			return true
		}
	}
	return false
}

// rawPassword is the password of a userinfo URL as written.
func rawPassword(u string) string {
	rest := u[strings.Index(u, "://")+3:]
	info := rest[:strings.LastIndexByte(rest, '@')]
	if _, pw, ok := strings.Cut(info, ":"); ok {
		return pw
	}
	return ""
}
