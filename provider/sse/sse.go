// Package sse reads a text/event-stream, the framing model servers
// stream their answers in: `data:` lines (several joined with "\n"), a
// blank line ending each event, `:` comment lines (keep-alives), and
// other fields (event, id, retry), which the vendors' data repeats and
// jazz skips.
package sse

import (
	"bufio"
	"bytes"
	"io"
)

// Read calls fn with the data of each event in r, in order, until fn
// says stop, fn fails, or r ends; a last event without its blank line
// still counts. data is valid only during the call. A line longer than
// maxLine fails with bufio.ErrTooLong.
func Read(r io.Reader, maxLine int, fn func(data []byte) (stop bool, err error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(64<<10, maxLine)), maxLine)
	var data []byte
	has := false
	dispatch := func() (bool, error) {
		if !has {
			return false, nil
		}
		d := data
		data, has = data[:0], false
		return fn(d)
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if stop, err := dispatch(); err != nil || stop {
				return err
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if !found {
			value = nil
		} else if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		if string(field) != "data" {
			continue
		}
		if has {
			data = append(data, '\n')
		}
		data = append(data, value...)
		has = true
	}
	if err := sc.Err(); err != nil {
		return err
	}
	_, err := dispatch()
	return err
}
