package webtools

import (
	"bytes"
	"mime"
	"sort"
	"strings"
	"unicode/utf8"
)

//go:generate go run ./internal/gensinglebyte -o singlebyte_table.go

// textEncoding is a character encoding web_fetch decodes by hand: UTF-8,
// UTF-16LE/BE, windows-1252, the other WHATWG legacy single-byte
// encodings (windows-1251, ISO-8859-2..16, KOI8-R/U, IBM866, macintosh...)
// from the static tables in singlebyte_table.go, and the East Asian
// multi-byte ones (Shift_JIS, EUC-JP, ISO-2022-JP, EUC-KR, GBK, gb18030,
// Big5; cjk.go)
// from the static index tables in cjk_table.go. golang.org/x/text's
// decoders (charmap, the East Asian tables, htmlindex) are not linked: they
// would cost every jazz process their package initialization even though
// only a fetch uses them; charmap alone still runs an init (it copies four
// encodings into its All list) and adds about 110 KB. Our tables are
// constant data, with no init and no heap until a page is decoded.
//
// A page declaring any other charset (x-user-defined, replacement) is
// read as if it declared nothing: UTF-8 when its bytes are valid UTF-8,
// else windows-1252, so its ASCII (markup, numbers, Latin
// words) always comes through and the rest turns into readable-but-wrong
// letters rather than an error.
type textEncoding uint8

const (
	encUnknown textEncoding = iota
	encUTF8
	encUTF16LE
	encUTF16BE
	encWindows1252
	// The East Asian multi-byte encodings (cjk.go), in the order of
	// internal/gencjk's names, which cjkLabels counts from encShiftJIS.
	encShiftJIS
	encEUCJP
	encEUCKR
	encGBK
	encGB18030
	encBig5
	encISO2022JP
	// encSingleByte is the first of the numSingleByte encodings of
	// singleByteTables, in its order.
	encSingleByte
)

func (e textEncoding) String() string {
	switch e {
	case encUTF8:
		return "utf-8"
	case encUTF16LE:
		return "utf-16le"
	case encUTF16BE:
		return "utf-16be"
	case encWindows1252:
		return "windows-1252"
	case encShiftJIS:
		return "shift_jis"
	case encEUCJP:
		return "euc-jp"
	case encEUCKR:
		return "euc-kr"
	case encGBK:
		return "gbk"
	case encGB18030:
		return "gb18030"
	case encBig5:
		return "big5"
	case encISO2022JP:
		return "iso-2022-jp"
	}
	if i, ok := e.singleByte(); ok {
		return singleByteNames[i]
	}
	return "unknown"
}

// singleByte says which of singleByteTables e is, if it is one.
func (e textEncoding) singleByte() (int, bool) {
	if e >= encSingleByte && int(e-encSingleByte) < numSingleByte {
		return int(e - encSingleByte), true
	}
	return 0, false
}

// Where a page's encoding was found, for tests and diagnostics.
const (
	fromBOM    = "bom"
	fromHeader = "header"
	fromMeta   = "meta"
	fromSniff  = "sniff"
)

// encodingForLabel maps a charset label to its encoding as the WHATWG
// Encoding Standard does (latin1 and US-ASCII labels are windows-1252,
// "utf-16" is little-endian). Labels of encodings we do not carry are
// encUnknown.
func encodingForLabel(label string) textEncoding {
	label = strings.ToLower(strings.TrimSpace(label))
	switch label {
	case "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf-8", "utf8", "x-unicode20utf8":
		return encUTF8
	case "unicodefffe", "utf-16be":
		return encUTF16BE
	case "csunicode", "iso-10646-ucs-2", "ucs-2", "unicode", "unicodefeff", "utf-16", "utf-16le":
		return encUTF16LE
	case "ansi_x3.4-1968", "ascii", "cp1252", "cp819", "csisolatin1", "ibm819", "iso-8859-1", "iso-ir-100",
		"iso8859-1", "iso88591", "iso_8859-1", "iso_8859-1:1987", "l1", "latin1", "us-ascii", "windows-1252", "x-cp1252":
		return encWindows1252
	}
	if e, ok := cjkEncodingForLabel(label); ok {
		return e
	}
	i, found := sort.Find(len(singleByteLabels), func(i int) int { return strings.Compare(label, singleByteLabels[i].label) })
	if found {
		return encSingleByte + textEncoding(singleByteLabels[i].enc)
	}
	return encUnknown
}

// prescanLen is how much of a page the <meta> prescan reads (WHATWG).
const prescanLen = 1024

