package webtools

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
)

// TestSingleByteMatchesXText decodes, for every label we carry, each of
// the 256 byte values alone, all of them in one string, and random byte
// strings, and wants x/text's decoder's answer; the label must name the
// same encoding in x/text's htmlindex.
func TestSingleByteMatchesXText(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([][]byte, 200)
	for i := range random {
		random[i] = make([]byte, rng.IntN(100))
		for j := range random[i] {
			random[i][j] = byte(rng.UintN(256))
		}
	}
	seen := map[string]bool{}
	for _, l := range singleByteLabels {
		e := encodingForLabel(l.label)
		xe, err := htmlindex.Get(l.label)
		if err != nil {
			t.Fatalf("%q: x/text does not know it: %v", l.label, err)
		}
		xname, _ := htmlindex.Name(xe)
		if e.String() != xname || e == encUnknown {
			t.Errorf("%q: ours %s, x/text %s", l.label, e, xname)
			continue
		}
		if seen[xname] {
			continue
		}
		seen[xname] = true
		check := func(in []byte) {
			t.Helper()
			want, err := xe.NewDecoder().Bytes(in)
			if err != nil {
				t.Fatalf("%s: x/text: %v", xname, err)
			}
			if got := decodePage(bytes.Clone(in), e); !bytes.Equal(got, want) {
				t.Errorf("%s: %x decodes to %q, x/text %q", xname, in, got, want)
			}
		}
		for b := range 256 {
			check(all[b : b+1])
		}
		check(all)
		for _, r := range random {
			check(r)
		}
	}
	if len(seen) != numSingleByte {
		t.Errorf("labels reach %d encodings, the table holds %d", len(seen), numSingleByte)
	}
	// The WHATWG list, less windows-1252 (decoded by hand, and tested
	// against the WHATWG index in TestKnownDifferences).
	for _, name := range []string{"ibm866", "iso-8859-2", "iso-8859-3", "iso-8859-4", "iso-8859-5", "iso-8859-6", "iso-8859-7", "iso-8859-8", "iso-8859-8-i",
		"iso-8859-10", "iso-8859-13", "iso-8859-14", "iso-8859-15", "iso-8859-16", "koi8-r", "koi8-u", "macintosh", "windows-874",
		"windows-1250", "windows-1251", "windows-1253", "windows-1254", "windows-1255", "windows-1256", "windows-1257", "windows-1258", "x-mac-cyrillic"} {
		if !seen[name] || encodingForLabel(name).String() != name {
			t.Errorf("%s: not carried", name)
		}
	}
}

// TestSingleByteLabelsAreHTMLIndexs resolves every label in x/text's
// htmlindex (its label map, read from the module cache) that names a
// single-byte encoding, and wants ours to name the same one; and checks
// that singlebyte_table.go is what the generator makes today.
func TestSingleByteLabelsAreHTMLIndexs(t *testing.T) {
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
	src := filepath.Join(strings.TrimSpace(string(dir)), "encoding", "htmlindex", "tables.go")
	f, err := parser.ParseFile(token.NewFileSet(), src, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	ast.Inspect(f, func(n ast.Node) bool {
		if kv, ok := n.(*ast.KeyValueExpr); ok {
			if bl, ok := kv.Key.(*ast.BasicLit); ok && bl.Kind == token.STRING {
				s, _ := strconv.Unquote(bl.Value)
				labels = append(labels, s)
			}
		}
		return true
	})
	n := 0
	for _, l := range labels {
		xe, err := htmlindex.Get(l)
		if err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		xname, _ := htmlindex.Name(xe)
		if _, ok := xe.(*charmap.Charmap); !ok && xe != encoding.Encoding(charmap.ISO8859_8I) {
			continue
		}
		if xname == "x-user-defined" {
			continue
		}
		n++
		for _, form := range []string{l, strings.ToUpper(l), " " + l + "\t"} {
			if got := encodingForLabel(form).String(); got != xname {
				t.Errorf("%q: ours %s, x/text %s", form, got, xname)
			}
		}
	}
	if n < 150 {
		t.Errorf("only %d single-byte labels in %s", n, src)
	}
	out := filepath.Join(t.TempDir(), "singlebyte_table.go")
	if b, err := exec.CommandContext(ctx, gobin, "run", "./internal/gensinglebyte", "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("gensinglebyte: %v\n%s", err, b)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("singlebyte_table.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Error("singlebyte_table.go is stale: run go generate ./tools/webtools")
	}
}

// TestSingleBytePages extracts Cyrillic pages declared by Content-Type
// and by <meta>. The bytes are written out here, not made by an encoder.
func TestSingleBytePages(t *testing.T) {
	// "Привет, мир" and "Текст" in windows-1251 and in KOI8-R.
	cp1251Title, cp1251Text := "\xcf\xf0\xe8\xe2\xe5\xf2, \xec\xe8\xf0", "\xd2\xe5\xea\xf1\xf2"
	koi8Title, koi8Text := "\xf0\xd2\xc9\xd7\xc5\xd4, \xcd\xc9\xd2", "\xf4\xc5\xcb\xd3\xd4"
	page := func(meta, title, text string) []byte {
		return []byte("<html><head>" + meta + "<title>" + title + "</title></head><body><p>" + text + " 42</p></body></html>")
	}
	for _, c := range []struct {
		name, ct string
		body     []byte
		how      string
	}{
		{"windows-1251 by Content-Type", "text/html; charset=windows-1251", page("", cp1251Title, cp1251Text), fromHeader},
		{"windows-1251 by meta", "text/html", page(`<meta charset="windows-1251">`, cp1251Title, cp1251Text), fromMeta},
		{"cp1251 by meta http-equiv", "", page(`<meta http-equiv="Content-Type" content="text/html; charset=CP1251">`, cp1251Title, cp1251Text), fromMeta},
		{"KOI8-R by Content-Type", `text/html; charset="KOI8-R"`, page("", koi8Title, koi8Text), fromHeader},
		{"koi8-r by meta", "text/html", page("<meta charset=koi8-r>", koi8Title, koi8Text), fromMeta},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, how := pageEncoding(c.body, c.ct); how != c.how {
				t.Errorf("found by %s, want %s", how, c.how)
			}
			title, text := extractText(c.body, c.ct)
			if title != "Привет, мир" || text != "Текст 42" {
				t.Errorf("got title %q text %q", title, text)
			}
		})
	}
	// The committed windows-1251 page from the corpus.
	title, text := extractText(corpus(t)["windows-1251.html"], "text/html; charset=windows-1251")
	if title != "Привет" || text != "Текст страницы 42" {
		t.Errorf("windows-1251.html: title %q text %q", title, text)
	}
}
