package webtools

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jazz-run/jazz/internal/testutil/linked"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// The oracle is the extractor web_fetch had before this package grew its
// own tokenizer (x/net/html's Tokenizer over x/net/html/charset's reader),
// kept here so the new one is checked against it. x/net/html is a test
// dependency only; TestJazzLinksNoXNetHTML keeps it that way.

var oldSkipped = map[string]bool{"script": true, "style": true, "noscript": true, "template": true, "svg": true}

// oldExtractText is the old extractText, line for line, when corrected is
// false. corrected applies the two rules the new extractor fixes on
// purpose (see TestKnownDifferences):
//   - "/>" on <script>, <style>, <noscript>, <template> or <title> does
//     not close it (browsers ignore the slash there; the old code printed
//     the script that followed <script/>);
//   - the title is the first <title> outside skipped elements, and text
//     of any other <title> is not page text (the old code appended every
//     <title>, so each inline <svg><title>icon</title></svg> joined the
//     page title).
func oldExtractText(body []byte, contentType string, corrected bool) (title, text string) {
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		r = bytes.NewReader(body)
	}
	z := html.NewTokenizer(r)
	var out, t strings.Builder
	skip, inTitle := 0, false
	otherTitle, haveTitle := false, false
	for {
		tt := z.Next()
		if corrected && tt == html.SelfClosingTagToken {
			if name, _ := z.TagName(); opensDespiteSlash(name) {
				switch string(name) {
				case "title":
					otherTitle = haveTitle || skip > 0
					inTitle = !otherTitle
					haveTitle = haveTitle || inTitle
				default:
					skip++
				}
				out.WriteByte(' ')
				continue
			}
		}
		switch tt {
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
				if corrected {
					otherTitle = haveTitle || skip > 0
					inTitle = !otherTitle
					haveTitle = haveTitle || inTitle
				}
			case oldSkipped[n]:
				skip++
			}
			out.WriteByte(' ')
		case html.EndTagToken:
			name, _ := z.TagName()
			switch n := string(name); {
			case n == "title":
				inTitle, otherTitle = false, false
			case oldSkipped[n] && skip > 0:
				skip--
			}
			out.WriteByte(' ')
		case html.SelfClosingTagToken:
			out.WriteByte(' ')
		case html.TextToken:
			switch {
			case inTitle:
				t.Write(z.Text())
			case otherTitle:
			case skip == 0:
				out.Write(z.Text())
			}
		}
	}
}

// collapse squeezes every run of whitespace to one space and trims.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// oracle says what extractText should give for body: the corrected old
// extractor's answer, after the normalizations below, each a class of
// input where we knowingly differ from x/net/html. skip is set (and says
// why) when no comparison is meaningful.
func oracle(body []byte, contentType string) (title, text string, norm func(string) string, skip string) {
	_, xname, _ := charset.DetermineEncoding(body, contentType)
	// Charsets we do not carry (see textEncoding): x/net decodes them
	// with x/text's tables, we read the bytes as undeclared.
	if encodingForLabel(xname) == encUnknown {
		return "", "", nil, "x/net decodes " + xname + ", which we do not carry"
	}
	e, how := pageEncoding(body, contentType)
	ct := contentType
	if how == fromSniff && e == encUTF8 {
		// Undeclared UTF-8: x/net looks only at the first 1024 bytes
		// (so a long ASCII head makes it guess windows-1252), and what
		// it guesses is UTF-8 goes to the tokenizer undecoded, invalid
		// bytes and all. We check the whole page and decode it, as for a
		// page that declares UTF-8.
		ct = "text/html; charset=utf-8"
	} else if e.String() != xname {
		return "", "", nil, "encoding mismatch: x/net " + xname + ", ours " + e.String() + " from " + how
	}
	if ref := cjkRef(e); ref != nil {
		// The East Asian encodings: x/text's decoders depart from WHATWG
		// on malformed input (TestCJKXTextDepartures), so the old
		// extractor is given the page as the literal WHATWG reading
		// decodes it (cjk_ref_test.go); cjk_test.go checks our decoders
		// against that reading and against x/text.
		body, ct = ref(body), "text/html; charset=utf-8"
	}
	title, text = oldExtractText(body, ct, true)
	// x/net decodes a byte order mark into U+FEFF; we drop it, as the
	// WHATWG decode does. Only a mark: a U+FEFF after anything else is
	// page text, and both keep it.
	if bytes.HasPrefix(body, []byte("\xef\xbb\xbf")) || bytes.HasPrefix(body, []byte("\xfe\xff")) || bytes.HasPrefix(body, []byte("\xff\xfe")) {
		text = strings.TrimPrefix(text, "\ufeff")
	}
	text = collapse(text)
	norm = func(s string) string { return s }
	switch e {
	case encUTF16LE, encUTF16BE:
		// x/text reads an unpaired trailing surrogate and the trailing
		// surrogate after it as one U+FFFD; WHATWG (and we) give one
		// each (testdata/fuzz/FuzzExtractText/4d528f3fe5671cc0).
		norm = squeezeReplacements
	case encWindows1252:
		// x/text's windows-1252 leaves 0x81, 0x8D, 0x8F, 0x90 and 0x9D
		// undecoded (U+FFFD); WHATWG maps them to the C1 controls.
		norm = strings.NewReplacer("\u0081", "\uFFFD", "\u008D", "\uFFFD", "\u008F", "\uFFFD", "\u0090", "\uFFFD", "\u009D", "\uFFFD").Replace
	}
	return title, text, norm, ""
}

