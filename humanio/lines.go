package humanio

import (
	"bytes"
	"context"
	"io"
	"strings"
	"time"
)

// Line is one line of a person's (or a bridge's) input.
type Line struct {
	Text string
	// At is when the read that completed the line returned: lines pasted
	// or typed together come in one read, so a line typed for one prompt
	// is known to be older than the next.
	At time.Time
	// Cut marks a line longer than the reader's bound: its bytes were
	// read to its newline and dropped, and Text is empty. No part of it
	// answers anything.
	Cut bool
}

// MaxLine bounds one input line (an answer, a protocol line).
const MaxLine = 1 << 20

// ReadLines sends each line of in on out, without its "\n" (or "\r\n"),
// and closes out at EOF or a read error; an unterminated last line is
// sent too. A line longer than max is never split into shorter ones (its
// tail would otherwise read as a line of its own): it is consumed to its
// newline and sent as one Cut line, so memory stays bounded by max and
// the lines after it are read as usual. It may outlive its reader while
// blocked in a read of a terminal; the process ends it.
func ReadLines(ctx context.Context, in io.Reader, max int, out chan<- Line) {
	defer close(out)
	buf := make([]byte, 64*1024)
	var pending []byte
	cutting := false
	send := func(l Line) bool {
		select {
		case out <- l:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		n, err := in.Read(buf)
		at := time.Now()
		chunk := buf[:n]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				if !cutting {
					pending = append(pending, chunk...)
					if len(pending) > max {
						pending, cutting = pending[:0], true
					}
				}
				break
			}
			part := chunk[:i]
			chunk = chunk[i+1:]
			if !cutting && len(pending)+len(part) > max {
				cutting = true
			}
			var l Line
			if cutting {
				l = Line{At: at, Cut: true}
			} else {
				pending = append(pending, part...)
				l = Line{Text: strings.TrimSuffix(string(pending), "\r"), At: at}
			}
			pending, cutting = pending[:0], false
			if !send(l) {
				return
			}
		}
		if err != nil {
			switch {
			case cutting:
				send(Line{At: at, Cut: true})
			case len(pending) > 0:
				send(Line{Text: strings.TrimSuffix(string(pending), "\r"), At: at})
			}
			return
		}
	}
}
