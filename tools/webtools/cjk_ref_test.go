package webtools

import (
	"sync"
	"unicode/utf8"

	xencoding "golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"

	"github.com/jazz-run/jazz/tools/webtools/internal/modsrc"
)

// This file is a second, literal reading of the WHATWG Encoding
// Standard's multi-byte decoders, step by step as the standard writes
// them (an I/O queue, "restore byte", "return error"), for the
// differential tests. Its index code points come from x/text's decoders
// (each pointer's byte sequence decoded alone), not from cjk_table.go, so
// a wrong generated table, a wrong pointer formula and a wrong error rule
// in cjk.go each show up as a disagreement.

const eoq = -1 // end-of-queue

// refResult is what a WHATWG decoder handler returns for one byte.
type refResult struct {
	cps     []rune // code points to emit
	err     bool   // "return error": emit U+FFFD
	restore []int  // bytes to put back at the front of the queue
	done    bool   // "finished"
}

// refRun feeds in, then end-of-queue, to handler as WHATWG's "run"
// algorithm does in replacement error mode.
func refRun(in []byte, handler func(b int) refResult) []byte {
	q := make([]int, 0, len(in)+1)
	for _, c := range in {
		q = append(q, int(c))
	}
	q = append(q, eoq)
	var out []byte
	for len(q) > 0 {
		b := q[0]
		q = q[1:]
		r := handler(b)
		if len(r.restore) > 0 {
			// A restored end-of-queue is the queue's own end again.
			rs := r.restore
			if rs[len(rs)-1] == eoq && len(q) == 0 {
				q = append(q, eoq)
				rs = rs[:len(rs)-1]
			}
			q = append(append([]int(nil), rs...), q...)
		}
		for _, cp := range r.cps {
			out = utf8.AppendRune(out, cp)
		}
		if r.err {
			out = utf8.AppendRune(out, utf8.RuneError)
		}
		if r.done {
			break
		}
	}
	return out
}

func ascii(b int) bool { return 0 <= b && b <= 0x7F }

func within(b, lo, hi int) bool { return lo <= b && b <= hi }

// xIndex is a code point an x/text decoder makes of one sequence, or -1
// (null) when it makes anything but one code point other than U+FFFD.
func xIndex(name string, seq ...byte) rune {
	e, err := htmlindex.Get(name)
	if err != nil {
		panic(err)
	}
	return xOne(e, seq)
}

func xOne(e xencoding.Encoding, seq []byte) rune {
	out, err := e.NewDecoder().Bytes(seq)
	if err != nil {
		return -1
	}
	r, n := utf8.DecodeRune(out)
	if n == 0 || n != len(out) || r == utf8.RuneError {
		return -1
	}
	return r
}

// refIndexes are the WHATWG indexes as x/text decodes them, by pointer.
type refIndexes struct {
	jis0208, jis0212, euckr, gb18030, gbRanges, big5 []rune
}

var refIdx = sync.OnceValue(func() *refIndexes {
	fill := func(n int, f func(p int) rune) []rune {
		t := make([]rune, n)
		for p := range t {
			t[p] = f(p)
		}
		return t
	}
	x := &refIndexes{}
	// index jis0208 by Shift_JIS's pointer formula (its encoder's inverse).
	x.jis0208 = fill(11280, func(p int) rune {
		lead, trail := p/188, p%188
		lo, to := 0x81, 0x40
		if lead >= 0x1F {
			lo = 0xC1
		}
		if trail >= 0x3F {
			to = 0x41
		}
		return xIndex("shift_jis", byte(lead+lo), byte(trail+to))
	})
	x.jis0212 = fill(94*94, func(p int) rune { return xIndex("euc-jp", 0x8F, byte(p/94+0xA1), byte(p%94+0xA1)) })
	x.euckr = fill(126*190, func(p int) rune { return xIndex("euc-kr", byte(p/190+0x81), byte(p%190+0x41)) })
	x.gb18030 = fill(126*190, func(p int) rune {
		t := p%190 + 0x40
		if t >= 0x7F {
			t++
		}
		return xIndex("gb18030", byte(p/190+0x81), byte(t))
	})
	x.gbRanges = fill(39420, func(p int) rune {
		r := xIndex("gb18030", byte(p/12600+0x81), byte(p/1260%10+0x30), byte(p/10%126+0x81), byte(p%10+0x30))
		if p == 39417 {
			r = 0xFFFD // the one pointer whose code point is U+FFFD itself
		}
		return r
	})
	x.big5 = fill(126*157, func(p int) rune {
		t := p%157 + 0x40
		if t >= 0x7F {
			t += 0x62 - 0x40
		}
		return xIndex("big5", byte(p/157+0x81), byte(t))
	})
	return x
})

