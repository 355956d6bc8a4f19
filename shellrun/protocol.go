//go:build unix

package shellrun

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The parent and the runner exchange one frame each way: a 4-byte
// big-endian length, then that many bytes of JSON. Both ends bound the
// length before reading the body, so neither side can be made to allocate
// more than its limit, and a frame cut short (the writer died) is an
// error, never a partial value.
const (
	// MaxRequestBytes bounds the request (command text, environment).
	MaxRequestBytes = 8 << 20
	// maxResponseBytes bounds the runner's answer, which carries only a
	// status (the output streams travel on their own pipes).
	maxResponseBytes = 64 << 10
)

// errFrameTooLarge is wrapped when a frame's length exceeds the limit.
var errFrameTooLarge = errors.New("frame exceeds its size limit")

func writeFrame(w io.Writer, v any, limit int) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	if len(body) > limit {
		return fmt.Errorf("%w: %d bytes, at most %d", errFrameTooLarge, len(body), limit)
	}
	buf := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// readFrame reads exactly one frame into v. Unknown fields are refused:
// both ends are the same binary, so a field one side does not know means
// the message is not what it claims to be.
func readFrame(r io.Reader, v any, limit int) error {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("no frame: %w", err)
		}
		return fmt.Errorf("frame header cut short: %w", err)
	}
	n := binary.BigEndian.Uint32(head[:])
	if n > uint32(limit) {
		return fmt.Errorf("%w: %d bytes announced, at most %d", errFrameTooLarge, n, limit)
	}
	body := make([]byte, n)
	if got, err := io.ReadFull(r, body); err != nil {
		return fmt.Errorf("frame body cut short after %d of %d bytes: %w", got, n, err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("malformed frame: %w", err)
	}
	if dec.More() {
		return errors.New("malformed frame: trailing data after the JSON value")
	}
	return nil
}
