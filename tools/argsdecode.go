package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// decodeArgs decodes a tool's arguments into the shape the schema
// validator reads: what a json.Decoder with UseNumber gives (maps, slices,
// strings, json.Number, bool, nil), with the same error for bad input.
// A call's arguments are checked on every call, and the decoder it
// replaces cost about a fifth of a read-only call's CPU: a fresh Decoder
// and its buffer per check, and a deep reflective decode that grew the
// call goroutine's stack. Valid input (json.Valid, so the walk below
// never meets a syntax error) is walked directly; anything else goes to
// the decoder, so errors read as before.
func decodeArgs(args []byte) (any, error) {
	if !json.Valid(args) {
		var inst any
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&inst); err != nil {
			return nil, err
		}
		return inst, nil // a first value followed by more: the decoder reads only the first
	}
	d := argsDecoder{b: args}
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	return v, nil
}

// argsDecoder walks JSON already known to be valid.
type argsDecoder struct {
	b []byte
	i int
}

var errArgsWalk = errors.New("unexpected input") // unreachable after json.Valid

func (d *argsDecoder) skipSpace() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *argsDecoder) value() (any, error) {
	d.skipSpace()
	if d.i >= len(d.b) {
		return nil, errArgsWalk
	}
	switch c := d.b[d.i]; {
	case c == '{':
		d.i++
		m := map[string]any{}
		d.skipSpace()
		if d.i < len(d.b) && d.b[d.i] == '}' {
			d.i++
			return m, nil
		}
		for {
			d.skipSpace()
			k, err := d.str()
			if err != nil {
				return nil, err
			}
			d.skipSpace()
			if d.i >= len(d.b) || d.b[d.i] != ':' {
				return nil, errArgsWalk
			}
			d.i++
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			m[k] = v // a repeated key: the last wins, as with the decoder
			d.skipSpace()
			if d.i >= len(d.b) {
				return nil, errArgsWalk
			}
			d.i++
			if d.b[d.i-1] == '}' {
				return m, nil
			}
		}
	case c == '[':
		d.i++
		s := []any{}
		d.skipSpace()
		if d.i < len(d.b) && d.b[d.i] == ']' {
			d.i++
			return s, nil
		}
		for {
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			s = append(s, v)
			d.skipSpace()
			if d.i >= len(d.b) {
				return nil, errArgsWalk
			}
			d.i++
			if d.b[d.i-1] == ']' {
				return s, nil
			}
		}
	case c == '"':
		return d.str()
	case c == 't':
		d.i += len("true")
		return true, nil
	case c == 'f':
		d.i += len("false")
		return false, nil
	case c == 'n':
		d.i += len("null")
		return nil, nil
	default:
		start := d.i
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case '-', '+', '.', 'e', 'E', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
				d.i++
				continue
			}
			break
		}
		if d.i == start {
			return nil, errArgsWalk
		}
		return json.Number(d.b[start:d.i]), nil
	}
}

// str reads a string token. One with escapes or bytes that are not UTF-8
// is left to encoding/json, which unescapes it and replaces bad bytes
// with U+FFFD exactly as the decoder did.
func (d *argsDecoder) str() (string, error) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return "", errArgsWalk
	}
	start := d.i
	plain := true
	d.i++
	for d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c == '\\':
			plain = false
			d.i += 2
			continue
		case c == '"':
			d.i++
			tok := d.b[start:d.i]
			if plain && utf8.Valid(tok) {
				return string(tok[1 : len(tok)-1]), nil
			}
			var s string
			if err := json.Unmarshal(tok, &s); err != nil {
				return "", err
			}
			return s, nil
		}
		d.i++
	}
	return "", errArgsWalk
}