// squeezeReplacements makes each run of U+FFFD one.
func squeezeReplacements(s string) string {
	for strings.Contains(s, "\uFFFD\uFFFD") {
		s = strings.ReplaceAll(s, "\uFFFD\uFFFD", "\uFFFD")
	}
	return s
}

// workBound is how many looks per input byte the tokenizer may take.
const workBound = 4

// checkExtract compares extractText with the oracle and checks what must
// hold for any input: valid UTF-8 out, work linear in the input.
func checkExtract(t *testing.T, body []byte, contentType string) {
	t.Helper()
	e, _ := pageEncoding(body, contentType)
	src := decodePage(body, e)
	if !utf8.Valid(src) {
		t.Fatalf("decoded page is not UTF-8: %q", src)
	}
	x := extract(src)
	if !utf8.ValidString(x.title) || !utf8.ValidString(x.text) {
		t.Fatalf("invalid UTF-8 out: title %q text %q", x.title, x.text)
	}
	if x.work > workBound*len(src)+16 {
		t.Fatalf("work %d for %d bytes", x.work, len(src))
	}
	if x.title != collapse(x.title) || x.text != collapse(x.text) {
		t.Fatalf("not collapsed: title %q text %q", x.title, x.text)
	}
	wantTitle, wantText, norm, skip := oracle(body, contentType)
	if skip != "" {
		if strings.HasPrefix(skip, "encoding mismatch") {
			t.Fatalf("%s for %q (content type %q)", skip, body, contentType)
		}
		return
	}
	if norm(x.title) != norm(wantTitle) || norm(x.text) != norm(wantText) {
		t.Fatalf("input %q (content type %q):\n title %q\n  want %q\n text %q\n want %q", body, contentType, x.title, wantTitle, x.text, wantText)
	}
}

var corpusTypes = []string{"text/html", "text/html; charset=utf-8", "text/html; charset=ISO-8859-1", "text/html; charset=utf-16be", "text/html; charset=shift_jis", "application/xhtml+xml; charset=\"us-ascii\"", "text/html; charset=bogus"}

func corpus(t testing.TB) map[string][]byte {
	files, err := filepath.Glob("testdata/pages/*.html")
	if err != nil || len(files) < 10 {
		t.Fatalf("corpus: %d pages, %v", len(files), err)
	}
	pages := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pages[filepath.Base(f)] = b
	}
	return pages
}

func TestExtractMatchesXNetOnCorpus(t *testing.T) {
	for name, page := range corpus(t) {
		for _, ct := range corpusTypes {
			t.Run(name+"/"+ct, func(t *testing.T) { checkExtract(t, page, ct) })
		}
		// Every prefix too: pages cut by the size cap end mid-construct.
		t.Run(name+"/prefixes", func(t *testing.T) {
			for i := range len(page) {
				checkExtract(t, page[:i], "text/html")
			}
		})
	}
}

