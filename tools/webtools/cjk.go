package webtools

import (
	"sort"
	"unicode/utf8"
)

//go:generate go run ./internal/gencjk -o cjk_table.go

// The WHATWG multi-byte East Asian decoders (Encoding Standard, sections
// 12-15), over the index tables in cjk_table.go. Each is a loop over the
// page that looks at most four bytes ahead; where WHATWG "restores" bytes
// to the input after an error, the loop simply does not advance past
// them, so every byte is read a bounded number of times and the work is
// linear in the page. A lead byte cut off by the end of the page is one
// U+FFFD, as WHATWG's end-of-queue step says.

// cjkRune appends r, or U+FFFD where an index has no code point (0).
func cjkRune(out []byte, r rune) []byte {
	if r == 0 {
		r = utf8.RuneError
	}
	return utf8.AppendRune(out, r)
}

// cjkError appends U+FFFD for a failed two-byte sequence starting at i and
// returns how far to advance: past the lead only when the second byte is
// ASCII (WHATWG restores it, so markup after a stray lead survives), past
// both otherwise.
func cjkError(out []byte, trail byte) ([]byte, int) {
	out = utf8.AppendRune(out, utf8.RuneError)
	if trail < utf8.RuneSelf {
		return out, 1
	}
	return out, 2
}

func lookup(t []uint16, p int) rune {
	if 0 <= p && p < len(t) {
		return rune(t[p])
	}
	return 0
}

// decodeShiftJIS is WHATWG's Shift_JIS decoder.
func decodeShiftJIS(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/2)
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		case c == 0x80:
			out = utf8.AppendRune(out, 0x80)
			i++
		case 0xA1 <= c && c <= 0xDF:
			out = utf8.AppendRune(out, 0xFF61-0xA1+rune(c))
			i++
		case c <= 0x9F || 0xE0 <= c && c <= 0xFC:
			if i+1 == len(b) {
				out = utf8.AppendRune(out, utf8.RuneError)
				i++
				continue
			}
			t := b[i+1]
			p := -1
			if 0x40 <= t && t <= 0x7E || 0x80 <= t && t <= 0xFC {
				off, leadOff := 0x40, 0x81
				if t >= 0x7F {
					off = 0x41
				}
				if c >= 0xA0 {
					leadOff = 0xC1
				}
				p = (int(c)-leadOff)*188 + int(t) - off
			}
			var r rune
			if 8836 <= p && p <= 10715 {
				r = 0xE000 - 8836 + rune(p) // user-defined area: Private Use
			} else {
				r = lookup(jis0208Index[:], p)
			}
			if r == 0 {
				var n int
				out, n = cjkError(out, t)
				i += n
				continue
			}
			out = utf8.AppendRune(out, r)
			i += 2
		default:
			out = utf8.AppendRune(out, utf8.RuneError)
			i++
		}
	}
	return out
}

// decodeEUCJP is WHATWG's EUC-JP decoder: 0x8E then a half-width katakana
// byte, 0x8F then a jis0212 pair, or a jis0208 pair.
func decodeEUCJP(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/2)
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			out = append(out, c)
			i++
			continue
		}
		if c != 0x8E && c != 0x8F && (c < 0xA1 || c == 0xFF) {
			out = utf8.AppendRune(out, utf8.RuneError)
			i++
			continue
		}
		if i+1 == len(b) {
			out = utf8.AppendRune(out, utf8.RuneError)
			i++
			continue
		}
		t := b[i+1]
		switch {
		case c == 0x8E && 0xA1 <= t && t <= 0xDF:
			out = utf8.AppendRune(out, 0xFF61-0xA1+rune(t))
			i += 2
			continue
		case c == 0x8F && 0xA1 <= t && t <= 0xFE:
			// The pair's lead is t now, looked up in jis0212.
			if i+2 == len(b) {
				out = utf8.AppendRune(out, utf8.RuneError)
				i += 2
				continue
			}
			u := b[i+2]
			var r rune
			if 0xA1 <= u && u <= 0xFE {
				r = lookup(jis0212Index[:], (int(t)-0xA1)*94+int(u)-0xA1)
			}
			if r == 0 {
				var n int
				out, n = cjkError(out, u)
				i += 1 + n
				continue
			}
			out = utf8.AppendRune(out, r)
			i += 3
			continue
		}
		var r rune
		if 0xA1 <= c && c <= 0xFE && 0xA1 <= t && t <= 0xFE {
			r = lookup(jis0208Index[:], (int(c)-0xA1)*94+int(t)-0xA1)
		}
		if r == 0 {
			var n int
			out, n = cjkError(out, t)
			i += n
			continue
		}
		out = utf8.AppendRune(out, r)
		i += 2
	}
	return out
}