func at(t []rune, p int) rune {
	if p < 0 || p >= len(t) {
		return -1
	}
	return t[p]
}

// refShiftJIS is WHATWG 13.3.1 Shift_JIS decoder.
func refShiftJIS(in []byte) []byte {
	idx := refIdx()
	lead := 0
	return refRun(in, func(b int) refResult {
		if b == eoq && lead != 0 {
			lead = 0
			return refResult{err: true}
		}
		if b == eoq {
			return refResult{done: true}
		}
		if lead != 0 {
			l := lead
			p := -1
			lead = 0
			offset := 0x41
			if b < 0x7F {
				offset = 0x40
			}
			leadOffset := 0xC1
			if l < 0xA0 {
				leadOffset = 0x81
			}
			if within(b, 0x40, 0x7E) || within(b, 0x80, 0xFC) {
				p = (l-leadOffset)*188 + b - offset
			}
			if within(p, 8836, 10715) {
				return refResult{cps: []rune{rune(0xE000 - 8836 + p)}}
			}
			if cp := at(idx.jis0208, p); p >= 0 && cp >= 0 {
				return refResult{cps: []rune{cp}}
			}
			if ascii(b) {
				return refResult{err: true, restore: []int{b}}
			}
			return refResult{err: true}
		}
		if ascii(b) || b == 0x80 {
			return refResult{cps: []rune{rune(b)}}
		}
		if within(b, 0xA1, 0xDF) {
			return refResult{cps: []rune{rune(0xFF61 - 0xA1 + b)}}
		}
		if within(b, 0x81, 0x9F) || within(b, 0xE0, 0xFC) {
			lead = b
			return refResult{}
		}
		return refResult{err: true}
	})
}

// refEUCJP is WHATWG 13.1.1 EUC-JP decoder.
func refEUCJP(in []byte) []byte {
	idx := refIdx()
	jis0212, lead := false, 0
	return refRun(in, func(b int) refResult {
		if b == eoq && lead != 0 {
			lead = 0
			return refResult{err: true}
		}
		if b == eoq {
			return refResult{done: true}
		}
		if lead == 0x8E && within(b, 0xA1, 0xDF) {
			lead = 0
			return refResult{cps: []rune{rune(0xFF61 - 0xA1 + b)}}
		}
		if lead == 0x8F && within(b, 0xA1, 0xFE) {
			jis0212 = true
			lead = b
			return refResult{}
		}
		if lead != 0 {
			l := lead
			lead = 0
			cp := rune(-1)
			if within(l, 0xA1, 0xFE) && within(b, 0xA1, 0xFE) {
				t := idx.jis0208
				if jis0212 {
					t = idx.jis0212
				}
				cp = at(t, (l-0xA1)*94+b-0xA1)
			}
			jis0212 = false
			if cp >= 0 {
				return refResult{cps: []rune{cp}}
			}
			if ascii(b) {
				return refResult{err: true, restore: []int{b}}
			}
			return refResult{err: true}
		}
		if ascii(b) {
			return refResult{cps: []rune{rune(b)}}
		}
		if b == 0x8E || b == 0x8F || within(b, 0xA1, 0xFE) {
			lead = b
			return refResult{}
		}
		return refResult{err: true}
	})
}

