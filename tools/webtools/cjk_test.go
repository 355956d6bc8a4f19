package webtools

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// cjkCases are the encodings of cjk.go with their WHATWG reading
// (cjk_ref_test.go).
var cjkCases = []struct {
	name string
	ref  func([]byte) []byte
}{
	{"shift_jis", refShiftJIS},
	{"euc-jp", refEUCJP},
	{"euc-kr", refEUCKR},
	{"gbk", refGB18030},
	{"gb18030", refGB18030},
	{"big5", refBig5},
	{"iso-2022-jp", refISO2022JP},
}

// TestCJKValidSequencesMatchXText decodes every two-byte sequence (and
// every EUC-JP 0x8F three-byte one, and every gb18030 four-byte one below
// U+10000) that x/text's decoder turns into code points without U+FFFD,
// alone and between ASCII, and wants x/text's answer byte for byte.
func TestCJKValidSequencesMatchXText(t *testing.T) {
	for _, c := range cjkCases {
		t.Run(c.name, func(t *testing.T) {
			e := encodingForLabel(c.name)
			if e.String() != c.name {
				t.Fatalf("label %q is %s", c.name, e)
			}
			xe, err := htmlindex.Get(c.name)
			if err != nil {
				t.Fatal(err)
			}
			if c.name == "gbk" {
				// x/text's GBK has no four-byte sequences; WHATWG's GBK
				// decoder is gb18030's, so both are checked against it.
				xe = simplifiedchinese.GB18030
			}
			var seqs [][]byte
			for l := 0x80; l < 0x100; l++ {
				for t := 0; t < 0x100; t++ {
					seqs = append(seqs, []byte{byte(l), byte(t)})
					if c.name == "euc-jp" && l == 0x8F {
						for u := 0xA1; u < 0xFF; u++ {
							seqs = append(seqs, []byte{0x8F, byte(t), byte(u)})
						}
					}
				}
			}
			if c.name == "iso-2022-jp" {
				// Escapes to each state, then its characters, back to ASCII.
				seqs = seqs[:0]
				for l := 0x21; l <= 0x7E; l++ {
					for t := 0x21; t <= 0x7E; t++ {
						seqs = append(seqs, []byte{0x1B, '$', 'B', byte(l), byte(t), 0x1B, '(', 'B'}, []byte{0x1B, '$', '@', byte(l), byte(t), 0x1B, '(', 'B'})
					}
					seqs = append(seqs, []byte{0x1B, '(', 'I', byte(l), 0x1B, '(', 'B'})
					if l != 0x5C && l != 0x7E { // see TestCJKXTextDepartures
						seqs = append(seqs, []byte{0x1B, '(', 'J', byte(l), 0x1B, '(', 'B'})
					}
				}
			}
			if c.name == "gb18030" {
				for p := range 39420 {
					seqs = append(seqs, []byte{byte(p/12600 + 0x81), byte(p/1260%10 + 0x30), byte(p/10%126 + 0x81), byte(p%10 + 0x30)})
				}
			}
			valid := 0
			for _, s := range seqs {
				want, err := xe.NewDecoder().Bytes(s)
				if err != nil || bytes.ContainsRune(want, 0xFFFD) && !bytes.Equal(s, []byte{0x84, 0x31, 0xA4, 0x37}) {
					continue
				}
				if c.name == "gb18030" && bytes.Equal(s, []byte{0x81, 0x35, 0xF4, 0x37}) {
					continue // pointer 7457: see TestCJKXTextDepartures
				}
				valid++
				in := append(append([]byte("a"), s...), 'z')
				wantIn := append(append([]byte("a"), want...), 'z')
				for _, pair := range [][2][]byte{{s, want}, {in, wantIn}} {
					if got := decodePage(bytes.Clone(pair[0]), e); !bytes.Equal(got, pair[1]) {
						t.Fatalf("%x: ours %q, x/text %q", pair[0], got, pair[1])
					}
				}
			}
			t.Logf("%d valid sequences", valid)
			if valid < 7000 {
				t.Errorf("only %d valid sequences", valid)
			}
		})
	}
}

