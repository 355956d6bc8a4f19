package approvals

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Canonical re-encodes one JSON value with object keys sorted (by their
// UTF-8 bytes), no insignificant whitespace and numbers kept as written,
// so two encodings of the same value hash the same.
//
// It refuses what would let two readers see different values in one
// document: trailing data, and object keys that repeat, exactly or up to
// case (Go's decoder folds case when it fills a struct, so {"path":..,
// "PATH":..} would show a person one path and run another).
func Canonical(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var buf bytes.Buffer
	if err := canonValue(dec, &buf, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("canonical JSON: trailing data after the value")
	}
	return buf.Bytes(), nil
}

// maxDepth bounds nesting, so a hostile document cannot exhaust the stack.
const maxDepth = 256

func canonValue(dec *json.Decoder, buf *bytes.Buffer, depth int) error {
	if depth > maxDepth {
		return errors.New("canonical JSON: nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("canonical JSON: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return canonObject(dec, buf, depth)
		case '[':
			buf.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					buf.WriteByte(',')
				}
				if err := canonValue(dec, buf, depth+1); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil { // ']'
				return fmt.Errorf("canonical JSON: %w", err)
			}
			buf.WriteByte(']')
			return nil
		}
		return fmt.Errorf("canonical JSON: unexpected %q", t)
	case string:
		writeString(buf, t)
	case json.Number:
		buf.WriteString(t.String())
	case bool:
		if t {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case nil:
		buf.WriteString("null")
	}
	return nil
}

func canonObject(dec *json.Decoder, buf *bytes.Buffer, depth int) error {
	type member struct {
		key string
		val []byte
	}
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("canonical JSON: %w", err)
		}
		key, _ := tok.(string)
		folded := foldKey(key)
		if seen[folded] {
			return fmt.Errorf("canonical JSON: key %q appears twice (keys must differ by more than case)", key)
		}
		seen[folded] = true
		var vb bytes.Buffer
		if err := canonValue(dec, &vb, depth+1); err != nil {
			return err
		}
		members = append(members, member{key, vb.Bytes()})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return fmt.Errorf("canonical JSON: %w", err)
	}
	sort.Slice(members, func(i, j int) bool { return members[i].key < members[j].key })
	buf.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeString(buf, m.key)
		buf.WriteByte(':')
		buf.Write(m.val)
	}
	buf.WriteByte('}')
	return nil
}

// foldKey folds key as encoding/json does when it matches a key to a
// struct field: ASCII letters to upper case, any other rune to the least
// rune of its Unicode simple-fold orbit. So "ſ" (U+017F) folds with "s"
// and "K" (U+212A) with "k", which strings.ToLower keeps apart: two keys
// the decoder would put in one field always fold to one string here.
func foldKey(key string) string {
	var b strings.Builder
	for _, r := range key {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			continue
		}
		for {
			next := unicode.SimpleFold(r)
			if next <= r {
				r = next
				break
			}
			r = next
		}
		b.WriteRune(r)
	}
	return b.String()
}

// writeString writes s as a JSON string with the minimal escapes: one
// spelling per string, whatever escapes the input used.
func writeString(buf *bytes.Buffer, s string) {
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false)
	_ = e.Encode(s) // a Go string always encodes
	buf.Write(bytes.TrimSuffix(enc.Bytes(), []byte("\n")))
}

// HashPrefix names the hash function in an action hash.
const HashPrefix = "sha256:"

// ActionHash is SHA-256 over the canonical encoding of exactly what the
// execute twin will run: its name and its execute arguments (which carry
// the pinned paths, working directory and file fingerprints the propose
// half resolved). Whatever a tool adds to its execute arguments is covered
// without this function knowing about it.
func ActionHash(executeTool string, executeArgs json.RawMessage) (string, error) {
	if executeTool == "" {
		return "", errors.New("action hash: no execute tool named")
	}
	args := executeArgs
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("null")
	}
	canon, err := Canonical(args)
	if err != nil {
		return "", fmt.Errorf("action hash of %s: %w", executeTool, err)
	}
	var buf bytes.Buffer
	buf.WriteString(`{"args":`)
	buf.Write(canon)
	buf.WriteString(`,"tool":`)
	writeString(&buf, executeTool)
	buf.WriteByte('}')
	sum := sha256.Sum256(buf.Bytes())
	return HashPrefix + hex.EncodeToString(sum[:]), nil
}

// ShownHash is SHA-256 over the canonical encoding of a whole request:
// everything an approver is shown (message, preview diff, tool and what it
// executes, risk tier, policy, agent, subagent and depth, working
// directory, times) and the action hash. The approver signs the hash of
// the request it read and displayed; the run compares it with the hash of
// the request it wrote itself, so a record changed in the store (a forged
// diff over an honest action) is never approved by a person who read the
// forgery.
func ShownHash(req Request) (string, error) {
	raw, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("shown hash: %w", err)
	}
	canon, err := Canonical(raw)
	if err != nil {
		return "", fmt.Errorf("shown hash of request %s: %w", req.RequestID, err)
	}
	sum := sha256.Sum256(append([]byte("jazz.approval.shown/v1\n"), canon...))
	return HashPrefix + hex.EncodeToString(sum[:]), nil
}