// refEUCKR is WHATWG 14.1.1 EUC-KR decoder.
func refEUCKR(in []byte) []byte {
	idx := refIdx()
	lead := 0
	return refRun(in, func(b int) refResult {
		if b == eoq && lead != 0 {
			lead = 0
			return refResult{err: true}
		}
		if b == eoq {
			return refResult{done: true}
		}
		if lead != 0 {
			l := lead
			p := -1
			lead = 0
			if within(b, 0x41, 0xFE) {
				p = (l-0x81)*190 + (b - 0x41)
			}
			if cp := at(idx.euckr, p); cp >= 0 {
				return refResult{cps: []rune{cp}}
			}
			if ascii(b) {
				return refResult{err: true, restore: []int{b}}
			}
			return refResult{err: true}
		}
		if ascii(b) {
			return refResult{cps: []rune{rune(b)}}
		}
		if within(b, 0x81, 0xFE) {
			lead = b
			return refResult{}
		}
		return refResult{err: true}
	})
}

// refBig5 is WHATWG 12.1.1 Big5 decoder.
func refBig5(in []byte) []byte {
	idx := refIdx()
	lead := 0
	return refRun(in, func(b int) refResult {
		if b == eoq && lead != 0 {
			lead = 0
			return refResult{err: true}
		}
		if b == eoq {
			return refResult{done: true}
		}
		if lead != 0 {
			l := lead
			p := -1
			lead = 0
			offset := 0x62
			if b < 0x7F {
				offset = 0x40
			}
			if within(b, 0x40, 0x7E) || within(b, 0xA1, 0xFE) {
				p = (l-0x81)*157 + (b - offset)
			}
			switch p {
			case 1133:
				return refResult{cps: []rune{0x00CA, 0x0304}}
			case 1135:
				return refResult{cps: []rune{0x00CA, 0x030C}}
			case 1164:
				return refResult{cps: []rune{0x00EA, 0x0304}}
			case 1166:
				return refResult{cps: []rune{0x00EA, 0x030C}}
			}
			if cp := at(idx.big5, p); cp >= 0 {
				return refResult{cps: []rune{cp}}
			}
			if ascii(b) {
				return refResult{err: true, restore: []int{b}}
			}
			return refResult{err: true}
		}
		if ascii(b) {
			return refResult{cps: []rune{rune(b)}}
		}
		if within(b, 0x81, 0xFE) {
			lead = b
			return refResult{}
		}
		return refResult{err: true}
	})
}

// refGB18030 is WHATWG 11.2.1 gb18030 decoder (GBK's decoder too).
func refGB18030(in []byte) []byte {
	idx := refIdx()
	first, second, third := 0, 0, 0
	rangesCP := func(p int) rune {
		if p > 39419 && p < 189000 || p > 1237575 {
			return -1
		}
		if p == 7457 {
			return 0xE7C7
		}
		if p >= 189000 {
			return rune(0x10000 + p - 189000) // the ranges' last entry
		}
		return idx.gbRanges[p]
	}
	return refRun(in, func(b int) refResult {
		if b == eoq && first == 0 && second == 0 && third == 0 {
			return refResult{done: true}
		}
		if b == eoq {
			first, second, third = 0, 0, 0
			return refResult{err: true}
		}
		if third != 0 {
			if !within(b, 0x30, 0x39) {
				r := refResult{err: true, restore: []int{second, third, b}}
				first, second, third = 0, 0, 0
				return r
			}
			cp := rangesCP((first-0x81)*(10*126*10) + (second-0x30)*(10*126) + (third-0x81)*10 + b - 0x30)
			first, second, third = 0, 0, 0
			if cp < 0 {
				return refResult{err: true}
			}
			return refResult{cps: []rune{cp}}
		}
		if second != 0 {
			if within(b, 0x81, 0xFE) {
				third = b
				return refResult{}
			}
			r := refResult{err: true, restore: []int{second, b}}
			first, second = 0, 0
			return r
		}
		if first != 0 {
			if within(b, 0x30, 0x39) {
				second = b
				return refResult{}
			}
			l := first
			p := -1
			first = 0
			offset := 0x41
			if b < 0x7F {
				offset = 0x40
			}
			if within(b, 0x40, 0x7E) || within(b, 0x80, 0xFE) {
				p = (l-0x81)*190 + (b - offset)
			}
			if cp := at(idx.gb18030, p); cp >= 0 {
				return refResult{cps: []rune{cp}}
			}
			if ascii(b) {
				return refResult{err: true, restore: []int{b}}
			}
			return refResult{err: true}
		}
		if ascii(b) {
			return refResult{cps: []rune{rune(b)}}
		}
		if b == 0x80 {
			return refResult{cps: []rune{0x20AC}}
		}
		if within(b, 0x81, 0xFE) {
			first = b
			return refResult{}
		}
		return refResult{err: true}
	})
}