// TestCorpusReadsRight checks what a reader of the pages sees, not only
// that we agree with x/net.
func TestCorpusReadsRight(t *testing.T) {
	pages := corpus(t)
	for _, c := range []struct {
		page, ct, title string
		has, hasNot     []string
	}{
		{"news-article.html", "text/html", "City council approves new bike lanes – The Daily Ledger",
			[]string{"Skip to content Home Local Sports", "7–2", "12 km", "“It’s about safety,” said Councillor O’Brien.", "June & ends", "€4.2 million — about €350,000", "Parking fees rise", "© 2024"},
			[]string{"gtag", "Open menu", "font-family", "schema.org", "pixel", "{{body}}", "analytics", "not text"}},
		{"blog-legacy.html", "text/html", "Café Notes - Winter Menu",
			[]string{"Crème brûlée", "“Smart” quotes … € 5 – Naïve", "Price list © 1999 & copy; <tm> ¬it; ∉ &amp;", "Full menu"},
			[]string{"popup", "SCR", "html5shiv", "enable JavaScript"}},
		{"docs-page.html", "text/html", "strings.Fields — Go Packages",
			[]string{`fmt.Printf("Fields are: %q", strings.Fields(" foo bar baz "))`, "if 1 < 2 && 3 > 2", "x < y && <b>not a tag</b>", "<b>literal &amp; raw</b>", "Name Since Fields go1.0"}, nil},
		{"utf16le-bom.html", "text/html", "Ünïcödé 16 — 𝄞 clef", []string{"naïve café, 日本, 𝄞 music & more."}, []string{"\ufeff"}},
		{"utf16be-bom.html", "text/html; charset=utf-8", "Ünïcödé 16 — 𝄞 clef", []string{"naïve café, 日本, 𝄞 music & more."}, nil},
		{"utf8-undeclared-long-head.html", "text/html", "Undeclared", []string{"It’s “UTF-8” — café, Ærø, Zürich."}, []string{"margin"}},
		{"xhtml-cdata.html", "application/xhtml+xml", "XHTML — Test", []string{"First second third", "after cdata", "x < 2", "Icons: done"}, []string{"alert", "Logo", "SVG text", "bogus comment"}},
		{"broken-markup.html", "text/html", "Broken <b>page</b>",
			[]string{"bold both italic?", "quoted gt", "Stray closers and empty and bogus.", "1 < 2, 3 <4, a Numeric:", "Numeric: ABC \ufffd \ufffd € \ufffd \ufffd &#; &#x;", "Comments: abcde", "g", "after PI; decl after decl", "slash value", "dup", "iframe fallback &amp; text"},
			[]string{"Second title", "one", "still comment", "echo"}},
		{"forum-thread.html", "text/html", "Re: How do I escape <script> in HTML? - Forum",
			[]string{"Use &lt; for <.", `<script>alert("x")</script>`, "is fine, but is old-school.", "Don't forget 'single' quotes and 'hex' ones.", "Everything after <b>plaintext</b> is text &amp; raw </plaintext> still."},
			[]string{"console", "bad()"}},
		{"spa-shell.html", "text/html", "Dashboard", []string{"Loaded."}, []string{"INITIAL", "enable JavaScript", "var x"}},
		{"ecommerce.html", "text/html", "Wanderschuhe „Alpin“ – Größe 42 | Shop", []string{"119,99 € 89,99 €", "450 g", "👍🏽", "日本語のテキスト", "שלום", "Impressum"}, []string{"price=", "<%="}},
		// Not carried: read as undeclared (not UTF-8, so windows-1252):
		// the ASCII survives.
		{"shift-jis.html", "text/html", "", []string{"ASCII 2024"}, nil},
		// A single-byte encoding, from singlebyte_table.go.
		{"windows-1251.html", "text/html; charset=windows-1251", "Привет", []string{"Текст страницы 42"}, nil},
	} {
		t.Run(c.page, func(t *testing.T) {
			title, text := extractText(pages[c.page], c.ct)
			if c.title != "" && title != c.title {
				t.Errorf("title %q, want %q", title, c.title)
			}
			for _, s := range c.has {
				if !strings.Contains(text, s) {
					t.Errorf("text lacks %q:\n%s", s, text)
				}
			}
			for _, s := range c.hasNot {
				if strings.Contains(text, s) || strings.Contains(title, s) {
					t.Errorf("text has %q:\n%s", s, text)
				}
			}
		})
	}
}

