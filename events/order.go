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