func modsrcMapKeys(src string) ([]string, error) { return modsrc.MapKeys(src, "nameMap", 200) }

// cjkRef is the WHATWG reading of e, or nil for an encoding not in cjk.go.
func cjkRef(e textEncoding) func([]byte) []byte {
	for _, c := range cjkCases {
		if encodingForLabel(c.name) == e {
			return c.ref
		}
	}
	return nil
}

// refISO2022JP is WHATWG 13.2.1 ISO-2022-JP decoder.
func refISO2022JP(in []byte) []byte {
	idx := refIdx()
	const (
		sASCII = iota
		sRoman
		sKatakana
		sLead
		sTrail
		sEscStart
		sEsc
	)
	state, outState, lead, output := sASCII, sASCII, 0, false
	return refRun(in, func(b int) refResult {
		switch state {
		case sASCII, sRoman:
			switch {
			case b == 0x1B:
				state = sEscStart
				return refResult{}
			case state == sRoman && b == 0x5C:
				output = false
				return refResult{cps: []rune{0xA5}}
			case state == sRoman && b == 0x7E:
				output = false
				return refResult{cps: []rune{0x203E}}
			case within(b, 0, 0x7F) && b != 0x0E && b != 0x0F:
				output = false
				return refResult{cps: []rune{rune(b)}}
			case b == eoq:
				return refResult{done: true}
			}
			output = false
			return refResult{err: true}
		case sKatakana:
			switch {
			case b == 0x1B:
				state = sEscStart
				return refResult{}
			case within(b, 0x21, 0x5F):
				output = false
				return refResult{cps: []rune{rune(0xFF61 - 0x21 + b)}}
			case b == eoq:
				return refResult{done: true}
			}
			output = false
			return refResult{err: true}
		case sLead:
			switch {
			case b == 0x1B:
				state = sEscStart
				return refResult{}
			case within(b, 0x21, 0x7E):
				output = false
				lead, state = b, sTrail
				return refResult{}
			case b == eoq:
				return refResult{done: true}
			}
			output = false
			return refResult{err: true}
		case sTrail:
			switch {
			case b == 0x1B:
				state = sEscStart
				return refResult{err: true}
			case within(b, 0x21, 0x7E):
				state = sLead
				if cp := at(idx.jis0208, (lead-0x21)*94+b-0x21); cp >= 0 {
					return refResult{cps: []rune{cp}}
				}
				return refResult{err: true}
			case b == eoq:
				state = sLead
				return refResult{err: true, restore: []int{eoq}}
			}
			state = sLead
			return refResult{err: true}
		case sEscStart:
			if b == 0x24 || b == 0x28 {
				lead, state = b, sEsc
				return refResult{}
			}
			output = false
			state = outState
			return refResult{err: true, restore: []int{b}}
		default: // sEsc
			l := lead
			lead = 0
			next := -1
			switch {
			case l == 0x28 && b == 0x42:
				next = sASCII
			case l == 0x28 && b == 0x4A:
				next = sRoman
			case l == 0x28 && b == 0x49:
				next = sKatakana
			case l == 0x24 && (b == 0x40 || b == 0x42):
				next = sLead
			}
			if next >= 0 {
				state, outState = next, next
				wasOutput := output
				output = true
				return refResult{err: wasOutput}
			}
			restore := []int{l, b}
			if b == eoq {
				restore = []int{l, eoq}
			}
			output = false
			state = outState
			return refResult{err: true, restore: restore}
		}
	})
}