// TestKnownDifferences names each class of input where extractText and
// the old x/net/html extractor part, shows that they do, and what we give.
func TestKnownDifferences(t *testing.T) {
	longASCII := strings.Repeat("<p>plain ascii text</p>\n", 50)
	longText := strings.TrimSpace(strings.Repeat("plain ascii text ", 50))
	for _, c := range []struct {
		class, body, ct     string
		wantTitle, wantText string
	}{
		{"a self-closing <script/> still starts a script", "<script/>alert(1)</script>hello", "text/html", "", "hello"},
		{"a self-closing <title/> still starts the title", "<title/>T</title>x", "text/html", "T", "x"},
		{"an <svg> icon's <title> is not the page title", "<title>Page</title><svg><title>Icon</title></svg>text", "text/html", "Page", "text"},
		{"only the first <title> is the title", "<title>One</title><title>Two</title>text", "text/html", "One", "text"},
		{"a byte order mark is not text", "\xef\xbb\xbfhi", "text/html", "", "hi"},
		{"windows-1252's five unassigned bytes are C1 controls (WHATWG)", "a\x81b", "text/html; charset=latin1", "", "a\u0081b"},
		{"undeclared UTF-8 after 1024 ASCII bytes is UTF-8", longASCII + "<p>caf\u00e9</p>", "text/html", "", longText + " café"},
		{"undeclared UTF-8 is decoded before tags and comments are removed", "\u00e9" + longASCII + "\xe2<!---->\x82\xac", "text/html", "", "é " + longText + " \ufffd\ufffd\ufffd"},
		{"two unpaired trailing surrogates in UTF-16 are two U+FFFD (WHATWG; x/text gives one)", "\xfe\xff\xdd0\xdd0", "", "", "\ufffd\ufffd"},
		{"ISO-2022-JP: two escapes in a row are an error (WHATWG; x/text reads none)", "<p>\x1b$B\x1b$BF|K\\\x1b(B", "text/html; charset=iso-2022-jp", "", "\ufffd\u65e5\u672c"},
		{"Shift_JIS: an unmapped pair gives its ASCII second byte back (WHATWG; x/text drops it)", "<meta charset=shift_jis><p>\x93\xfa\x85\x40x", "text/html", "", "\u65e5\ufffd@x"},
		{"EUC-JP: a lead and a non-ASCII byte out of range are one U+FFFD (WHATWG; x/text gives two)", "<p>\xc6\xfc\x8e\x80x", "text/html; charset=euc-jp", "", "\u65e5\ufffdx"},
		{"GBK decodes gb18030's four-byte sequences (WHATWG; x/text's GBK does not)", "<p>\x90\x30\x81\x30", "text/html; charset=gbk", "", "\U00010000"},
	} {
		t.Run(c.class, func(t *testing.T) {
			title, text := extractText([]byte(c.body), c.ct)
			if title != c.wantTitle || text != c.wantText {
				t.Errorf("got title %q text %q, want %q %q", title, text, c.wantTitle, c.wantText)
			}
			oldTitle, oldText := oldExtractText([]byte(c.body), c.ct, false)
			oldText = strings.ToValidUTF8(oldText, "\uFFFD")
			if oldTitle == title && oldText == text {
				t.Errorf("the old extractor agrees (%q %q): not a difference", oldTitle, oldText)
			}
		})
	}
}

