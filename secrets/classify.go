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
)

// secretNameRe is shell-safety.md §4's name rule (API, KEY, SECRET, TOKEN,
// PASSWORD, CREDENTIAL, AUTH anywhere, any case), kept as the floor and
// widened: PASS (SMTP_PASS, PASSPHRASE), a PWD suffix (MYSQL_PWD; not the
// PWD base variable or OLDPWD), HEADER (OTEL_EXPORTER_OTLP_HEADERS),
// COOKIE, PRIVATE, DSN, CRED (CREDS), SEED (nkey seeds), JWT, BEARER,
// SIGNATURE.
var secretNameRe = regexp.MustCompile(`(?i)API|KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL|AUTH|PASS|_PWD$|HEADER|COOKIE|PRIVATE|DSN|CRED|SEED|JWT|BEARER|SIGNATURE`)

// SecretName reports whether a variable or field name says its value is
// a secret.
func SecretName(name string) bool { return secretNameRe.MatchString(name) }

// tokenRes match credentials by their shape, wherever they appear in a
// value: the well-known key formats, JWTs, nkey seeds and PEM blocks.
var tokenRes = []*regexp.Regexp{
	// OpenAI (sk-, sk-proj-), Anthropic (sk-ant-), DeepSeek and kin.
	regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{16,}`),
	// GitHub tokens.
	regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{20,}`),
	regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`),
	// GitLab, npm, Hugging Face, Groq, xAI.
	regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}`),
	regexp.MustCompile(`\bnpm_[A-Za-z0-9]{30,}`),
	regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`),
	regexp.MustCompile(`\bgsk_[A-Za-z0-9]{30,}`),
	regexp.MustCompile(`\bxai-[A-Za-z0-9]{30,}`),
	// Slack.
	regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,}`),
	// AWS access key ids.
	regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b`),
	// Google API keys.
	regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}`),
	// Stripe.
	regexp.MustCompile(`\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}`),
	// JWTs (a NATS user JWT too).
	regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*`),
	// NATS nkey seeds: S, a type letter, then base32.
	regexp.MustCompile(`\bS[UOANCPX][A-Z2-7]{50,}\b`),
	// PEM blocks of keys and credentials, whole.
	regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*(?:PRIVATE KEY|SEED|JWT|CREDENTIAL|SECRET)[A-Z0-9 ]*-----[\s\S]*?-----END [A-Z0-9 ]*-----`),
}

// authRes match credentials by context: an Authorization-style header or a
// key=value pair naming a secret, in a header list such as
// OTEL_EXPORTER_OTLP_HEADERS ("Authorization=Bearer%20abc,x-api-key=k").
// The first group is the secret.
var authRes = []*regexp.Regexp{
	// A scheme and its credential, the space raw or percent-encoded.
	regexp.MustCompile(`(?i)\b(?:bearer|basic|digest|token|apikey)(?:\s+|%20|\+)([A-Za-z0-9._~+/=\-%]{6,})`),
	// name=value or name: value where the name is secret-looking.
	regexp.MustCompile(`(?i)(?:^|[\s,;&?"'{])[\w.\-]*(?:authorization|api[-_]?key|token|secret|password|passwd|pwd|cookie|credential)[\w.\-]*\s*[:=]\s*"?([^\s,;&"']{6,})`),
}

// urlRe finds URLs that carry userinfo (user:password@ or a bare token@,
// as in a Sentry DSN).
var urlRe = regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#@"']+@[^\s"']*`)

// SecretValue reports whether a value holds something credential-shaped:
// a URL with userinfo, an Authorization-style header, a known key format
// or a PEM key block.
func SecretValue(v string) bool { return len(Find(v)) > 0 }

// Find returns the credentials inside v: the userinfo secret of each URL
// (the password, else the user), the credential of each header-style
// pair, each key-shaped token and PEM block. Duplicates are kept once.
func Find(v string) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, m := range urlRe.FindAllString(v, -1) {
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
	for _, re := range authRes {
		for _, m := range re.FindAllStringSubmatch(v, -1) {
			add(m[1])
			if dec, err := url.QueryUnescape(m[1]); err == nil && dec != m[1] {
				add(dec)
			}
		}
	}
	for _, re := range tokenRes {
		for _, m := range re.FindAllString(v, -1) {
			add(m)
		}
	}
	return out
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