// cjkInputs are the malformed and random inputs of the WHATWG tests:
// every one- and two-byte string, every two-byte string followed by ASCII
// and by each lead-ish byte, random strings mixing valid sequences with
// random bytes, and every prefix (truncation) of those.
func cjkInputs(seed uint64) [][]byte {
	var ins [][]byte
	for l := 0; l < 0x100; l++ {
		ins = append(ins, []byte{byte(l)})
		for t := 0; t < 0x100; t++ {
			ins = append(ins, []byte{byte(l), byte(t)}, []byte{byte(l), byte(t), 'a'}, []byte{byte(l), byte(t), 0xA1, 0xA1})
		}
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	for range 3000 {
		s := make([]byte, rng.IntN(24))
		for j := range s {
			switch rng.IntN(4) {
			case 0:
				s[j] = byte(rng.IntN(0x80))
			case 1:
				s[j] = byte(0x30 + rng.IntN(10)) // gb18030's second and fourth bytes
			default:
				s[j] = byte(0x80 + rng.IntN(0x80))
			}
		}
		for k := len(s); k >= 0; k-- {
			ins = append(ins, s[:k])
		}
	}
	// ISO-2022-JP: every two escapes (good, bad, cut) with nothing, a
	// character or a pair between and after them.
	escs := []string{"\x1b$B", "\x1b$@", "\x1b(B", "\x1b(J", "\x1b(I", "\x1b$", "\x1b(", "\x1b", "\x1bx", "\x1b$A", "\x1b(C"}
	for _, e1 := range escs {
		for _, e2 := range escs {
			for _, mid := range []string{"", "!", "F|", "\\", "\x80", "\x0e"} {
				s := e1 + mid + e2 + "F|K\\~"
				for k := len(s); k >= 0; k-- {
					ins = append(ins, []byte(s[:k]))
				}
			}
		}
	}
	// ISO-2022-JP's escapes and the bytes its states treat apart.
	const escBytes = "\x1b\x1b\x1b$$((B@JIA\x0e\x0f\\~!\x7f\x80\xa1"
	for range 3000 {
		s := make([]byte, rng.IntN(16))
		for j := range s {
			if rng.IntN(3) == 0 {
				s[j] = byte(0x21 + rng.IntN(0x5E))
			} else {
				s[j] = escBytes[rng.IntN(len(escBytes))]
			}
		}
		for k := len(s); k >= 0; k-- {
			ins = append(ins, s[:k])
		}
	}
	return ins
}

// TestCJKMatchesWHATWG wants cjk.go's decoders to agree byte for byte
// with the literal WHATWG reading over cjkInputs: every malformed case,
// "restore byte" and end-of-input rule included.
func TestCJKMatchesWHATWG(t *testing.T) {
	ins := cjkInputs(1)
	for _, c := range cjkCases {
		t.Run(c.name, func(t *testing.T) {
			e := encodingForLabel(c.name)
			bad := 0
			for _, in := range ins {
				want := c.ref(in)
				if got := decodePage(bytes.Clone(in), e); !bytes.Equal(got, want) {
					if bad++; bad < 10 {
						t.Errorf("%x: ours %q, WHATWG %q", in, got, want)
					}
				}
			}
		})
	}
}

// TestCJKXTextDepartures names each class of input where x/text's
// decoders depart from the WHATWG decoders, which we follow, and checks
// both the WHATWG reading and that x/text does differ (so the list stays
// true as x/text changes).
func TestCJKXTextDepartures(t *testing.T) {
	for _, c := range []struct {
		class, enc, in, want string
	}{
		{"an unmapped pair with an ASCII second byte gives the ASCII byte back", "shift_jis", "\x85\x40<p>", "\ufffd@<p>"},
		{"an unmapped pair with an ASCII second byte gives the ASCII byte back", "big5", "\x81\x40<p>", "\ufffd@<p>"},
		{"an unmapped pair with an ASCII second byte gives the ASCII byte back", "gbk", "\xa2\x40<p>", "\ufffd@<p>"},
		{"Shift_JIS's user-defined area is the Private Use Area", "shift_jis", "\xf0\x40", "\ue000"},
		{"EUC-JP: a lead and a non-ASCII byte out of range are one U+FFFD", "euc-jp", "\x8e\x80", "\ufffd"},
		{"EUC-JP: 0x8F, a lead and a non-ASCII byte out of range are one U+FFFD", "euc-jp", "\x8f\xa1\x80", "\ufffd"},
		{"gb18030: a four-byte sequence cut by the page's end is one U+FFFD", "gb18030", "\x81\x30", "\ufffd"},
		{"gb18030: a four-byte sequence cut by the page's end is one U+FFFD", "gb18030", "\x81\x30\x81", "\ufffd"},
		{"gb18030: a four-byte pointer with no code point is one U+FFFD", "gb18030", "\x84\x32\xa4\x30", "\ufffd"},
		{"gb18030: pointer 7457 is U+E7C7", "gb18030", "\x81\x35\xf4\x37", "\ue7c7"},
		{"GBK decodes gb18030's four-byte sequences", "gbk", "\x90\x30\x81\x30", "\U00010000"},
		{"ISO-2022-JP: JIS X 0201 Roman's 0x5C and 0x7E are the yen sign and overline", "iso-2022-jp", "\x1b(J\x5c\x7e", "\u00a5\u203e"},
	} {
		t.Run(c.class+" ("+c.enc+")", func(t *testing.T) {
			e := encodingForLabel(c.enc)
			if got := string(decodePage([]byte(c.in), e)); got != c.want {
				t.Errorf("ours %q, want %q", got, c.want)
			}
			for _, ref := range cjkCases {
				if ref.name == c.enc {
					if got := string(ref.ref([]byte(c.in))); got != c.want {
						t.Errorf("WHATWG reading %q, want %q", got, c.want)
					}
				}
			}
			xe, _ := htmlindex.Get(c.enc)
			if x, _ := xe.NewDecoder().String(c.in); x == c.want {
				t.Errorf("x/text agrees (%q): not a departure", x)
			}
		})
	}
}

// FuzzCJKDecoders compares every decoder of cjk.go with the literal
// WHATWG reading on the fuzzer's input.
func FuzzCJKDecoders(f *testing.F) {
	for _, s := range []string{"", "a", "\x81", "\x81\x30\x81\x30", "\x84\x31\xa4\x39", "\xe3\x30\x81\x30", "\x8f\xa2\xaf", "\x8e\xa1", "\x88\x62", "\xf0\x40\x82\xa0", "\x1b$B\x1b(J\\", "\x1b(I!\x1b$@F|\x1b(", "\x1b$"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, c := range cjkCases {
			want := c.ref(in)
			if got := decodePage(bytes.Clone(in), encodingForLabel(c.name)); !bytes.Equal(got, want) {
				t.Fatalf("%s %x: ours %q, WHATWG %q", c.name, in, got, want)
			}
		}
	})
}