// decodeEUCKR is WHATWG's EUC-KR decoder (windows-949's extended pairs
// included).
func decodeEUCKR(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/2)
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		case 0x81 <= c && c <= 0xFE:
			if i+1 == len(b) {
				out = utf8.AppendRune(out, utf8.RuneError)
				i++
				continue
			}
			t := b[i+1]
			var r rune
			if 0x41 <= t && t <= 0xFE {
				r = lookup(eucKRIndex[:], (int(c)-0x81)*190+int(t)-0x41)
			}
			if r == 0 {
				var n int
				out, n = cjkError(out, t)
				i += n
				continue
			}
			out = utf8.AppendRune(out, r)
			i += 2
		default:
			out = utf8.AppendRune(out, utf8.RuneError)
			i++
		}
	}
	return out
}

// decodeBig5 is WHATWG's Big5 decoder (Big5-HKSCS: some pairs decode to
// plane 2, four to a letter and a combining mark).
func decodeBig5(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/2)
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		case 0x81 <= c && c <= 0xFE:
			if i+1 == len(b) {
				out = utf8.AppendRune(out, utf8.RuneError)
				i++
				continue
			}
			t := b[i+1]
			p := -1
			switch {
			case 0x40 <= t && t <= 0x7E:
				p = (int(c)-0x81)*157 + int(t) - 0x40
			case 0xA1 <= t && t <= 0xFE:
				p = (int(c)-0x81)*157 + int(t) - 0x62
			}
			switch p {
			case 1133:
				out = append(out, "\u00CA\u0304"...)
			case 1135:
				out = append(out, "\u00CA\u030C"...)
			case 1164:
				out = append(out, "\u00EA\u0304"...)
			case 1166:
				out = append(out, "\u00EA\u030C"...)
			default:
				r := lookup(big5Index[:], p)
				if r == 0 {
					var n int
					out, n = cjkError(out, t)
					i += n
					continue
				}
				if big5Plane2[p/8]&(1<<(p%8)) != 0 {
					r |= 0x20000
				}
				out = utf8.AppendRune(out, r)
			}
			i += 2
		default:
			out = utf8.AppendRune(out, utf8.RuneError)
			i++
		}
	}
	return out
}

// decodeGB18030 is WHATWG's gb18030 decoder, which is also its GBK
// decoder: 0x80 is the euro sign, a lead and a byte 0x30-0x39 start a
// four-byte sequence (BMP code points by gb18030Ranges, the other planes
// by rule), any other pair is looked up in gb18030Index.
func decodeGB18030(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/2)
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
			continue
		case c == 0x80:
			out = append(out, "\u20AC"...)
			i++
			continue
		case c == 0xFF:
			out = utf8.AppendRune(out, utf8.RuneError)
			i++
			continue
		}
		if i+1 == len(b) {
			out = utf8.AppendRune(out, utf8.RuneError)
			i++
			continue
		}
		t := b[i+1]
		if 0x30 <= t && t <= 0x39 {
			// Four bytes: lead, digit, 0x81-0xFE, digit. A page cut
			// inside is one U+FFFD; a wrong third or fourth byte is one
			// U+FFFD for the lead, and the rest is read again.
			if i+2 == len(b) || i+3 == len(b) && 0x81 <= b[i+2] && b[i+2] <= 0xFE {
				out = utf8.AppendRune(out, utf8.RuneError)
				i = len(b)
				continue
			}
			u := b[i+2]
			if u < 0x81 || u > 0xFE || b[i+3] < 0x30 || b[i+3] > 0x39 {
				out = utf8.AppendRune(out, utf8.RuneError)
				i++
				continue
			}
			p := ((int(c)-0x81)*10+int(t)-0x30)*1260 + (int(u)-0x81)*10 + int(b[i+3]) - 0x30
			out = appendGB18030Ranges(out, p)
			i += 4
			continue
		}
		var r rune
		switch {
		case 0x40 <= t && t <= 0x7E:
			r = lookup(gb18030Index[:], (int(c)-0x81)*190+int(t)-0x40)
		case 0x80 <= t && t <= 0xFE:
			r = lookup(gb18030Index[:], (int(c)-0x81)*190+int(t)-0x41)
		}
		if r == 0 {
			var n int
			out, n = cjkError(out, t)
			i += n
			continue
		}
		out = utf8.AppendRune(out, r)
		i += 2
	}
	return out
}

