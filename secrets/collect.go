package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/jazz-run/jazz/safefile"
)

// Bounds of FromHome's scan: it runs at every start, so it reads little.
const (
	homeMaxDepth     = 3
	homeMaxFiles     = 256
	homeMaxFileBytes = 256 << 10
	homeMaxBytes     = 8 << 20
)

// homeBulk are JAZZ_HOME directories that hold conversations and event
// logs, not credentials; the scan skips them to stay cheap. The Guard
// still refuses them to the read tools like the rest of JAZZ_HOME.
var homeBulk = []string{"history", "telemetry", "cache", "logs"}

// envNameRe is an upper-case variable name such as OPENAI_API_KEY.
var envNameRe = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// namesVariableRe is a key that says its value names a variable
// (apiKeyEnv, token_env, KEY_VAR): there, and only there, a variable name
// is a reference, not the key. A value's shape alone never excuses it: a
// token may be all capitals (AKIA…), start with '/' (base64), or be a
// URL whose path or query is the credential (a webhook).
var namesVariableRe = regexp.MustCompile(`(?i)(env|var|variable)$`)

// maxBareSegment is the longest path segment a URL may have and still be
// a plain service address (https://api.example.com/v1) rather than one
// that carries its token (…/services/T0/B0/<24 characters>).
const maxBareSegment = 16

// plausible says whether a value stored under a secret-looking name is
// worth redacting. Everything is, except what cannot hold a secret: a
// value too short, a flag word, a path that exists, a bare URL (no user,
// query or fragment, no long path segment), and a variable name where the
// key says it names one (namesVar).
func plausible(v string, namesVar bool) bool {
	v = strings.TrimSpace(v)
	if len(v) < MinSecretLen || namesVar && envNameRe.MatchString(v) {
		return false
	}
	switch strings.ToLower(v) {
	case "true", "false", "enabled", "disabled", "bearer", "basic":
		return false
	}
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "./") {
		_, err := os.Lstat(v)
		return err != nil // a path that names nothing may be a token
	}
	return !bareURL(v)
}

// bareURL reports whether v is a URL with nothing in it but where a
// service is.
func bareURL(v string) bool {
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	if strings.HasSuffix(v, "?") || strings.HasSuffix(v, "#") {
		return false
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if len(seg) > maxBareSegment {
			return false
		}
	}
	return true
}

// FromEnviron collects the secrets of an environment (KEY=VALUE entries):
// the values of secret-looking names, each value of a header list held
// by one (OTEL_EXPORTER_OTLP_HEADERS), and every credential Find sees in
// any value.
func FromEnviron(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || val == "" {
			continue
		}
		if SecretName(name) {
			if plausible(val, false) {
				out = append(out, val)
			}
			out = append(out, pairValues(val)...)
		}
		out = append(out, Find(val)...)
	}
	return compact(out)
}

// pairValues splits a `k=v,k2=v2` list into its values, raw and
// percent-decoded; a value that is no such list gives nothing.
func pairValues(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		_, v, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if plausible(v, false) {
			out = append(out, v)
		}
		if dec, err := url.QueryUnescape(v); err == nil && dec != v && plausible(dec, false) {
			out = append(out, dec)
		}
	}
	return out
}

// FromHeaders collects every value of a header map (OTLP headers are
// credentials whatever their names).
func FromHeaders(h map[string]string) []string {
	var out []string
	for _, v := range h {
		out = append(out, v)
		for _, p := range strings.Fields(v) { // "Bearer abc": the token alone too
			if plausible(p, false) {
				out = append(out, p)
			}
		}
	}
	return compact(out)
}

// FromJSON collects the secrets of a JSON document (a config or agent
// file, or a typed config marshalled back): every string under a key
// whose name looks secret (llmApiKeys, api_key, headers, password …, at
// any depth) and every credential Find sees in any string. Text that is
// not JSON is searched with Find alone.
func FromJSON(raw []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return compact(Find(string(raw)))
	}
	var out []string
	// key is the value's own key: whether it names a variable.
	var walk func(v any, secret bool, key string)
	walk = func(v any, secret bool, key string) {
		switch x := v.(type) {
		case string:
			if secret && plausible(x, namesVariableRe.MatchString(key)) {
				out = append(out, x)
			}
			out = append(out, Find(x)...)
		case []any:
			for _, e := range x {
				walk(e, secret, key)
			}
		case map[string]any:
			for k, e := range x {
				walk(e, secret || SecretName(k), k)
			}
		}
	}
	walk(v, false, "")
	return compact(out)
}

// FromHome collects the secrets stored in JAZZ_HOME: FromJSON over each
// small regular file in it, at most three levels deep (config.json,
// agents/*.json, credential and seed files, whatever is added later),
// skipping the conversation and event stores. Every file is opened with
// safefile, so a FIFO or device planted there is never read.
func FromHome(ctx context.Context, home string) []string { return fromHome(ctx, home, nil) }

// fromHome is FromHome; with seen, it also keeps what each file read
// gave, by path, so that Collect reads no file twice.
func fromHome(ctx context.Context, home string, seen map[string][]string) []string {
	if home == "" {
		return nil
	}
	var out []string
	files, total := 0, 0
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			if ctx.Err() != nil || files >= homeMaxFiles || total >= homeMaxBytes {
				return
			}
			p := filepath.Join(dir, e.Name())
			switch {
			case e.IsDir():
				if depth < homeMaxDepth && !(depth == 1 && slices.Contains(homeBulk, e.Name())) {
					walk(p, depth+1)
				}
			case e.Type().IsRegular():
				b, _, err := safefile.Read(ctx, p, safefile.Options{MaxBytes: homeMaxFileBytes})
				if err != nil {
					continue
				}
				files++
				total += len(b)
				found := FromJSON(b)
				if seen != nil {
					seen[p] = found
				}
				out = append(out, found...)
			}
		}
	}
	walk(home, 1)
	return compact(out)
}

func compact(ss []string) []string {
	slices.Sort(ss)
	return slices.Compact(ss)
}

// fromFile is FromJSON over one small file, read with safefile.
func fromFile(ctx context.Context, path string) []string {
	b, _, err := safefile.Read(ctx, path, safefile.Options{MaxBytes: homeMaxFileBytes})
	if err != nil {
		return nil
	}
	return FromJSON(b)
}