func TestCharsetLabelsAreWHATWGs(t *testing.T) {
	labels := []string{"unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf-8", "utf8", "x-unicode20utf8",
		"unicodefffe", "utf-16be", "csunicode", "iso-10646-ucs-2", "ucs-2", "unicode", "unicodefeff", "utf-16", "utf-16le",
		"ansi_x3.4-1968", "ascii", "cp1252", "cp819", "csisolatin1", "ibm819", "iso-8859-1", "iso-ir-100",
		"iso8859-1", "iso88591", "iso_8859-1", "iso_8859-1:1987", "l1", "latin1", "us-ascii", "windows-1252", "x-cp1252",
		" UTF-8\t", "Latin1", "shift_jis", "SJIS", "gbk", "gb2312", "gb18030", "big5", "big5-hkscs", "euc-kr", "windows-949", "euc-jp", "iso-2022-jp", "csiso2022jp", "koi8-r", "KOI8-RU", "windows-1251", "iso-8859-2", "logical", "x-mac-ukrainian", "866", "tis-620"}
	for _, l := range labels {
		e, name := charset.Lookup(l)
		if e == nil {
			t.Fatalf("%q: x/net does not know it", l)
		}
		if got := encodingForLabel(l).String(); got != name {
			t.Errorf("%q: ours %s, WHATWG %s", l, got, name)
		}
	}
	for _, l := range []string{"x-user-defined", "replacement", "", "utf-32", "bogus"} {
		if e := encodingForLabel(l); e != encUnknown {
			t.Errorf("%q: %s, want unknown", l, e)
		}
	}
}

func TestCharsetDetection(t *testing.T) {
	for _, c := range []struct {
		body, ct string
		want     textEncoding
		how      string
	}{
		{"\xfe\xff\x00a", "text/html; charset=utf-8", encUTF16BE, fromBOM},
		{"\xff\xfea\x00", "", encUTF16LE, fromBOM},
		{"\xef\xbb\xbfa", "text/html; charset=latin1", encUTF8, fromBOM},
		{"<meta charset=utf-8>", "text/html; charset=latin1", encWindows1252, fromHeader},
		{"<meta charset=latin1>", "text/html; charset=x-user-defined", encWindows1252, fromMeta},
		{"<meta charset=latin1>", "text/html; charset=shift_jis", encShiftJIS, fromHeader},
		{"<meta charset=latin1>", "text/html; charset=koi8-r", encodingForLabel("koi8-r"), fromHeader},
		{"<meta charset=cp1251>", "text/html; charset=x-user-defined", encodingForLabel("windows-1251"), fromMeta},
		{"<meta charset=gb2312>", "", encGBK, fromMeta},
		{`<meta http-equiv="Content-Type" content="text/html; charset='iso-8859-1'">`, "", encWindows1252, fromMeta},
		{`<meta content="text/html; charset=iso-8859-1">é.`, "", encUTF8, fromSniff},
		{"x é", "", encWindows1252, fromSniff}, // x/net does not count the last character
		{`<meta charset="utf-16">`, "", encUTF8, fromMeta},
		{`<meta charset="utf&#45;8" charset=latin1>`, "", encUTF8, fromMeta},
		{`<script><meta charset=latin1></script>é.`, "", encUTF8, fromSniff},
		{strings.Repeat(" ", 1020) + "<meta charset=latin1>", "", encWindows1252, fromSniff},
		{"caf\xe9", "", encWindows1252, fromSniff},
		{"caf\xc3\xa9\xe2\x82", "", encUTF8, fromSniff},
		{"", "", encWindows1252, fromSniff},
	} {
		e, how := pageEncoding([]byte(c.body), c.ct)
		if e != c.want || how != c.how {
			t.Errorf("%q %q: %s from %s, want %s from %s", c.body, c.ct, e, how, c.want, c.how)
		}
		checkExtract(t, []byte(c.body), c.ct)
	}
}

func TestDecoding(t *testing.T) {
	for _, c := range []struct {
		body string
		e    textEncoding
		want string
	}{
		{"a\xffb\xc3", encUTF8, "a\ufffdb\ufffd"},
		{"\xef\xbb\xbfx", encUTF8, "x"},
		{"\x80\x81\x9f\xa0\xff", encWindows1252, "€\u0081Ÿ\u00a0ÿ"},
		{"\xff\xfe\x3d\xd8\x00\xdea\x00", encUTF16LE, "😀a"},
		{"\x00a\xd8\x3d\x00b\xdc\x00\x00", encUTF16BE, "a\ufffdb\ufffd\ufffd"},
		{"a\x00\x00\xd8", encUTF16LE, "a\ufffd"},
		{"a\x00b", encUTF16LE, "a\ufffd"},
	} {
		if got := string(decodePage([]byte(c.body), c.e)); got != c.want {
			t.Errorf("%q as %s: %q, want %q", c.body, c.e, got, c.want)
		}
	}
}

