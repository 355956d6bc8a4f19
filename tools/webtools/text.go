package webtools

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// extractText turns an HTML page into its title and its visible text:
// scripts, styles, noscript, template and svg dropped, tags become spaces,
// whitespace collapsed, character references decoded. Nothing is executed.
// contentType names the charset when the page does not.
//
// This is our own tokenizer rather than golang.org/x/net/html's, whose
// package init (an atom table, entity maps) and charset tables cost every
// jazz process about 0.3 ms and 130 KB of heap at start, though only
// web_fetch uses them. It tokenizes as x/net/html does (the WHATWG states
// that matter for text: tags and their quoted attributes, comments, bogus
// comments, doctypes, RCDATA, RAWTEXT, script data with its escapes,
// plaintext); text_test.go checks it against x/net/html over a corpus and
// a fuzzer, and names the few places it knowingly differs.
//
// Every construct is scanned once, forward: unterminated comments, tags
// and scripts end at the end of the page, in time linear in its size.
func extractText(body []byte, contentType string) (title, text string) {
	e, _ := pageEncoding(body, contentType)
	x := extract(decodePage(body, e))
	return x.title, x.text
}

// skippedElement names the elements whose content is not page text.
func skippedElement(name []byte) bool {
	return nameIs(name, "script") || nameIs(name, "style") || nameIs(name, "noscript") ||
		nameIs(name, "template") || nameIs(name, "svg")
}

// opensDespiteSlash names the elements a "/>" does not close: HTML
// elements that are not void ignore the slash, so "<script/>" still starts
// a script (and "<title/>" a title) whose text follows.
func opensDespiteSlash(name []byte) bool {
	return nameIs(name, "title") || nameIs(name, "script") || nameIs(name, "style") ||
		nameIs(name, "noscript") || nameIs(name, "template")
}

type extraction struct {
	title, text string
	// work is how many input bytes the tokenizer looked at, counting each
	// look; tests hold it to a small multiple of the input's length.
	work int
}

// extract tokenizes src (valid UTF-8) and keeps the text outside skipped
// elements. The page's title is the first <title> outside them; the text
// of any other <title> is neither title nor page text, as in a browser.
func extract(src []byte) extraction {
	z := tokenizer{src: src}
	var out, title collapser
	out.b = make([]byte, 0, len(src)/4)
	const (
		notInTitle = iota
		inTheTitle
		inOtherTitle
	)
	skip, where, haveTitle := 0, notInTitle, false
	for {
		k := z.next()
		switch k {
		case tokEOF:
			return extraction{title: string(title.b), text: string(out.b), work: z.work}
		case tokStartTag, tokSelfClosing:
			if k == tokStartTag || opensDespiteSlash(z.name) {
				switch {
				case nameIs(z.name, "title"):
					where = inOtherTitle
					if !haveTitle && skip == 0 {
						where, haveTitle = inTheTitle, true
					}
				case skippedElement(z.name):
					skip++
				}
			}
			out.space()
		case tokEndTag:
			switch {
			case nameIs(z.name, "title"):
				where = notInTitle
			case skippedElement(z.name) && skip > 0:
				skip--
			}
			out.space()
		case tokText, tokRCDATA, tokRawText:
			switch {
			case where == inTheTitle:
				title.text(z.text, k, &z.work)
			case where == notInTitle && skip == 0:
				out.text(z.text, k, &z.work)
			}
		}
	}
}

// collapser appends text with every run of white space (unicode.IsSpace,
// as strings.Fields) squeezed to one space and none at either end.
type collapser struct {
	b       []byte
	pending bool // white space seen since the last character written
}

// space is a tag's worth of separation.
func (c *collapser) space() { c.pending = len(c.b) > 0 }

func (c *collapser) rune(r rune) {
	if r < utf8.RuneSelf {
		c.byte(byte(r))
		return
	}
	if unicode.IsSpace(r) {
		c.space()
		return
	}
	c.flush()
	c.b = utf8.AppendRune(c.b, r)
}

func (c *collapser) byte(b byte) {
	switch b {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		c.space()
		return
	}
	c.flush()
	c.b = append(c.b, b)
}

func (c *collapser) flush() {
	if c.pending {
		c.b = append(c.b, ' ')
		c.pending = false
	}
}

// text appends a text token: character references decoded in text and
// RCDATA, NUL made U+FFFD in RCDATA and raw text (in text NUL stays, as
// x/net/html leaves it).
func (c *collapser) text(s []byte, k tokenKind, work *int) {
	refs, nul := k != tokRawText, k != tokText
	for i := 0; i < len(s); {
		b := s[i]
		switch {
		case b == '&' && refs:
			r1, r2, n := charRef(s[i:], false, work)
			if n == 0 {
				c.byte('&')
				i++
				continue
			}
			c.rune(r1)
			if r2 != 0 {
				c.rune(r2)
			}
			i += n
		case b == 0 && nul:
			c.rune(utf8.RuneError)
			i++
		case b < utf8.RuneSelf:
			c.byte(b)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			c.rune(r)
			i += n
		}
	}
	*work += len(s)
}

