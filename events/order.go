package events

import (
	"bytes"
	"encoding/json"
)

// TruncateStrings cuts every string value longer than MaxString characters
// in the compact JSON document data, leaving object keys, key order,
// numbers and nesting exactly as they were. It scans bytes instead of
// decoding into maps so order survives and the common case (nothing to
// cut) costs one pass and no allocation. Input that is not compact JSON as
// encoding/json writes it is returned unchanged.
func TruncateStrings(data []byte) []byte {
	var out []byte // nil until the first cut
	last := 0
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		end := stringEnd(data, i)
		if end < 0 {
			return data
		}
		isKey := end+1 < len(data) && data[end+1] == ':'
		// A literal of at most MaxString bytes holds at most MaxString
		// characters: only longer ones are worth decoding.
		if !isKey && end-i-1 > MaxString {
			var s string
			if err := json.Unmarshal(data[i:end+1], &s); err != nil {
				return data
			}
			if c := Cut(s); c != s {
				if out == nil {
					out = make([]byte, 0, len(data))
				}
				out = append(out, data[last:i]...)
				out = appendString(out, c)
				last = end + 1
			}
		}
		i = end
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

// stringEnd is the index of the quote closing the literal opened at i.
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}

func appendString(out []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(true) // as json.Marshal wrote the rest of the line
	_ = enc.Encode(s)
	return append(out, bytes.TrimRight(buf.Bytes(), "\n")...)
}
