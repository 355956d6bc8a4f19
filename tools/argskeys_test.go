package tools_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/tools"
)

// FuzzRepeatedKey is a differential oracle: on valid JSON, RepeatedKey
// reports a key exactly when approvals.Canonical (the remote and bridge
// approvals' reader, written apart from it) refuses the document for a
// key that appears twice.
func FuzzRepeatedKey(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, `{"a":1,"A":2}`, `{"k":1,"\u212a":2}`, `{"s":1,"ſ":2}`,
		`{"a":{"b":1,"b":2}}`, `[{"x":1},{"x":1}]`, `{"a":"\"a\"","b":"a"}`, `{"\u0061":1,"a":2}`, `{"é":1,"É":2}`,
		"{\"\xff\":1,\"\xfe\":2}", `{"a":[1,{"c":[{"d":1,"D":2}]}]}`, `{"a":1,"b":2,"c":3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) || strings.Count(string(b), "[")+strings.Count(string(b), "{") > 200 {
			return // Canonical bounds nesting at 256; RepeatedKey is only given valid JSON
		}
		k, got := tools.RepeatedKey(b)
		_, err := approvals.Canonical(b)
		want := err != nil && strings.Contains(err.Error(), "appears twice")
		if got != want {
			t.Fatalf("%q: RepeatedKey = %q, %v; Canonical: %v", b, k, got, err)
		}
	})
}

// TestRepeatedKeyFindsEveryRepeat: random documents with unique keys are
// taken whole; the same documents with one key of one object given again
// (as is, case-flipped, escaped, or as a Unicode look-alike the decoder
// folds into it), at any depth, are always caught, and every reader of an
// accepted document (first value wins, last value wins, case folded)
// reads the same values.
func TestRepeatedKeyFindsEveryRepeat(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 3000 {
		doc := genObject(rng, 0)
		b, _ := json.Marshal(doc)
		if k, ok := tools.RepeatedKey(b); ok {
			t.Fatalf("round %d: unique keys %s: reported %q", round, b, k)
		}
		checkReadersAgree(t, b)
		bad := withRepeat(rng, doc)
		if bad == "" {
			continue
		}
		if !json.Valid([]byte(bad)) {
			t.Fatalf("round %d: generated invalid JSON %s", round, bad)
		}
		if k, ok := tools.RepeatedKey([]byte(bad)); !ok {
			t.Fatalf("round %d: %s: repeat not found", round, bad)
		} else if k == "" {
			t.Fatalf("round %d: %s: empty key reported", round, bad)
		}
	}
}

// obj is an object with its keys in order.
type obj struct {
	keys []string
	vals []any
}

func (o *obj) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(o.vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

var keyPool = []string{"path", "env", "command", "id", "k", "s", "é", "name", "x", "Ω", "args", "target"}

func genObject(rng *rand.Rand, depth int) *obj {
	o := &obj{}
	used := map[string]bool{}
	n := rng.IntN(5)
	if rng.IntN(10) == 0 {
		n = 17 + rng.IntN(10) // past the pairwise comparison
	}
	for range n {
		k := keyPool[rng.IntN(len(keyPool))]
		if rng.IntN(3) == 0 {
			k += fmt.Sprint(rng.IntN(100))
		}
		if used[strings.ToLower(k)] {
			continue
		}
		used[strings.ToLower(k)] = true
		o.keys = append(o.keys, k)
		o.vals = append(o.vals, genValue(rng, depth+1))
	}
	return o
}

func genValue(rng *rand.Rand, depth int) any {
	switch c := rng.IntN(7); {
	case c == 0 && depth < 4:
		return genObject(rng, depth)
	case c == 1 && depth < 4:
		var a []any
		for range rng.IntN(3) {
			a = append(a, genValue(rng, depth+1))
		}
		return a
	case c == 2:
		return rng.IntN(1000)
	case c == 3:
		return rng.IntN(2) == 0
	case c == 4:
		return nil
	default:
		return `{"a":1,"a":2} \" ` + keyPool[rng.IntN(len(keyPool))] // keys' look-alikes inside strings are no keys
	}
}

