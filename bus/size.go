package bus

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// ErrTooLarge: a message or value is larger than the server takes (its
// max_payload, or a bucket's largest value). Publish, KV Create and KV
// Update refuse it before anything is sent, with a *TooLargeError that
// says both sizes.
var ErrTooLarge = errors.New("larger than the bus takes")

// TooLargeError is a message of Size bytes (headers included) refused
// because at most Limit fit.
type TooLargeError struct {
	// What is what was refused ("publish jazz.run.x", "create key k").
	What        string
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: %d bytes is larger than the bus takes (at most %d)", e.What, e.Size, e.Limit)
}

func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// MaxPayload is the largest message (headers and data together) the
// server the bus is connected to takes: its max_payload, as it announced
// it to this connection. 0 when the bus is not connected: nothing is
// known, and nothing can be sent either.
func (b *Bus) MaxPayload() int64 {
	conn := b.Conn()
	if conn == nil {
		return 0
	}
	return conn.MaxPayload()
}

// fits refuses a message of size bytes that conn's server would refuse.
// A connection that announced no limit (0) is not checked: nats.go's own
// check then decides.
func fits(conn *nats.Conn, what string, size int) error {
	if limit := conn.MaxPayload(); limit > 0 && int64(size) > limit {
		return &TooLargeError{What: what, Size: int64(size), Limit: limit}
	}
	return nil
}

// headerSize is how many bytes h takes on the wire ("NATS/1.0\r\n", a
// "Key: value\r\n" line per value and the closing "\r\n"), which the
// server counts against max_payload with the data.
func headerSize(h nats.Header) int {
	if len(h) == 0 {
		return 0
	}
	n := len("NATS/1.0\r\n") + len("\r\n")
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(": ") + len(v) + len("\r\n")
		}
	}
	return n
}