// cutRunes keeps the first n characters of s.
func cutRunes(s string, n int) (string, bool) {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos], true
		}
		i++
	}
	return s, false
}

// tokenKind is what tokenizer.next found.
type tokenKind uint8

const (
	tokEOF         tokenKind = iota
	tokText                  // text: references decoded, NUL kept
	tokRCDATA                // <title>, <textarea> content: references decoded, NUL replaced
	tokRawText               // <script>, <style>, <xmp>... content: taken as is, NUL replaced
	tokStartTag              // <p>
	tokSelfClosing           // <br/>
	tokEndTag                // </p>
	tokOther                 // comment, doctype, processing instruction, "</>": no text
)

// span is src[start:end].
type span struct{ start, end int }

type attr struct{ key, val span }

// tokenizer splits HTML into tokens the way golang.org/x/net/html's
// Tokenizer does, over a whole page in memory. It yields only what text
// extraction needs: text, tag names, and attributes when keepAttrs is set
// (the <meta> prescan).
type tokenizer struct {
	src []byte
	pos int
	// rawEnd is the element ("script", "title"...) whose raw text or
	// RCDATA comes next, up to its end tag; "" in ordinary content.
	rawEnd    string
	keepAttrs bool
	work      int

	// The current token.
	text  []byte
	name  []byte
	attrs []attr
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f'
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// nameIs compares a tag or attribute name to a lower-case ASCII name,
// ignoring ASCII case.
func nameIs(b []byte, name string) bool {
	if len(b) != len(name) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// rawTextElements are the start tags after which the tokenizer reads raw
// text or RCDATA up to the matching end tag.
var rawTextElements = [...]string{"iframe", "noembed", "noframes", "noscript", "plaintext", "script", "style", "textarea", "title", "xmp"}

// index finds c in src[from:] like bytes.IndexByte, as an absolute
// position, or -1; it counts the bytes it passed over.
func (z *tokenizer) index(from int, c byte) int {
	i := bytes.IndexByte(z.src[from:], c)
	if i < 0 {
		z.work += len(z.src) - from
		return -1
	}
	z.work += i + 1
	return from + i
}

func (z *tokenizer) skipSpace(i int) int {
	for i < len(z.src) && isSpaceByte(z.src[i]) {
		i++
		z.work++
	}
	return i
}

// next scans the next token.
func (z *tokenizer) next() tokenKind {
	src := z.src
	if z.rawEnd != "" {
		start, raw := z.pos, z.rawEnd
		z.rawEnd = ""
		switch raw {
		case "plaintext":
			z.pos = len(src)
			z.work += len(src) - start
		case "script":
			z.pos = z.scriptEnd(start)
		default:
			z.pos = z.rawTextEnd(start, raw)
		}
		if z.pos > start {
			z.text = src[start:z.pos]
			if raw == "title" || raw == "textarea" {
				return tokRCDATA
			}
			return tokRawText
		}
	}
	start := z.pos
	for i := start; ; {
		lt := z.index(i, '<')
		if lt < 0 || lt+1 >= len(src) {
			// A '<' at the very end is text too.
			z.pos = len(src)
			if start == len(src) {
				return tokEOF
			}
			z.text = src[start:]
			return tokText
		}
		c := src[lt+1]
		z.work++
		if !isLetter(c) && c != '/' && c != '!' && c != '?' {
			i = lt + 1
			continue
		}
		if lt > start {
			// The text before the markup first; the markup next time.
			z.pos = lt
			z.text = src[start:lt]
			return tokText
		}
		return z.markup(lt)
	}
}

// markup reads the tag, comment or declaration at src[lt] == '<'.
func (z *tokenizer) markup(lt int) tokenKind {
	src := z.src
	switch c := src[lt+1]; {
	case isLetter(c):
		end, selfClosing := z.tag(lt+1, true)
		if end < 0 {
			return z.eof()
		}
		z.pos = end
		for _, raw := range rawTextElements {
			if nameIs(z.name, raw) {
				z.rawEnd = raw
				break
			}
		}
		if selfClosing {
			return tokSelfClosing
		}
		return tokStartTag
	case c == '/':
		if lt+2 >= len(src) {
			// "</" at the end is text.
			z.pos, z.text = len(src), src[lt:]
			return tokText
		}
		z.work++
		switch c := src[lt+2]; {
		case c == '>':
			z.pos = lt + 3
			return tokOther
		case isLetter(c):
			end, _ := z.tag(lt+2, false)
			if end < 0 {
				return z.eof()
			}
			z.pos = end
			return tokEndTag
		}
		return z.bogusComment(lt + 2)
	case c == '!':
		if lt+3 < len(src) && src[lt+2] == '-' && src[lt+3] == '-' {
			z.work += 2
			return z.comment(lt + 4)
		}
		// A doctype, a CDATA section (in HTML content it is a bogus
		// comment), or any other "<!": all end at the next '>'.
		return z.bogusComment(lt + 2)
	}
	// "<?": a processing instruction is a bogus comment.
	return z.bogusComment(lt + 1)
}

// eof ends tokenizing: a tag cut by the end of the page is dropped, as
// x/net/html's ErrorToken does.
func (z *tokenizer) eof() tokenKind {
	z.pos = len(z.src)
	return tokEOF
}

func (z *tokenizer) bogusComment(from int) tokenKind {
	gt := z.index(from, '>')
	if gt < 0 {
		z.pos = len(z.src)
	} else {
		z.pos = gt + 1
	}
	return tokOther
}

// comment reads a comment whose data starts at from (after "<!--"). It
// ends at "-->", at "--!>", or at a '>' straight after "<!--" and any
// dashes ("<!-->", "<!--->"); else at the end of the page.
func (z *tokenizer) comment(from int) tokenKind {
	src := z.src
	dashes := from
	for dashes < len(src) && src[dashes] == '-' {
		dashes++
	}
	z.work += dashes - from
	for i := from; ; {
		gt := z.index(i, '>')
		if gt < 0 {
			z.pos = len(src)
			return tokOther
		}
		switch {
		case gt <= dashes,
			gt-2 >= from && src[gt-1] == '-' && src[gt-2] == '-',
			gt-3 >= from && src[gt-1] == '!' && src[gt-2] == '-' && src[gt-3] == '-':
			z.work += 3
			z.pos = gt + 1
			return tokOther
		}
		z.work += 3
		i = gt + 1
	}
}

// tag reads a start or end tag whose name starts at src[at], a letter,
// through its '>'. It returns the position after the '>' and whether the
// tag closes itself ("<br/>"), or -1 when the page ends first. Attribute
// values may be quoted, and a '>' inside quotes does not end the tag.
func (z *tokenizer) tag(at int, start bool) (end int, selfClosing bool) {
	src, n := z.src, len(z.src)
	z.attrs = z.attrs[:0]
	i := at + 1
	for ; i < n; i++ {
		c := src[i]
		if isSpaceByte(c) || c == '/' || c == '>' {
			break
		}
	}
	z.work += i - at
	z.name = src[at:i]
	if i < n && isSpaceByte(src[i]) {
		i++
	}
	var last attr // the last attribute read
	for {
		i = z.skipSpace(i)
		if i >= n {
			return -1, false
		}
		if src[i] == '>' {
			break
		}
		// The attribute's name: a leading '=' belongs to it.
		a := attr{key: span{i, i}}
		for ; i < n; i++ {
			c := src[i]
			if c == '=' && i == a.key.start {
				continue
			}
			if c == '=' || c == '/' || c == '>' || isSpaceByte(c) {
				break
			}
		}
		z.work += i - a.key.start
		a.key.end = i
		a.val = span{i, i}
		if i = z.skipSpace(i); i >= n {
			return -1, false
		}
		z.work++
		switch c := src[i]; c {
		case '/':
			i++
		case '=':
			if i = z.skipSpace(i + 1); i >= n {
				return -1, false
			}
			z.work++
			switch q := src[i]; q {
			case '>':
			case '"', '\'':
				closeQuote := z.index(i+1, q)
				if closeQuote < 0 {
					return -1, false
				}
				a.val = span{i + 1, closeQuote}
				i = closeQuote + 1
			default:
				j := i + 1
				for j < n && src[j] != '>' && !isSpaceByte(src[j]) {
					j++
				}
				z.work += j - i
				if j >= n {
					return -1, false
				}
				a.val = span{i, j}
				i = j
				if src[j] != '>' {
					i++
				}
			}
		}
		last = a
		if z.keepAttrs || start {
			z.attrs = append(z.attrs, a)
		}
	}
	gt := i
	// "/>" closes the tag, unless that '/' ends the value of the last
	// attribute kept (<a href=/>); x/net keeps only the first attribute
	// of each name, so a repeated one does not count.
	if start && src[gt-1] == '/' {
		selfClosing = true
		if last.val.end == gt && last.key.end > last.key.start && !z.keySeenBefore(len(z.attrs)-1) {
			selfClosing = false
		}
	}
	if !z.keepAttrs {
		z.attrs = z.attrs[:0]
	}
	return gt + 1, selfClosing
}

// keySeenBefore reports whether attribute i's name (ignoring ASCII case)
// is the name of an earlier attribute of the current tag.
func (z *tokenizer) keySeenBefore(i int) bool {
	k := z.attrs[i].key
	key := z.src[k.start:k.end]
	for _, a := range z.attrs[:i] {
		z.work += a.key.end - a.key.start
		if equalFoldASCII(z.src[a.key.start:a.key.end], key) {
			return true
		}
	}
	return false
}

func equalFoldASCII(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// attrValue is an attribute's value as x/net/html's TagAttr gives it:
// NUL replaced, character references decoded by the attribute rules. It
// is a copy the caller may change.
func (z *tokenizer) attrValue(a attr) []byte {
	s := z.src[a.val.start:a.val.end]
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		switch s[i] {
		case '&':
			r1, r2, n := charRef(s[i:], true, &z.work)
			if n == 0 {
				out = append(out, '&')
				i++
				continue
			}
			out = utf8.AppendRune(out, r1)
			if r2 != 0 {
				out = utf8.AppendRune(out, r2)
			}
			i += n
		case 0:
			out = utf8.AppendRune(out, utf8.RuneError)
			i++
		default:
			out = append(out, s[i])
			i++
		}
	}
	return out
}

// rawTextEnd finds where the raw text or RCDATA starting at from ends:
// at "</name" followed by white space, '/' or '>' (any case), or at the
// end of the page.
func (z *tokenizer) rawTextEnd(from int, name string) int {
	for i := from; ; {
		lt := z.index(i, '<')
		if lt < 0 {
			return len(z.src)
		}
		if z.endTagAt(lt, name) {
			return lt
		}
		i = lt + 1
	}
}

// endTagAt reports whether "</name" and a white space, '/' or '>' start
// at src[lt].
func (z *tokenizer) endTagAt(lt int, name string) bool {
	src := z.src
	end := lt + 2 + len(name)
	if end >= len(src) || src[lt+1] != '/' {
		z.work++
		return false
	}
	z.work += 2 + len(name)
	if !nameIs(src[lt+2:end], name) {
		return false
	}
	c := src[end]
	return isSpaceByte(c) || c == '/' || c == '>'
}

// scriptEnd finds where a script's text starting at from ends, following
// the WHATWG script data states: inside "<!--" a "<script" starts a
// double-escaped part whose "</script>" does not end the script. Like
// x/net/html (and so the extractor before this one), a '<' in the escaped
// part that starts neither an end tag nor a tag name returns to plain
// script data.
func (z *tokenizer) scriptEnd(from int) int {
	src, n := z.src, len(z.src)
	const (
		data = iota
		escaped
		escapedDash
		escapedDashDash
		doubleEscaped
		doubleEscapedDash
		doubleEscapedDashDash
	)
	state := data
	for i := from; i < n; {
		if state == data {
			// The common case: jump to the next '<'.
			lt := z.index(i, '<')
			if lt < 0 {
				return n
			}
			i = lt + 1
			if i >= n {
				return n
			}
			switch src[i] {
			case '/':
				if z.endTagAt(lt, "script") {
					return lt
				}
			case '!':
				if i+2 < n && src[i+1] == '-' && src[i+2] == '-' {
					z.work += 2
					i += 3
					state = escapedDashDash
				}
			}
			continue
		}
		c := src[i]
		z.work++
		i++
		switch c {
		case '-':
			switch state {
			case escaped, escapedDash:
				state++
			case doubleEscaped, doubleEscapedDash:
				state++
			}
			continue
		case '>':
			if state == escapedDashDash || state == doubleEscapedDashDash {
				state = data
				continue
			}
		case '<':
			lt := i - 1
			if state <= escapedDashDash {
				switch {
				case i < n && src[i] == '/':
					if z.endTagAt(lt, "script") {
						return lt
					}
					state = escaped
				case i < n && isLetter(src[i]):
					if z.scriptWordAt(i) {
						i += len("script") + 1
						state = doubleEscaped
					} else {
						state = escaped
					}
				default:
					state = data
				}
				continue
			}
			if i < n && src[i] == '/' && z.endTagAt(lt, "script") {
				// "</script>" leaves the double escape, back to the
				// escaped part, past the character after the name.
				i = lt + len("</script") + 1
				state = escaped
				continue
			}
			state = doubleEscaped
			continue
		}
		if state <= escapedDashDash {
			state = escaped
		} else {
			state = doubleEscaped
		}
	}
	return n
}

// scriptWordAt reports whether "script" and a white space, '/' or '>'
// start at src[i].
func (z *tokenizer) scriptWordAt(i int) bool {
	end := i + len("script")
	z.work += len("script") + 1
	if end >= len(z.src) || !nameIs(z.src[i:end], "script") {
		return false
	}
	c := z.src[end]
	return isSpaceByte(c) || c == '/' || c == '>'
}
