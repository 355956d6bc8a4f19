package webtools

//go:generate go run ./internal/genentities -o entity_table.go

// c1Remap is what the numeric references &#128; to &#159; stand for, and
// what windows-1252 bytes 0x80 to 0x9F decode to: the WHATWG tables agree
// (the five bytes windows-1252 leaves unassigned map to the C1 control of
// the same number).
var c1Remap = [32]rune{
	0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
	0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
	0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
	0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
}

// charRef decodes the character reference at the start of s (s[0] is '&')
// the way HTML's tokenizer does, as golang.org/x/net/html does it. It
// returns the code points (r2 is 0 for one) and how many bytes the
// reference takes; n is 0 when s does not start a reference, and the '&'
// is then text. inAttr selects the rules for attribute values: there a
// legacy name without ';' is not decoded before '=' and the longest-prefix
// fallback is off. work counts the bytes looked at.
func charRef(s []byte, inAttr bool, work *int) (r1, r2 rune, n int) {
	if len(s) < 2 {
		return 0, 0, 0
	}
	if s[1] == '#' {
		return numericRef(s, work)
	}
	// The name is the run of ASCII letters and digits, then an optional
	// ';'. A run longer than any name can only match by its prefix, so
	// the scan stops there and the work per '&' stays bounded.
	i := 1
	for i < len(s) && i <= longestEntity+1 && isAlnum(s[i]) {
		i++
	}
	*work += i
	if i < len(s) && s[i] == ';' {
		i++
	}
	name := s[1:i]
	if len(name) == 0 {
		return 0, 0, 0
	}
	if inAttr && name[len(name)-1] != ';' && i < len(s) && s[i] == '=' {
		return 0, 0, 0
	}
	if r1, r2, ok := lookupEntity(name); ok {
		return r1, r2, i
	}
	if inAttr {
		return 0, 0, 0
	}
	// Text keeps the longest legacy name that is a prefix ("&notit;" is
	// "¬it;"); those names are all one code point and at most
	// longestBareEntity long.
	for j := min(len(name)-1, longestBareEntity); j > 1; j-- {
		if r1, _, ok := lookupEntity(name[:j]); ok {
			return r1, 0, j + 1
		}
	}
	return 0, 0, 0
}

// numericRef decodes "&#123;" and "&#x7B;" (the ';' is optional), with
// the WHATWG replacements: 0, surrogates and anything past U+10FFFF become
// U+FFFD, and 0x80-0x9F are read as windows-1252.
func numericRef(s []byte, work *int) (r rune, _ rune, n int) {
	if len(s) < 3 {
		return 0, 0, 0
	}
	i, base := 2, rune(10)
	if s[i] == 'x' || s[i] == 'X' {
		i, base = 3, 16
	}
	start, x := i, rune(0)
	for ; i < len(s); i++ {
		d := digit(s[i], base)
		if d < 0 {
			break
		}
		// Past U+10FFFF the value no longer matters, only the digits'
		// length: stop growing it so it cannot wrap.
		if x <= 0x10FFFF {
			x = x*base + d
		}
	}
	*work += i
	if i == start {
		return 0, 0, 0
	}
	if i < len(s) && s[i] == ';' {
		i++
	}
	switch {
	case 0x80 <= x && x <= 0x9F:
		x = c1Remap[x-0x80]
	case x == 0, 0xD800 <= x && x <= 0xDFFF, x > 0x10FFFF:
		x = 0xFFFD
	}
	return x, 0, i
}

func digit(c byte, base rune) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case base == 16 && 'a' <= c && c <= 'f':
		return rune(c-'a') + 10
	case base == 16 && 'A' <= c && c <= 'F':
		return rune(c-'A') + 10
	}
	return -1
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// lookupEntity finds name (without '&', with its ';' if it has one) in
// the generated table by binary search.
func lookupEntity(name []byte) (r1, r2 rune, ok bool) {
	lo, hi := 0, entityCount
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		start := 0
		if m > 0 {
			start = int(entityEnds[m-1])
		}
		switch c := compareName(entityNames[start:entityEnds[m]], name); {
		case c == 0:
			return entityRunes[m][0], entityRunes[m][1], true
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return 0, 0, false
}

// compareName is strings.Compare(a, string(b)) without the conversion.
func compareName(a string, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}
