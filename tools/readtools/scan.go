package readtools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jazz-run/jazz/safefile"
)

// MaxScanBytes is the most of one file read_file, head and tail go
// through (counting lines needs all of it, the result keeps little).
const MaxScanBytes int64 = 1 << 30

var bom = []byte("\xEF\xBB\xBF")

// keepBudget is how many bytes of text are enough for a cut at maxUnits
// UTF-16 units: a unit never takes more than three bytes.
func keepBudget(maxUnits int) int { return 3*maxUnits + 4 }

// scanSpec says what to keep of a file while it is streamed.
type scanSpec struct {
	// raw keeps the text as is (read_file without a range): the first
	// budget bytes, line ends included.
	raw bool
	// from and to are the 1-based window of lines to keep (to 0 = to the
	// end); lines lose the CR of a CRLF and are joined with LF.
	from, to int
	// tail > 0 keeps the last tail lines instead of a window.
	tail   int
	budget int
}

// scanned is what a scan kept and counted.
type scanned struct {
	text []byte
	// lines counts the lines as splitLines would: newlines + 1 (an
	// empty text is one empty line).
	lines int
	// empty is true for a text of no bytes (after the BOM).
	empty bool
	// cut is set when the kept text is not all the text the spec asked.
	cut bool
}

// scanner is the state of one streamed scan.
type scanner struct {
	spec    scanSpec
	out     scanned
	started bool
	line    []byte   // the current line (window or tail mode), capped
	lineCut bool     // the current line lost bytes to the cap
	ring    [][]byte // tail mode: the last lines
	ringLen int      // bytes in ring, separators included
	n       int      // 1-based number of the current line
	total   int64
}

// scanText streams f through spec's keeper, bounded by MaxScanBytes and
// ctx (ChildTimeout when it has no earlier deadline).
func scanText(ctx context.Context, f *safefile.File, spec scanSpec) (scanned, error) {
	ctx, cancel := context.WithTimeout(ctx, ChildTimeout)
	defer cancel()
	s := &scanner{spec: spec, n: 1}
	s.out.empty = true
	if f.Info.Size() > MaxScanBytes {
		return scanned{}, tooBig(f.Name())
	}
	err := f.Stream(ctx, s.feed)
	if errors.Is(err, context.DeadlineExceeded) {
		return scanned{}, fmt.Errorf("reading %s took longer than %s; read a smaller file or search it with grep", f.Name(), ChildTimeout)
	}
	if err != nil {
		return scanned{}, err
	}
	s.endLine()
	if s.spec.raw {
		return s.out, nil
	}
	if s.spec.tail > 0 {
		s.out.text = bytes.Join(s.ring, []byte("\n"))
	}
	s.out.lines = s.n
	return s.out, nil
}

func tooBig(path string) error {
	return fmt.Errorf("%s is larger than %s, the most the read tools scan; search it with grep instead", path, safefile.Bytes(MaxScanBytes))
}

// feed takes the next chunk of the file.
func (s *scanner) feed(p []byte) error {
	if s.total += int64(len(p)); s.total > MaxScanBytes {
		return tooBig("the file")
	}
	if !s.started {
		s.started = true
		p = bytes.TrimPrefix(p, bom)
	}
	if len(p) == 0 {
		return nil
	}
	s.out.empty = false
	if s.spec.raw {
		s.out.lines += bytes.Count(p, []byte("\n"))
		room := s.spec.budget - len(s.out.text)
		if room < len(p) {
			s.out.cut = true
		}
		s.out.text = append(s.out.text, p[:max(0, min(room, len(p)))]...)
		return nil
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.addToLine(p)
			return nil
		}
		s.addToLine(p[:i])
		s.endLine()
		s.n++
		p = p[i+1:]
	}
	return nil
}

// keeping says whether the current line is wanted at all.
func (s *scanner) keeping() bool {
	if s.spec.tail > 0 {
		return true
	}
	return s.n >= s.spec.from && (s.spec.to == 0 || s.n <= s.spec.to)
}

// addToLine appends part of the current line, within the budget (plus
// one byte, so a CR before the LF is not lost to the cap). A tail keeps
// a long line's end, a window its start.
func (s *scanner) addToLine(p []byte) {
	if !s.keeping() {
		return
	}
	limit := s.spec.budget + 1
	if s.spec.tail > 0 {
		s.line = append(s.line, p...)
		if len(s.line) > 2*limit {
			s.line = append(s.line[:0], s.line[len(s.line)-limit:]...)
			s.lineCut = true
		}
		return
	}
	room := limit - len(s.line)
	if room < len(p) {
		s.lineCut = true
	}
	s.line = append(s.line, p[:max(0, min(room, len(p)))]...)
}

// endLine files the current line in the window or the tail ring.
func (s *scanner) endLine() {
	if s.spec.raw {
		if s.out.empty {
			s.out.lines = 0
		} else {
			s.out.lines++ // newlines + 1, as splitLines counts
		}
		return
	}
	if !s.keeping() {
		return
	}
	line := bytes.TrimSuffix(s.line, []byte("\r"))
	if s.lineCut {
		s.out.cut = true
	}
	s.line, s.lineCut = s.line[:0], false
	if s.spec.tail > 0 {
		if len(line) > s.spec.budget {
			line = line[len(line)-s.spec.budget:]
			s.out.cut = true
		}
		kept := bytes.Clone(line)
		s.ring = append(s.ring, kept)
		s.ringLen += len(kept) + 1
		for len(s.ring) > s.spec.tail || (len(s.ring) > 1 && s.ringLen-len(s.ring[0])-1 >= s.spec.budget) {
			if len(s.ring) <= s.spec.tail {
				s.out.cut = true // dropped for size, not because it is outside the tail
			}
			s.ringLen -= len(s.ring[0]) + 1
			s.ring = s.ring[1:]
		}
		return
	}
	if len(s.out.text) >= s.spec.budget {
		s.out.cut = true
		return
	}
	if s.n > s.spec.from {
		s.out.text = append(s.out.text, '\n')
	}
	room := s.spec.budget - len(s.out.text)
	if room < len(line) {
		s.out.cut = true
	}
	s.out.text = append(s.out.text, line[:max(0, min(room, len(line)))]...)
}

// str is the kept bytes as valid UTF-8. Text that already is (nearly
// every file) is checked by utf8.Valid's ASCII fast path, several times
// quicker than ToValidUTF8's rune-by-rune scan of it.
func (r scanned) str() string {
	if utf8.Valid(r.text) {
		return string(r.text)
	}
	return strings.ToValidUTF8(string(r.text), "\uFFFD")
}