// pageEncoding finds a page's encoding in the WHATWG order: a byte order
// mark, the Content-Type charset, a <meta> in the first 1024 bytes, then
// a guess from the bytes. It follows golang.org/x/net/html/charset, with
// one difference: when nothing is declared and the first 1024 bytes are
// ASCII, the whole page is checked for UTF-8 (x/net guesses windows-1252,
// which garbles every UTF-8 page with a long ASCII head and no <meta>).
func pageEncoding(body []byte, contentType string) (textEncoding, string) {
	switch {
	case bytes.HasPrefix(body, []byte{0xFE, 0xFF}):
		return encUTF16BE, fromBOM
	case bytes.HasPrefix(body, []byte{0xFF, 0xFE}):
		return encUTF16LE, fromBOM
	case bytes.HasPrefix(body, []byte{0xEF, 0xBB, 0xBF}):
		return encUTF8, fromBOM
	}
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		if e := encodingForLabel(params["charset"]); e != encUnknown {
			return e, fromHeader
		}
	}
	head := body[:min(len(body), prescanLen)]
	if e := metaCharset(head); e != encUnknown {
		return e, fromMeta
	}
	if validUTF8Prefix(head) || validUTF8Prefix(body) {
		return encUTF8, fromSniff
	}
	return encWindows1252, fromSniff
}

// validUTF8Prefix reports whether b is valid UTF-8 but for a rune cut at
// its end (the prescan window, or the fetch's size cap, may cut one) and
// has at least one non-ASCII byte, as x/net's guess does.
func validUTF8Prefix(b []byte) bool {
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if b[i] < utf8.RuneSelf {
			break
		}
		if utf8.RuneStart(b[i]) {
			b = b[:i]
			break
		}
	}
	ascii := true
	for _, c := range b {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	return !ascii && utf8.Valid(b)
}

// metaCharset runs the <meta> prescan over head: the first <meta> with a
// charset attribute, or with http-equiv="content-type" and a content
// naming a charset, decides. A page cannot declare UTF-16 in itself (it
// would have had to be read already), so such a <meta> means UTF-8.
func metaCharset(head []byte) textEncoding {
	z := tokenizer{src: head, keepAttrs: true}
	for {
		k := z.next()
		if k == tokEOF {
			return encUnknown
		}
		if (k != tokStartTag && k != tokSelfClosing) || !nameIs(z.name, "meta") {
			continue
		}
		e, found := metaDeclares(&z)
		if !found {
			continue
		}
		if e == encUTF16LE || e == encUTF16BE {
			e = encUTF8
		}
		if e != encUnknown {
			return e
		}
	}
}

// metaDeclares reads the current <meta>'s attributes (the first of each
// name counts) as the prescan does.
func metaDeclares(z *tokenizer) (e textEncoding, found bool) {
	const (
		dontKnow = iota
		needPragma
		noPragma
	)
	pragma, gotPragma := dontKnow, false
	for i, a := range z.attrs {
		if a.key.start == a.key.end || z.keySeenBefore(i) {
			continue
		}
		val := asciiLower(z.attrValue(a))
		switch key := z.src[a.key.start:a.key.end]; {
		case nameIs(key, "http-equiv"):
			if string(val) == "content-type" {
				gotPragma = true
			}
		case nameIs(key, "content"):
			if e == encUnknown {
				if label := charsetFromContent(string(val)); label != "" {
					if e = encodingForLabel(label); e != encUnknown {
						pragma = needPragma
					}
				}
			}
		case nameIs(key, "charset"):
			e = encodingForLabel(string(val))
			pragma = noPragma
		}
	}
	if pragma == dontKnow || pragma == needPragma && !gotPragma {
		return encUnknown, false
	}
	return e, true
}

func asciiLower(b []byte) []byte {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return b
}

// charsetFromContent finds "charset=label" in a <meta content> value
// (WHATWG "extracting a character encoding from a meta element").
func charsetFromContent(s string) string {
	for {
		i := strings.Index(s, "charset")
		if i < 0 {
			return ""
		}
		s = strings.TrimLeft(s[i+len("charset"):], "\t\n\f\r ")
		if !strings.HasPrefix(s, "=") {
			continue
		}
		s = strings.TrimLeft(s[1:], "\t\n\f\r ")
		if s == "" {
			return ""
		}
		if q := s[0]; q == '"' || q == '\'' {
			end := strings.IndexByte(s[1:], q)
			if end < 0 {
				return ""
			}
			return s[1 : 1+end]
		}
		if end := strings.IndexAny(s, "; \t\n\f\r"); end >= 0 {
			return s[:end]
		}
		return s
	}
}

