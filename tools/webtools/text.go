package webtools

import (
	"bytes"
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// skipped are the elements whose text is not page text: scripts (never
// run), styles, and the like.
var skipped = map[string]bool{"script": true, "style": true, "noscript": true, "template": true, "svg": true}

// extractText turns an HTML page into its title and its visible text:
// scripts and styles dropped, tags become spaces, whitespace collapsed,
// entities decoded. Nothing is executed. contentType names the charset
// when the page does not.
func extractText(body []byte, contentType string) (title, text string) {
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		r = bytes.NewReader(body)
	}
	z := html.NewTokenizer(r)
	var out, t strings.Builder
	skip, inTitle := 0, false
	for {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() != io.EOF && out.Len() == 0 {
				return collapse(t.String()), ""
			}
			return collapse(t.String()), collapse(out.String())
		case html.StartTagToken:
			name, _ := z.TagName()
			switch n := string(name); {
			case n == "title":
				inTitle = true
			case skipped[n]:
				skip++
			}
			out.WriteByte(' ')
		case html.EndTagToken:
			name, _ := z.TagName()
			switch n := string(name); {
			case n == "title":
				inTitle = false
			case skipped[n] && skip > 0:
				skip--
			}
			out.WriteByte(' ')
		case html.SelfClosingTagToken:
			out.WriteByte(' ')
		case html.TextToken:
			switch {
			case inTitle:
				t.Write(z.Text())
			case skip == 0:
				out.Write(z.Text())
			}
		}
	}
}

// collapse squeezes every run of whitespace to one space and trims.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

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