// TestCJKLabelsAreHTMLIndexs resolves every label of htmlindex's label
// map, and wants ours to name the same East Asian encoding where x/text's
// does; and checks that cjk_table.go
// is what the generator makes today.
func TestCJKLabelsAreHTMLIndexs(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := exec.CommandContext(ctx, gobin, "list", "-m", "-f", "{{.Dir}}", "golang.org/x/text").Output()
	if err != nil {
		t.Fatalf("go list -m golang.org/x/text: %v", err)
	}
	labels, err := modsrcMapKeys(filepath.Join(strings.TrimSpace(string(dir)), "encoding", "htmlindex", "tables.go"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range labels {
		xe, err := htmlindex.Get(l)
		if err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		xname, _ := htmlindex.Name(xe)
		switch xname {
		case "shift_jis", "euc-jp", "euc-kr", "gbk", "gb18030", "big5", "iso-2022-jp":
		default:
			continue
		}
		n++
		for _, form := range []string{l, strings.ToUpper(l), " " + l + "\t"} {
			if got := encodingForLabel(form).String(); got != xname {
				t.Errorf("%q: ours %s, x/text %s", form, got, xname)
			}
		}
	}
	if n != len(cjkLabels) || n < 35 {
		t.Errorf("%d East Asian labels in htmlindex, %d in cjkLabels", n, len(cjkLabels))
	}
	out := filepath.Join(t.TempDir(), "cjk_table.go")
	if b, err := exec.CommandContext(ctx, gobin, "run", "./internal/gencjk", "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("gencjk: %v\n%s", err, b)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("cjk_table.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Error("cjk_table.go is stale: run go generate ./tools/webtools")
	}
}

// TestCJKPages extracts a page in each encoding, declared by Content-Type
// and by <meta>. The bytes are written out here, not made by an encoder.
func TestCJKPages(t *testing.T) {
	for _, c := range []struct {
		label, title, text, wantTitle, wantText string
	}{
		{"Shift_JIS", "\x93\xfa\x96\x7b\x8c\xea", "\xb6\xc0\xb6\xc5", "日本語", "ｶﾀｶﾅ"},
		{"x-sjis", "\x93\xfa\x96\x7b\x8c\xea", "\x82\xa0", "日本語", "あ"},
		{"EUC-JP", "\xc6\xfc\xcb\xdc\xb8\xec", "\x8e\xb6\x8f\xb0\xa1", "日本語", "ｶ丂"},
		{"ISO-2022-JP", "\x1b$BF|K\\8l\x1b(B", "\x1b(I6\x1b(J\\\x1b(B\\", "日本語", "ｶ¥\\"},
		{"EUC-KR", "\xc7\xd1\xb1\xb9\xbe\xee", "\xb0\xa1", "한국어", "가"},
		{"ks_c_5601-1987", "\xc7\xd1\xb1\xb9\xbe\xee", "\x81\x41", "한국어", "갂"},
		{"GBK", "\xd6\xd0\xce\xc4", "\x80", "中文", "€"},
		{"GB2312", "\xd6\xd0\xce\xc4", "\x81\x30\x81\x30", "中文", "\u0080"},
		{"GB18030", "\xd6\xd0\xce\xc4", "\x95\x32\x82\x36", "中文", "\U00020000"},
		{"Big5", "\xa4\xa4\xa4\xe5", "\x88\x62", "中文", "\u00ca\u0304"},
		{"big5-hkscs", "\xa4\xa4\xa4\xe5", "\x87\x40", "中文", "\u43f0"},
	} {
		page := []byte("<html><head><title>" + c.title + "</title></head><body><p>" + c.text + " 42</p></body></html>")
		metaPage := append([]byte("<meta charset=\""+c.label+"\">"), page...)
		for _, p := range []struct {
			body    []byte
			ct, how string
		}{{page, "text/html; charset=" + c.label, fromHeader}, {metaPage, "text/html", fromMeta}} {
			if _, how := pageEncoding(p.body, p.ct); how != p.how {
				t.Errorf("%s: found by %s, want %s", c.label, how, p.how)
			}
			title, text := extractText(p.body, p.ct)
			if title != c.wantTitle || text != c.wantText+" 42" {
				t.Errorf("%s (%s): title %q text %q, want %q %q", c.label, p.how, title, text, c.wantTitle, c.wantText+" 42")
			}
		}
	}
}
