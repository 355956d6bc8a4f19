package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/jazz-run/jazz/visible"
)

// TruncateStrings cuts every string value longer than MaxString characters
// in the compact JSON document data, leaving object keys, key order,
// numbers and nesting exactly as they were. It scans bytes instead of
// decoding into maps so order survives and the common case (nothing to
// cut) costs one pass and no allocation. Input that is not compact JSON as
// encoding/json writes it is returned unchanged.
func TruncateStrings(data []byte) []byte {
	var out []byte // nil until the first cut
	last := 0
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		end := stringEnd(data, i)
		if end < 0 {
			return data
		}
		isKey := end+1 < len(data) && data[end+1] == ':'
		// A literal of at most MaxString bytes holds at most MaxString
		// characters: only longer ones are worth decoding.
		if !isKey && end-i-1 > MaxString {
			var s string
			if err := json.Unmarshal(data[i:end+1], &s); err != nil {
				return data
			}
			if c := Cut(s); c != s {
				if out == nil {
					out = make([]byte, 0, len(data))
				}
				out = append(out, data[last:i]...)
				out = appendString(out, c)
				last = end + 1
			}
		}
		i = end
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

// stringEnd is the index of the quote closing the literal opened at i.
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}

func appendString(out []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(true) // as json.Marshal wrote the rest of the line
	_ = enc.Encode(s)
	return append(out, bytes.TrimRight(buf.Bytes(), "\n")...)
}

// EscapeHidden rewrites, in the JSON document data, every character that
// visible.Hidden says a person would not see (DEL, C1 controls, bidi
// overrides, zero-width and other format characters, separators; the C0
// controls encoding/json already escapes) as a \u escape. The document
// decodes to exactly the same values: only how it reads on a terminal
// changes, so a model's text tailed from the stream cannot repaint it.
func EscapeHidden(data []byte) []byte {
	start := -1
	for i, c := range data {
		if c >= 0x7f {
			start = i
			break
		}
	}
	if start < 0 {
		return data
	}
	var out []byte // nil until the first escape
	last := 0
	for i := start; i < len(data); {
		c := data[i]
		if c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if (r != utf8.RuneError || size > 1) && !visible.Hidden(r) {
			i += size
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(data)+16)
		}
		out = append(out, data[last:i]...)
		// An invalid byte (never in encoding/json's output) becomes the
		// replacement character, as encoding/json would write it.
		if r > 0xFFFF {
			hi, lo := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
		last = i
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

// MaxLine bounds a rendered event line (cut ones; requests a person
// decides on are never cut), under the 64 KiB a bufio.Scanner reads by
// default. Cutting strings alone leaves a line unbounded: a model chooses
// the keys of a call's arguments and how many there are, and how many
// calls a batch names.
const MaxLine = 32 << 10

// elided stands for what a bounded line left out of an array, and (as a
// key and its value) of an object.
const elided = "…"

// BoundLine returns the compact JSON document data (as encoding/json
// writes it) within about max bytes: each key and string value is cut as
// TruncateStrings does, and once the output holds max bytes every array
// and object still open takes no more members, ending with one elided
// member instead. Key order and the values written are kept as they
// were. A document under max is returned as it is; one that is not
// compact JSON becomes the EncodeError line. It scans bytes, as
// TruncateStrings does: a model's 20 MB of arguments costs one pass.
func BoundLine(data []byte, max int) []byte {
	if len(data) <= max {
		return data
	}
	b := &bounder{data: data, max: max, out: make([]byte, 0, max+1024)}
	if !b.value() || b.i != len(data) {
		return []byte(encodeErrorLine)
	}
	return b.out
}

// encodeErrorLine is what an event that cannot be encoded renders as.
const encodeErrorLine = `{"type":"error","error":{"name":"EncodeError","message":"event could not be encoded"},"recoverable":true}`

// bounder copies data[i:] to out, one value at a time.
type bounder struct {
	data []byte
	i    int
	max  int
	out  []byte
}

// full says the budget is spent: no more members.
func (b *bounder) full() bool { return len(b.out) >= b.max }

func (b *bounder) value() bool {
	if b.i >= len(b.data) {
		return false
	}
	switch c := b.data[b.i]; {
	case c == '{':
		return b.container('}', true)
	case c == '[':
		return b.container(']', false)
	case c == '"':
		return b.str()
	default:
		// A number, true, false or null: up to the next delimiter.
		j := b.i
		for j < len(b.data) && b.data[j] != ',' && b.data[j] != ':' && b.data[j] != ']' && b.data[j] != '}' {
			j++
		}
		if j == b.i {
			return false
		}
		b.out = append(b.out, b.data[b.i:j]...)
		b.i = j
		return true
	}
}

// str copies the string literal at i cut, and escaped as EscapeHidden
// will (which then leaves it as it is), so the budget counts what is
// written.
func (b *bounder) str() bool {
	end := stringEnd(b.data, b.i)
	if end < 0 {
		return false
	}
	lit := b.data[b.i : end+1]
	b.i = end + 1
	if len(lit)-2 > MaxString {
		var s string
		if err := json.Unmarshal(lit, &s); err != nil {
			return false
		}
		if c := Cut(s); c != s {
			lit = appendString(nil, c)
		}
	}
	b.out = append(b.out, EscapeHidden(lit)...)
	return true
}

// container copies the object or array at i, members while the budget
// lasts, then the elided member for the rest.
func (b *bounder) container(closing byte, object bool) bool {
	b.out = append(b.out, b.data[b.i])
	b.i++
	for n := 0; ; n++ {
		if b.i >= len(b.data) {
			return false
		}
		if b.data[b.i] == closing {
			b.out = append(b.out, closing)
			b.i++
			return true
		}
		if n > 0 {
			if b.data[b.i] != ',' {
				return false
			}
			b.i++
		}
		if b.full() {
			if !b.skipRest(closing) {
				return false
			}
			if n > 0 {
				b.out = append(b.out, ',')
			}
			b.out = appendString(b.out, elided)
			if object {
				b.out = append(b.out, ':')
				b.out = appendString(b.out, elided)
			}
			b.out = append(b.out, closing)
			b.i++
			return true
		}
		if n > 0 {
			b.out = append(b.out, ',')
		}
		if object {
			if b.i >= len(b.data) || b.data[b.i] != '"' || !b.str() || b.i >= len(b.data) || b.data[b.i] != ':' {
				return false
			}
			b.out = append(b.out, ':')
			b.i++
		}
		if !b.value() {
			return false
		}
	}
}

// skipRest moves i past the members left in the open container, to its
// closing delimiter (not consumed).
func (b *bounder) skipRest(closing byte) bool {
	depth := 0
	for ; b.i < len(b.data); b.i++ {
		switch b.data[b.i] {
		case '"':
			end := stringEnd(b.data, b.i)
			if end < 0 {
				return false
			}
			b.i = end
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return b.data[b.i] == closing
			}
			depth--
		}
	}
	return false
}
