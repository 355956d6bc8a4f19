package secrets

import (
	"bytes"
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"unicode/utf8"
)

// fromDocument is FromJSON of d marshalled to JSON, and nothing when d
// does not marshal. It walks d's values as encoding/json would write
// them instead of marshalling and decoding them back: the round trip
// built the encoder and decoder caches of every type of the merged
// config and the agent, once per run, and was most of Collect's cost. A
// value the walk cannot be sure to see as encoding/json does (a type
// with its own MarshalJSON or MarshalText, an embedded struct, a field
// tag it does not read) falls back to the round trip, so the result is
// the same either way.
func fromDocument(d any) []string {
	w := docWalker{}
	if w.walkValue(d) {
		return compact(w.out)
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil
	}
	return FromJSON(b)
}

// maxDocDepth bounds the walk; deeper (or cyclic) values take the round
// trip, which has its own cycle check.
const maxDocDepth = 64

// docWalker collects what FromJSON's walk would of the document's JSON.
type docWalker struct{ out []string }

// str is one JSON string value under key (FromJSON's walk, string case).
func (w *docWalker) str(s string, secret bool, key string) {
	if secret && plausible(s, namesVariableRe.MatchString(key)) {
		w.out = append(w.out, s)
	}
	w.out = append(w.out, Find(s)...)
}

// walkValue walks a whole document.
func (w *docWalker) walkValue(d any) bool { return w.walk(reflect.ValueOf(d), false, "", 0) }

// walk visits v, the value under key; secret says whether a key above
// it looks secret. It reports false when v must take the round trip.
func (w *docWalker) walk(v reflect.Value, secret bool, key string, depth int) bool {
	if depth > maxDocDepth {
		return false
	}
	if !v.IsValid() {
		return true // null
	}
	t := v.Type()
	switch t {
	case reflect.TypeFor[json.RawMessage]():
		return w.raw(v, secret, key)
	case reflect.TypeFor[json.Number]():
		return false // a string written as a number
	}
	if mayMarshal(t) {
		return false
	}
	switch v.Kind() {
	case reflect.String:
		w.str(coerceUTF8(v.String()), secret, key)
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		// numbers and booleans hold no string
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		return !math.IsNaN(f) && !math.IsInf(f, 0) // encoding/json refuses these
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return true
		}
		return w.walk(v.Elem(), secret, key, depth+1)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return false // base64, or a byte type's own encoding
		}
		if v.IsNil() {
			return true
		}
		fallthrough
	case reflect.Array:
		for i := range v.Len() {
			if !w.walk(v.Index(i), secret, key, depth+1) {
				return false
			}
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return false
		}
		for it := v.MapRange(); it.Next(); {
			k := it.Key().String()
			if !utf8.ValidString(k) {
				return false // coerced keys may collide
			}
			if !w.walk(it.Value(), secret || SecretName(k), k, depth+1) {
				return false
			}
		}
	case reflect.Struct:
		return w.fields(v, secret, depth)
	default:
		return false // channels, funcs, complex numbers: encoding/json fails
	}
	return true
}

// fields visits a struct's fields under their JSON names.
func (w *docWalker) fields(v reflect.Value, secret bool, depth int) bool {
	t := v.Type()
	var seen []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return false // promoted fields follow rules this walk does not copy
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(opts, "string") || strings.Contains(opts, "omitzero") {
			return false
		}
		if name == "" {
			name = f.Name
		} else if !plainName(name) {
			return false
		}
		for _, s := range seen {
			if s == name {
				return false // encoding/json drops or picks one of the two
			}
		}
		seen = append(seen, name)
		if !w.walk(v.Field(i), secret || SecretName(name), name, depth+1) {
			return false
		}
	}
	return true
}

// mayMarshal says whether t, or a pointer to it, writes itself
// (encoding/json calls the method). Predeclared and unnamed types other
// than pointers and structs have no methods: they are not asked, as
// reflect.PointerTo would make a new type for each of them.
func mayMarshal(t reflect.Type) bool {
	switch k := t.Kind(); {
	case k == reflect.Pointer || k == reflect.Interface:
		return marshals(t)
	case t.PkgPath() == "" && k != reflect.Struct:
		return false
	}
	return marshals(t) || marshals(reflect.PointerTo(t))
}

// marshals says whether t writes itself (encoding/json calls the method).
func marshals(t reflect.Type) bool {
	return t.Implements(reflect.TypeFor[json.Marshaler]()) || t.Implements(reflect.TypeFor[encoding.TextMarshaler]())
}

// raw is a json.RawMessage, which encoding/json writes as it is once it
// has checked it: nil is null; empty or invalid JSON fails the marshal.
func (w *docWalker) raw(v reflect.Value, secret bool, key string) bool {
	if v.IsNil() {
		return true
	}
	b := v.Bytes()
	if len(b) == 0 || !json.Valid(b) {
		return false // the round trip fails too: it decides
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return false
	}
	w.any(doc, secret, key)
	return true
}

// any is FromJSON's walk of a decoded value.
func (w *docWalker) any(v any, secret bool, key string) {
	switch x := v.(type) {
	case string:
		w.str(x, secret, key)
	case []any:
		for _, e := range x {
			w.any(e, secret, key)
		}
	case map[string]any:
		for k, e := range x {
			w.any(e, secret || SecretName(k), k)
		}
	}
}

// plainName is a tag name encoding/json takes as it is: letters, digits
// and '_' (it accepts more, which here takes the round trip).
func plainName(s string) bool {
	for _, r := range s {
		if r != '_' && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

// coerceUTF8 is s as encoding/json writes it and reads it back: each
// byte that is not part of valid UTF-8 becomes U+FFFD.
func coerceUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
