// Command gensinglebyte writes webtools' tables of the WHATWG legacy
// single-byte encodings (singlebyte_table.go): for each encoding the code
// points of bytes 0x80-0xFF, and every WHATWG label that names it. The
// labels are the keys of golang.org/x/text/encoding/htmlindex's label map
// (read from its tables.go, at the version go.mod requires), each resolved
// with htmlindex.Get; the code points come from the x/text/encoding/charmap
// decoder that label resolves to. x/text is imported here, at generate
// time only: webtools must not link it, because its packages' init work
// would be paid by every jazz process, fetch or not.
//
// windows-1252 is left out (webtools decodes it by hand, mapping its five
// unassigned bytes to C1 controls as the WHATWG index does), and so is
// x-user-defined, which is not one of the legacy single-byte encodings.
//
// The output is constant data (uint16 arrays and a sorted label array) the
// linker lays out: no init, no heap until a page is decoded.
//
// Usage (from tools/webtools, see the go:generate line in charset.go):
//
//	go run ./internal/gensinglebyte -o singlebyte_table.go
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"os"
	"slices"
	"unicode/utf8"

	xencoding "golang.org/x/text/encoding"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"

	"github.com/jazz-run/jazz/tools/webtools/internal/modsrc"
)

type encoding struct {
	name  string
	table [128]uint16
}

type label struct {
	label string
	enc   int // index into the encodings
}

func main() {
	out := flag.String("o", "singlebyte_table.go", "file to write")
	src := flag.String("src", "", "htmlindex's tables.go holding the label map (default: found with go list -m golang.org/x/text)")
	flag.Parse()
	if *src == "" {
		f, err := modsrc.File("golang.org/x/text", "encoding/htmlindex/tables.go")
		if err != nil {
			fmt.Fprintln(os.Stderr, "gensinglebyte:", err)
			os.Exit(1)
		}
		*src = f
	}
	if err := run(*src, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gensinglebyte:", err)
		os.Exit(1)
	}
}

func run(src, out string) error {
	all, err := readLabels(src)
	if err != nil {
		return err
	}
	encs, labels, err := resolve(all)
	if err != nil {
		return err
	}
	code, err := render(encs, labels)
	if err != nil {
		return err
	}
	return os.WriteFile(out, code, 0o644)
}

// readLabels returns the string keys of htmlindex's nameMap literal in src.
func readLabels(src string) ([]string, error) {
	return modsrc.MapKeys(src, "nameMap", 200)
}

// resolve keeps the labels of single-byte encodings and builds each
// encoding's table from its charmap decoder.
func resolve(all []string) ([]encoding, []label, error) {
	var encs []encoding
	index := map[string]int{}
	var labels []label
	for _, l := range all {
		e, err := htmlindex.Get(l)
		if err != nil {
			return nil, nil, fmt.Errorf("label %q: %w", l, err)
		}
		name, err := htmlindex.Name(e)
		if err != nil {
			return nil, nil, fmt.Errorf("label %q: %w", l, err)
		}
		// iso-8859-8-i is iso-8859-8's bytes under another name (x/text
		// wraps the Charmap), so it is not a *charmap.Charmap itself.
		if _, ok := e.(*charmap.Charmap); !ok && name != "iso-8859-8-i" {
			continue
		}
		if name == "windows-1252" || name == "x-user-defined" {
			continue
		}
		i, ok := index[name]
		if !ok {
			enc := encoding{name: name}
			for b := 0; b < 256; b++ {
				r, err := decodeByte(e, byte(b))
				if err != nil {
					return nil, nil, fmt.Errorf("%s: %w", name, err)
				}
				if b < 0x80 {
					if r != rune(b) {
						return nil, nil, fmt.Errorf("%s: byte %#x decodes to %U, not ASCII", name, b, r)
					}
					continue
				}
				if r > 0xFFFF {
					return nil, nil, fmt.Errorf("%s: byte %#x decodes to %U, outside the BMP", name, b, r)
				}
				enc.table[b-0x80] = uint16(r)
			}
			i = len(encs)
			index[name] = i
			encs = append(encs, enc)
		}
		labels = append(labels, label{l, i})
	}
	if len(encs) == 0 {
		return nil, nil, errors.New("no single-byte encodings found")
	}
	// Sort encodings by name, for a stable file, and renumber the labels.
	order := make([]int, len(encs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmpString(encs[a].name, encs[b].name) })
	renum := make([]int, len(encs))
	sorted := make([]encoding, len(encs))
	for newI, oldI := range order {
		renum[oldI] = newI
		sorted[newI] = encs[oldI]
	}
	for i := range labels {
		labels[i].enc = renum[labels[i].enc]
	}
	slices.SortFunc(labels, func(a, b label) int { return cmpString(a.label, b.label) })
	return sorted, labels, nil
}

// decodeByte is what e's decoder makes of the lone byte b: one rune.
func decodeByte(e xencoding.Encoding, b byte) (rune, error) {
	out, err := e.NewDecoder().Bytes([]byte{b})
	if err != nil {
		return 0, fmt.Errorf("byte %#x: %w", b, err)
	}
	r, n := utf8.DecodeRune(out)
	if n != len(out) {
		return 0, fmt.Errorf("byte %#x decodes to %q, not one rune", b, out)
	}
	return r, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func render(encs []encoding, labels []label) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by internal/gensinglebyte from golang.org/x/text/encoding/charmap and htmlindex; DO NOT EDIT.\n\n")
	b.WriteString("package webtools\n\n")
	fmt.Fprintf(&b, "// numSingleByte is how many WHATWG legacy single-byte encodings (but\n// windows-1252) singleByteTables holds.\nconst numSingleByte = %d\n\n", len(encs))
	b.WriteString("// singleByteNames are the encodings' WHATWG names, lower case.\nvar singleByteNames = [numSingleByte]string{\n")
	for _, e := range encs {
		fmt.Fprintf(&b, "\t%q,\n", e.name)
	}
	b.WriteString("}\n\n")
	b.WriteString("// singleByteTables holds each encoding's code points for bytes 0x80-0xFF;\n// 0xFFFD marks a byte the encoding leaves undefined.\nvar singleByteTables = [numSingleByte][128]uint16{\n")
	for _, e := range encs {
		fmt.Fprintf(&b, "\t{ // %s\n", e.name)
		for i := 0; i < 128; i += 8 {
			b.WriteString("\t\t")
			for j := i; j < i+8; j++ {
				fmt.Fprintf(&b, "0x%04X, ", e.table[j])
			}
			b.WriteString("\n")
		}
		b.WriteString("\t},\n")
	}
	b.WriteString("}\n\n")
	b.WriteString("// singleByteLabels maps every WHATWG label (lower case, sorted) of these\n// encodings to its index in singleByteTables.\nvar singleByteLabels = [...]struct {\n\tlabel string\n\tenc   uint8\n}{\n")
	for _, l := range labels {
		fmt.Fprintf(&b, "\t{%q, %d},\n", l.label, l.enc)
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}