// objects lists every object in v, depth first.
func objects(v any, out *[]*obj) {
	switch x := v.(type) {
	case *obj:
		*out = append(*out, x)
		for _, c := range x.vals {
			objects(c, out)
		}
	case []any:
		for _, c := range x {
			objects(c, out)
		}
	}
}

// withRepeat is doc with one object's key given a second time, spelled
// as a decoder would take for the same key; "" if doc has no key.
func withRepeat(rng *rand.Rand, doc *obj) string {
	var all []*obj
	objects(doc, &all)
	var withKeys []*obj
	for _, o := range all {
		if len(o.keys) > 0 {
			withKeys = append(withKeys, o)
		}
	}
	if len(withKeys) == 0 {
		return ""
	}
	target := withKeys[rng.IntN(len(withKeys))]
	k := target.keys[rng.IntN(len(target.keys))]
	spelled := respell(rng, k)
	// The repeat is added under a mark, replaced by its spelling once
	// marshalled.
	mark := "\x00mark\x00"
	target.keys = append(target.keys, mark)
	target.vals = append(target.vals, "evil")
	marked, _ := json.Marshal(doc)
	target.keys, target.vals = target.keys[:len(target.keys)-1], target.vals[:len(target.vals)-1]
	return strings.Replace(string(marked), `"\u0000mark\u0000"`, spelled, 1)
}

// respell writes key as a JSON string a case-folding decoder reads as
// key: as is, case-flipped, \u-escaped, or with k/s as their look-alikes.
func respell(rng *rand.Rand, key string) string {
	switch rng.IntN(4) {
	case 0:
		b, _ := json.Marshal(key)
		return string(b)
	case 1:
		b, _ := json.Marshal(strings.ToUpper(key))
		return string(b)
	case 2:
		var sb strings.Builder
		sb.WriteByte('"')
		for _, r := range key {
			if r > 0xFFFF {
				sb.WriteRune(r)
				continue
			}
			fmt.Fprintf(&sb, `\u%04x`, r)
		}
		sb.WriteByte('"')
		return sb.String()
	default:
		r := strings.NewReplacer("k", "\u212a", "K", "\u212a", "s", "\u017f", "S", "\u017f").Replace(key)
		b, _ := json.Marshal(r)
		return string(b)
	}
}

// checkReadersAgree: for an accepted document, a reader that keeps the
// first value of a key, one that keeps the last, and one that folds case
// read the same top-level values.
func checkReadersAgree(t *testing.T, b []byte) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	first, last, folded := map[string]string{}, map[string]string{}, map[string]string{}
	for dec.More() {
		tok, _ := dec.Token()
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if _, ok := first[k]; !ok {
			first[k] = string(v)
		}
		last[k] = string(v)
		folded[strings.ToLower(k)] = string(v)
	}
	for k, v := range first {
		if last[k] != v || folded[strings.ToLower(k)] != v {
			t.Fatalf("%s: readers disagree on %q: first %s, last %s, folded %s", b, k, v, last[k], folded[strings.ToLower(k)])
		}
	}
}

// TestRepeatedKeyAllocatesNothingOnPlainArguments: every call pays for
// the check, so a usual call's arguments (plain keys, a few of them) are
// read in place.
func TestRepeatedKeyAllocatesNothingOnPlainArguments(t *testing.T) {
	args := []byte(`{"path":"/tmp/x","startLine":1,"endLine":20,"edits":[{"type":"insert","line":0,"content":"a"}]}`)
	if n := testing.AllocsPerRun(100, func() { tools.RepeatedKey(args) }); n != 0 {
		t.Fatalf("RepeatedKey allocated %v times per call", n)
	}
}