func TestCharacterReferences(t *testing.T) {
	for in, want := range map[string]string{
		"&#0;": "\ufffd", "&#xD800;": "\ufffd", "&#xDFFF;": "\ufffd", "&#x110000;": "\ufffd", "&#x10FFFF;": "\U0010FFFF",
		"&#4294967393;": "\ufffd", "&#99999999999999999999;": "\ufffd", "&#128;": "€", "&#x81;": "\u0081", "&#159;": "Ÿ",
		"&#65": "A", "&#x41x": "Ax", "&#;": "&#;", "&#x;": "&#x;", "&#": "&#", "&": "&", "&;": "&;",
		"&amp": "&", "&ampx": "&x", "&amp;x": "&x", "&AMP;": "&", "&notin;": "∉", "&notit;": "¬it;", "&nGt;": "≫⃒",
		"&CounterClockwiseContourIntegral;": "∳", "&unknown;": "&unknown;", "&" + strings.Repeat("a", 100): "&" + strings.Repeat("a", 100),
		"&lt" + strings.Repeat("x", 50): "<" + strings.Repeat("x", 50), "&nbsp;x": "x",
	} {
		var c collapser
		w := 0
		c.text([]byte(in), tokText, &w)
		if string(c.b) != want {
			t.Errorf("%q: %q, want %q", in, c.b, want)
		}
		if old := collapse(html.UnescapeString(in)); old != want {
			t.Errorf("%q: x/net %q, want %q", in, old, want)
		}
	}
}

// TestEntityTable checks the generated table against x/net/html, every
// name, and that it is what the generator writes today.
func TestEntityTable(t *testing.T) {
	for i := range entityCount {
		start := 0
		if i > 0 {
			start = int(entityEnds[i-1])
		}
		name := entityNames[start:entityEnds[i]]
		w := 0
		r1, r2, n := charRef([]byte("&"+name), false, &w)
		got := string(r1)
		if r2 != 0 {
			got += string(r2)
		}
		if want := html.UnescapeString("&" + name); n != len(name)+1 || got != want {
			t.Errorf("&%s: %q (%d bytes), x/net %q", name, got, n, want)
		}
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "entity_table.go")
	if b, err := exec.CommandContext(ctx, gobin, "run", "./internal/genentities", "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("genentities: %v\n%s", err, b)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("entity_table.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Error("entity_table.go is stale: run go generate ./tools/webtools")
	}
}

