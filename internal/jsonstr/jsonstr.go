// Package jsonstr writes Go strings as JSON strings byte for byte as
// encoding/json does, without reflection: the hand-written encoders (the
// run's envelope, the provider's request body) share this one.
package jsonstr

import (
	"math/bits"
	"unicode/utf8"
)

// Append writes s as a JSON string exactly as json.Marshal
// does: HTML characters (< > &), control characters, U+2028 and U+2029
// escaped as \u sequences (\b \f \n \r \t \" \\ short, hex in lower
// case), each byte of invalid UTF-8 as \ufffd. Runs of bytes that need
// none of that, most of any text, are skipped eight at a time; a word
// that holds one is skipped up to its first such byte, which is then
// written, and the scan goes on from the byte after it.
func Append(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	b = append(b, '"')
	done := 0 // s[:done] is written
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			// Which of the 8 bytes may need escaping: not ASCII, below 0x20,
			// or one of " \\ < > &, by the word-at-a-time tests: (v - 0x01…01)
			// &^ v & 0x80…80 marks the bytes of v that are zero (a byte of x
			// equal to c is a zero of x ^ c·0x01…01), and (x - n·0x01…01) &^ x
			// & 0x80…80 the ASCII bytes of x below n. A mark can be wrong only
			// above a right one (a borrow runs upward from a byte that
			// matched), so the lowest mark is always a byte to write out.
			// Written out here: as a call (too big to inline) it cost more
			// than it saved.
			w := s[i : i+8]
			x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
				uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
			q, bs, lt, gt, amp := x^('"'*ones), x^('\\'*ones), x^('<'*ones), x^('>'*ones), x^('&'*ones)
			m := (x | (x-0x20*ones)&^x | (q-ones)&^q | (bs-ones)&^bs | (lt-ones)&^lt | (gt-ones)&^gt | (amp-ones)&^amp) & highs
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if plainASCII(c) {
				i++
				continue
			}
			b = append(b, s[done:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default: // the other controls, < > &
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			done = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[done:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[done:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		done = i
	}
	b = append(b, s[done:]...)
	return append(b, '"')
}

// plainASCII reports whether an ASCII byte is written as itself.
func plainASCII(c byte) bool {
	return c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}