// decodePage turns body into UTF-8 text in encoding e, without its byte
// order mark. Invalid input becomes U+FFFD, one per maximal ill-formed
// part (UTF-8, as WHATWG and x/text decode it) or unpaired surrogate
// (UTF-16), so the result is always valid UTF-8 and the text that reaches
// the model as JSON is what we extracted.
func decodePage(body []byte, e textEncoding) []byte {
	switch e {
	case encUTF16LE, encUTF16BE:
		return decodeUTF16(body, e == encUTF16BE)
	case encWindows1252:
		return decodeWindows1252(body)
	case encShiftJIS:
		return decodeShiftJIS(body)
	case encEUCJP:
		return decodeEUCJP(body)
	case encEUCKR:
		return decodeEUCKR(body)
	case encGBK, encGB18030:
		return decodeGB18030(body)
	case encBig5:
		return decodeBig5(body)
	case encISO2022JP:
		return decodeISO2022JP(body)
	}
	if i, ok := e.singleByte(); ok {
		return decodeSingleByte(body, &singleByteTables[i])
	}
	body = bytes.TrimPrefix(body, []byte{0xEF, 0xBB, 0xBF})
	if utf8.Valid(body) {
		return body
	}
	out := make([]byte, 0, len(body)+len(body)/8)
	for len(body) > 0 {
		r, n := utf8.DecodeRune(body)
		if r == utf8.RuneError && n == 1 {
			n = illFormedLen(body)
		}
		out = utf8.AppendRune(out, r)
		body = body[n:]
	}
	return out
}

// illFormedLen is the length of the maximal ill-formed part at the start
// of b: a lead byte and the continuation bytes that could still have made
// a valid sequence (Unicode's "maximal subpart", which WHATWG's decoder
// turns into one U+FFFD).
func illFormedLen(b []byte) int {
	var need int
	lo, hi := byte(0x80), byte(0xBF) // the range of the second byte
	switch c := b[0]; {
	case 0xC2 <= c && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case 0xE1 <= c && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case 0xF1 <= c && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}

// decodeWindows1252 is WHATWG's windows-1252, the encoding of every latin1
// label: bytes 0x80-0x9F are its C1 remapping, 0xA0-0xFF are Latin-1.
func decodeWindows1252(body []byte) []byte {
	return decodeHigh(body, func(c byte) rune {
		if c < 0xA0 {
			return c1Remap[c-0x80]
		}
		return rune(c)
	})
}

// decodeSingleByte decodes body with table, the code points of bytes
// 0x80-0xFF (0xFFFD where the encoding leaves a byte undefined).
func decodeSingleByte(body []byte, table *[128]uint16) []byte {
	return decodeHigh(body, func(c byte) rune { return rune(table[c-0x80]) })
}

// decodeHigh decodes a single-byte encoding: bytes below 0x80 are ASCII
// in every WHATWG single-byte encoding, high maps the others. A page
// with no high byte is returned as it is.
func decodeHigh(body []byte, high func(c byte) rune) []byte {
	n := 0
	for _, c := range body {
		if c >= 0x80 {
			n++
		}
	}
	if n == 0 {
		return body
	}
	out := make([]byte, 0, len(body)+2*n)
	for _, c := range body {
		if c < 0x80 {
			out = append(out, c)
		} else {
			out = utf8.AppendRune(out, high(c))
		}
	}
	return out
}

func decodeUTF16(body []byte, bigEndian bool) []byte {
	unit := func(i int) rune {
		if bigEndian {
			return rune(body[i])<<8 | rune(body[i+1])
		}
		return rune(body[i+1])<<8 | rune(body[i])
	}
	i := 0
	if len(body) >= 2 && unit(0) == 0xFEFF {
		i = 2
	}
	out := make([]byte, 0, len(body)+len(body)/2)
	for ; i+1 < len(body); i += 2 {
		r := unit(i)
		switch {
		case r < 0xD800 || r > 0xDFFF:
		case r <= 0xDBFF && i+3 < len(body):
			if lo := unit(i + 2); 0xDC00 <= lo && lo <= 0xDFFF {
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				i += 2
			} else {
				r = 0xFFFD
			}
		default:
			r = 0xFFFD
		}
		out = utf8.AppendRune(out, r)
	}
	if i < len(body) {
		// A lone last byte is half a code unit.
		out = utf8.AppendRune(out, 0xFFFD)
	}
	return out
}
