package events

import (
	"bytes"
	"encoding/json"
)

// orderedLike re-emits v keeping the key order of the original document,
// so a truncated event reads like an untruncated one (type first).
func orderedLike(orig []byte, v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	dec := json.NewDecoder(bytes.NewReader(orig))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return v
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return v
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return v
		}
	}
	return orderedMap{keys: keys, m: m}
}

type orderedMap struct {
	keys []string
	m    map[string]any
}

func (o orderedMap) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		var vb bytes.Buffer
		enc := json.NewEncoder(&vb)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(o.m[k]); err != nil {
			return nil, err
		}
		buf.Write(bytes.TrimRight(vb.Bytes(), "\n"))
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
