package secrets

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"unicode"
)

// Placeholder replaces every secret the Redactor finds.
const Placeholder = "[REDACTED]"

// MinSecretLen is the shortest value the Redactor replaces: shorter ones
// ("1", "true", a two-letter user name) would wreck ordinary text and are
// not credentials worth the name.
const MinSecretLen = 6

// Redactor replaces known secret values in text. It is immutable and safe
// for concurrent use; a nil Redactor changes nothing.
type Redactor struct {
	values []string // every form searched for, longest first
	repl   *strings.Replacer
}

// scanLimit is how many forms String and JSON look for one by one before
// building a replaced copy. Text without a secret (nearly every tool
// result) is then as many strings.Index passes, each a vector scan, where
// the Replacer's generic algorithm walks its trie at every byte: that walk
// was 13% of a read_file call's instructions with a handful of secrets.
// Past the limit one trie walk beats that many passes.
const scanLimit = 32

// NewRedactor builds a Redactor for values. Each is searched for as given
// and as it appears JSON-escaped and percent-encoded; empty, short and
// whitespace-only values are ignored.
func NewRedactor(values ...string) *Redactor { return newRedactor(MinSecretLen, values) }

// NewExactRedactor is NewRedactor without the length floor: for values
// known to be secret by where they came from (a credential header's
// value), however short, where replacing an innocent match in the text
// costs only readability. Empty and whitespace-only values are ignored.
func NewExactRedactor(values ...string) *Redactor { return newRedactor(1, values) }

func newRedactor(minLen int, values []string) *Redactor {
	var forms []string
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < minLen || (minLen >= MinSecretLen && !hasLetterOrDigit(v)) {
			continue
		}
		forms = append(forms, v, jsonEscaped(v, true), jsonEscaped(v, false), url.QueryEscape(v), url.PathEscape(v))
	}
	slices.SortFunc(forms, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	forms = slices.Compact(forms)
	// Longest first, so a secret that contains another is replaced whole.
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Placeholder)
	}
	return &Redactor{values: forms, repl: strings.NewReplacer(pairs...)}
}

func hasLetterOrDigit(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// jsonEscaped is v as it appears between the quotes of a JSON string.
func jsonEscaped(v string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(v)
	s := strings.TrimSuffix(b.String(), "\n")
	return s[1 : len(s)-1]
}

// Len is how many forms the Redactor searches for.
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	return len(r.values)
}

// String returns s with every known secret replaced by Placeholder.
func (r *Redactor) String(s string) string {
	if r == nil || len(r.values) == 0 || !r.mayHold(s) {
		return s
	}
	return r.repl.Replace(s)
}

// mayHold is false when s holds none of the forms, so replacing would
// change nothing; with more forms than scanLimit it does not look.
func (r *Redactor) mayHold(s string) bool {
	return len(r.values) > scanLimit || r.Contains(s)
}

// Contains reports whether s holds a known secret.
func (r *Redactor) Contains(s string) bool {
	if r == nil {
		return false
	}
	for _, v := range r.values {
		if strings.Contains(s, v) {
			return true
		}
	}
	return false
}

// JSON returns raw with every known secret replaced inside its strings.
// The result is still valid JSON: should a replacement break the syntax
// (a secret that is also a run of digits and punctuation), the document
// is decoded and its strings redacted one by one instead.
func (r *Redactor) JSON(raw json.RawMessage) json.RawMessage {
	if r == nil || len(r.values) == 0 || len(raw) == 0 {
		return raw
	}
	s := string(raw)
	if !r.mayHold(s) {
		return raw
	}
	out := r.repl.Replace(s)
	if out == s {
		return raw
	}
	if json.Valid([]byte(out)) {
		return json.RawMessage(out)
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		// Not JSON to begin with: as text.
		return json.RawMessage(out)
	}
	b, err := json.Marshal(r.value(v))
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// value redacts every string (keys included) of a decoded document.
func (r *Redactor) value(v any) any {
	switch x := v.(type) {
	case string:
		return r.String(x)
	case json.Number:
		if r.Contains(string(x)) {
			return Placeholder
		}
		return x
	case []any:
		for i := range x {
			x[i] = r.value(x[i])
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[r.String(k)] = r.value(e)
		}
		return out
	}
	return v
}
