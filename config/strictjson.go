package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// utf8BOM is the byte-order mark some editors put first in a UTF-8 file.
var utf8BOM = []byte("\xef\xbb\xbf")

// checkJSON refuses what a person reading a file and jazz could read
// differently: an object key given twice at any depth (encoding/json
// keeps the last value, jq too, a reader's eye the first; a file that
// shows `"autoApprovedCommands": ["git status"]` at its top and a second
// list a thousand lines down is reviewed, then trusted, as the first)
// and a leading byte-order mark (refused with a clear message rather
// than as "invalid character 'ï'"). Other syntax errors are left to the
// decoder that follows.
func checkJSON(data []byte) error {
	if bytes.HasPrefix(data, utf8BOM) {
		return errors.New("it starts with a UTF-8 byte-order mark; save it as plain UTF-8 without one")
	}
	type frame struct {
		obj     bool
		wantKey bool
		keys    map[string]bool
		path    string
		key     string
	}
	var stack []*frame
	// done marks the end of a value inside the innermost container.
	done := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return nil // a syntax error: the decoder that follows says which
		}
		var top *frame
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		if top != nil && top.obj && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				done()
				continue
			}
			k, _ := tok.(string)
			if top.keys[k] {
				return fmt.Errorf("key %s is given twice; keep one", shown(joinPath(top.path, k)))
			}
			top.keys[k] = true
			top.key, top.wantKey = k, false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			path := ""
			if top != nil {
				path = top.path
				if top.obj {
					path = joinPath(top.path, top.key)
				}
			}
			stack = append(stack, &frame{obj: tok == json.Delim('{'), wantKey: true, keys: map[string]bool{}, path: path})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
		default:
			done()
		}
	}
}