// appendGB18030Ranges appends WHATWG's "index gb18030 ranges code point"
// of four-byte pointer p, or U+FFFD where it is null.
func appendGB18030Ranges(out []byte, p int) []byte {
	switch {
	case p == 7457:
		return utf8.AppendRune(out, 0xE7C7)
	case p < gbRangesEnd:
		// The last range at or below p.
		k := sort.Search(len(gb18030Ranges), func(k int) bool { return int(gb18030Ranges[k][0]) > p }) - 1
		return utf8.AppendRune(out, rune(gb18030Ranges[k][1])+rune(p-int(gb18030Ranges[k][0])))
	case 189000 <= p && p <= 1237575:
		return utf8.AppendRune(out, 0x10000+rune(p-189000))
	}
	return utf8.AppendRune(out, utf8.RuneError)
}

// gbRangesEnd is the first four-byte pointer past gb18030Ranges; pointers
// up to 189000 are null, from there on they are U+10000 onward.
const gbRangesEnd = 39420

// cjkEncodingForLabel is the East Asian encoding label names, if any.
func cjkEncodingForLabel(label string) (textEncoding, bool) {
	i, found := sort.Find(len(cjkLabels), func(i int) int {
		switch {
		case label < cjkLabels[i].label:
			return -1
		case label > cjkLabels[i].label:
			return 1
		}
		return 0
	})
	if !found {
		return encUnknown, false
	}
	return encShiftJIS + textEncoding(cjkLabels[i].enc), true
}

// ISO-2022-JP's decoder states (WHATWG 13.2.1).
const (
	isoASCII = iota
	isoRoman
	isoKatakana
	isoLead
	isoTrail
	isoEscStart
	isoEsc
)

// decodeISO2022JP is WHATWG's ISO-2022-JP decoder: escape sequences
// switch between ASCII, JIS X 0201 Roman, half-width katakana and jis0208
// pairs. A bad escape is one U+FFFD for the ESC and its bytes are read
// again; two switches with nothing decoded between them are an error too
// (the output flag), as WHATWG says, so escapes cannot hide text.
func decodeISO2022JP(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/2)
	state, outState := isoASCII, isoASCII
	var lead byte
	flag := false // WHATWG's output flag: the last thing read was an escape
	fail := func() { out = utf8.AppendRune(out, utf8.RuneError) }
	for i := 0; ; {
		if i == len(b) {
			switch state {
			case isoTrail:
				fail()
			case isoEscStart:
				fail()
			case isoEsc:
				// The escape's lead is read again in outState: ESC's
				// U+FFFD here, the lead (ASCII) next.
				fail()
				state = outState
				i--
				flag = false
				continue
			}
			return out
		}
		c := b[i]
		switch state {
		case isoASCII, isoRoman:
			switch {
			case c == 0x1B:
				state = isoEscStart
			case state == isoRoman && c == 0x5C:
				out = append(out, "\u00A5"...)
			case state == isoRoman && c == 0x7E:
				out = append(out, "\u203E"...)
			case c < 0x80 && c != 0x0E && c != 0x0F:
				out = append(out, c)
			default:
				fail()
			}
			if c != 0x1B {
				flag = false
			}
			i++
		case isoKatakana:
			switch {
			case c == 0x1B:
				state = isoEscStart
			case 0x21 <= c && c <= 0x5F:
				out = utf8.AppendRune(out, 0xFF61-0x21+rune(c))
			default:
				fail()
			}
			if c != 0x1B {
				flag = false
			}
			i++
		case isoLead:
			switch {
			case c == 0x1B:
				state = isoEscStart
			case 0x21 <= c && c <= 0x7E:
				lead, state = c, isoTrail
			default:
				fail()
			}
			if c != 0x1B {
				flag = false
			}
			i++
		case isoTrail:
			switch {
			case c == 0x1B:
				state = isoEscStart
				fail()
			case 0x21 <= c && c <= 0x7E:
				state = isoLead
				out = cjkRune(out, lookup(jis0208Index[:94*94], (int(lead)-0x21)*94+int(c)-0x21))
			default:
				state = isoLead
				fail()
			}
			i++
		case isoEscStart:
			if c == 0x24 || c == 0x28 {
				lead, state = c, isoEsc
				i++
				continue
			}
			// c is read again in the state before the ESC.
			flag = false
			state = outState
			fail()
		case isoEsc:
			next := -1
			switch {
			case lead == 0x28 && c == 0x42:
				next = isoASCII
			case lead == 0x28 && c == 0x4A:
				next = isoRoman
			case lead == 0x28 && c == 0x49:
				next = isoKatakana
			case lead == 0x24 && (c == 0x40 || c == 0x42):
				next = isoLead
			}
			if next >= 0 {
				state, outState = next, next
				if flag {
					fail()
				}
				flag = true
				i++
				continue
			}
			// The escape's lead and c are read again.
			i--
			flag = false
			state = outState
			fail()
		}
	}
}