// TestLinearWork feeds pages built to make a careless tokenizer quadratic
// (or hang) and holds the work to a few looks per byte: 10 MB of nesting,
// of an unterminated comment and of an unterminated script, 1 MB of the
// rest (the bound is per byte, so size only adds test time).
func TestLinearWork(t *testing.T) {
	const big, size = 10 << 20, 1 << 20
	repN := func(s string, n int) []byte { return bytes.Repeat([]byte(s), n/len(s)) }
	rep := func(s string) []byte { return repN(s, size) }
	for name, page := range map[string][]byte{
		"10 MB nested divs":          repN("<div>", big),
		"10 MB unterminated comment": append([]byte("<p>a<!--"), repN("- -> <!-- --!", big)...),
		"10 MB unterminated script":  append([]byte("<script>"), repN("</scrip <!-- <script </", big)...),
		"nested svg":                 rep("<svg><g>"),
		"script double escape":       append([]byte("<script><!--"), rep("<script>-</script--")...),
		"unterminated style":         append([]byte("<style>"), rep("</styl</s<")...),
		"unterminated tag":           append([]byte("<a "), rep(`b=c d="e'f' `)...),
		"unterminated quote":         append([]byte(`<a b="`), rep("<>'")...),
		"many attributes":            append(rep("a "), '>'),
		"duplicate attributes":       append(append([]byte("<svg "), rep("a=1 ")...), []byte("a=/>")...),
		"unterminated title":         append([]byte("<title>"), rep("</titl&amp;")...),
		"less-than signs":            rep("<"),
		"end tag openers":            rep("</"),
		"bogus comments":             rep("<!x<?y</ z"),
		"ampersands":                 rep("&"),
		"long entity name":           append([]byte("&"), rep("a")...),
		"long numeric reference":     append([]byte("&#"), rep("9")...),
		"legacy entity prefixes":     rep("&notinx"),
		"unterminated cdata":         append([]byte("<![CDATA["), rep("]]")...),
		"unterminated doctype":       append([]byte("<!DOCTYPE"), rep(" x")...),
		"plaintext":                  append([]byte("<plaintext>"), rep("<b>&amp;")...),
		"meta prescan is 1024 bytes": append([]byte("<meta "), rep("charset=x ")...),
		// Cut and restored multi-byte sequences: a decoder that rescans
		// after a restored byte would hang here rather than pass slowly.
		"shift_jis restored bytes":   append([]byte("<meta charset=shift_jis>"), rep("\x81 ")...),
		"euc-jp cut jis0212":         append([]byte("<meta charset=euc-jp>"), rep("\x8f\xa1")...),
		"euc-kr restored bytes":      append([]byte("<meta charset=euc-kr>"), rep("\x81 ")...),
		"big5 unmapped pairs":        append([]byte("<meta charset=big5>"), rep("\x85\x40")...),
		"gb18030 cut four-byte":      append([]byte("<meta charset=gb18030>"), rep("\x81\x30\x81")...),
		"iso-2022-jp doubled escape": append([]byte("<meta charset=iso-2022-jp>"), rep("\x1b$B\x1b$B")...),
		"iso-2022-jp cut escapes":    append([]byte("<meta charset=iso-2022-jp>"), rep("\x1b$")...),
	} {
		t.Run(name, func(t *testing.T) {
			e, _ := pageEncoding(page, "text/html")
			src := decodePage(page, e)
			x := extract(src)
			t.Logf("%.2f looks per byte", float64(x.work)/float64(len(src)))
			if x.work > workBound*len(src) {
				t.Errorf("work %d for %d bytes: %.1f per byte", x.work, len(src), float64(x.work)/float64(len(src)))
			}
			if x.work < len(src)/2 {
				t.Errorf("work %d for %d bytes: is it counted?", x.work, len(src))
			}
		})
	}
}

func FuzzExtractText(f *testing.F) {
	for _, page := range corpus(f) {
		f.Add(page, "text/html")
	}
	for _, s := range []string{
		"<script/>x</script>y", "<title>a&amp;b</title>", "<svg><title>t</title></svg>", "<!-->x", "<!--->x", "a<!--b--!>c",
		"<a b='>'>c</a>", "<a b=/>c", "<a a=1 a=/>", "<script><!--<script></script>x</script>y", "<style>a</style b>c",
		"<textarea>&lt;</textarea>", "<xmp>&lt;</xmp>", "&notit; &#x80; &#0;", "<plaintext><b>", "\xef\xbb\xbf<title>t</title>",
		"<meta charset=latin1>\xe9", "\xff\xfe<\x00p\x00>\x00", "a\x00b<title>\x00</title>", "</>x</ x>y<? z>w<!y>v",
	} {
		f.Add([]byte(s), "text/html")
	}
	f.Add([]byte("caf\xe9"), "text/html; charset=iso-8859-1")
	f.Add([]byte("\x00h\x00i"), "text/html; charset=utf-16be")
	f.Add([]byte("<meta charset=koi8-r><title>\xf0\xd2\xc9</title>\xff\x80"), "text/html")
	f.Add([]byte("\xcf\xf0\xe8\x98"), "text/html; charset=windows-1251")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		checkExtract(t, body, contentType)
	})
}

// TestJazzLinksNoXNetHTML keeps x/net/html and x/text's charset tables
// out of the jazz binary: their package initialization cost every jazz
// process about 0.3 ms and 130 KB of heap, for web_fetch alone.
func TestJazzLinksNoXNetHTML(t *testing.T) {
	linked.Refuse(t, "golang.org/x/net/html", "golang.org/x/text/encoding")
}
