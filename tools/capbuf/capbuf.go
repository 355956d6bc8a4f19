// Package capbuf is the output buffer of the children tools run (grep,
// find, git): it keeps the first Limit bytes and drains the rest, so a
// chatty child never blocks on a full pipe and memory stays bounded
// (shell-safety.md §5).
package capbuf

import (
	"bytes"
	"hash"
)

// Buffer is one capped stream. Hash, when set, is fed every byte written,
// kept or not: a fingerprint of the whole output.
type Buffer struct {
	Limit     int
	Hash      hash.Hash
	buf       bytes.Buffer
	truncated bool
}

// Write keeps what fits and reports all of p taken, or the copier would
// stop with a short write.
func (c *Buffer) Write(p []byte) (int, error) {
	n := len(p)
	if c.Hash != nil {
		c.Hash.Write(p)
	}
	if room := c.Limit - c.buf.Len(); room < len(p) {
		c.truncated = true
		p = p[:max(room, 0)]
	}
	c.buf.Write(p)
	return n, nil
}

// Truncated says whether anything was dropped.
func (c *Buffer) Truncated() bool { return c.truncated }

// Text is what was kept; a capped stream loses its partial last line.
func (c *Buffer) Text() string {
	b := c.buf.Bytes()
	if c.truncated {
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			b = b[:i+1]
		} else {
			b = nil
		}
	}
	return string(b)
}
