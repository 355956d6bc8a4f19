package tools

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A call's arguments are read by more than one reader: the schema
// validator and the approval prompt (a map, where a repeated key's last
// value wins), the handler (encoding/json filling a struct, which also
// folds case: "Env" and "env" land in one field, the last one winning)
// and, for custom command tools and MCP servers, a program of someone
// else's, which may take the first value. Arguments holding one key
// twice in an object therefore read as different actions to different
// readers: {"env":"prod","env":"staging"} passes an enum of "staging"
// and is shown as staging, while a first-wins reader runs prod. No
// reader can disagree with another about arguments whose keys are
// unique, even up to case, so such arguments are the only ones taken.

// RepeatedKey reports a key that appears twice in one object of args,
// exactly or up to case as encoding/json folds it (Unicode simple
// folding: "ſ" is "s", "K" is "k"), and the key as it appeared the second
// time. args must be valid JSON (json.Valid); anything else reports none.
func RepeatedKey(args []byte) (string, bool) {
	d := argsDecoder{b: args}
	k, found, _ := d.repeated()
	return k, found
}

// pairwiseKeys is how many keys of one object are compared pairwise
// before the object's keys are folded into a set instead.
const pairwiseKeys = 16

// repeated skips one value, returning the first repeated key found in it.
func (d *argsDecoder) repeated() (key string, found bool, err error) {
	d.skipSpace()
	if d.i >= len(d.b) {
		return "", false, errArgsWalk
	}
	switch d.b[d.i] {
	case '{':
		d.i++
		var small [pairwiseKeys][]byte
		keys := small[:0]
		var folded map[string]bool
		d.skipSpace()
		if d.i < len(d.b) && d.b[d.i] == '}' {
			d.i++
			return "", false, nil
		}
		for {
			d.skipSpace()
			k, err := d.keyBytes()
			if err != nil {
				return "", false, err
			}
			if folded == nil {
				for _, prev := range keys {
					if bytes.EqualFold(prev, k) {
						return string(k), true, nil
					}
				}
				if len(keys) < pairwiseKeys {
					keys = append(keys, k)
				} else {
					folded = make(map[string]bool, 2*pairwiseKeys)
					for _, prev := range keys {
						folded[foldKey(string(prev))] = true
					}
				}
			}
			if folded != nil {
				f := foldKey(string(k))
				if folded[f] {
					return string(k), true, nil
				}
				folded[f] = true
			}
			d.skipSpace()
			if d.i >= len(d.b) || d.b[d.i] != ':' {
				return "", false, errArgsWalk
			}
			d.i++
			if r, found, err := d.repeated(); found || err != nil {
				return r, found, err
			}
			d.skipSpace()
			if d.i >= len(d.b) {
				return "", false, errArgsWalk
			}
			d.i++
			if d.b[d.i-1] == '}' {
				return "", false, nil
			}
		}
	case '[':
		d.i++
		d.skipSpace()
		if d.i < len(d.b) && d.b[d.i] == ']' {
			d.i++
			return "", false, nil
		}
		for {
			if r, found, err := d.repeated(); found || err != nil {
				return r, found, err
			}
			d.skipSpace()
			if d.i >= len(d.b) {
				return "", false, errArgsWalk
			}
			d.i++
			if d.b[d.i-1] == ']' {
				return "", false, nil
			}
		}
	case '"':
		d.skipString()
		return "", false, nil
	default:
		// A number, true, false or null: valid JSON ends it at a
		// delimiter or space.
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return "", false, nil
			}
			d.i++
		}
		return "", false, nil
	}
}

// keyBytes reads a key as the decoder reads it: a plain one is its own
// bytes (no copy), one with escapes or bytes that are not UTF-8 as str
// decodes it.
func (d *argsDecoder) keyBytes() ([]byte, error) {
	start := d.i
	d.skipString()
	tok := d.b[start:d.i]
	if len(tok) >= 2 && bytes.IndexByte(tok, '\\') < 0 && utf8.Valid(tok) {
		return tok[1 : len(tok)-1], nil
	}
	d.i = start
	s, err := d.str()
	return []byte(s), err
}

// skipString moves past a string token without decoding it.
func (d *argsDecoder) skipString() {
	d.i++ // the opening quote
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case '\\':
			d.i += 2
			continue
		case '"':
			d.i++
			return
		}
		d.i++
	}
}

// foldKey is key with every rune replaced by the least rune of its
// Unicode simple-fold orbit: two keys fold to one string exactly when
// strings.EqualFold (and encoding/json, matching a struct field) takes
// them for one.
func foldKey(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	for _, r := range key {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			continue
		}
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}
