package toolactors_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/toolactors"
)

// parseByValue is how ParseArguments read arguments before it only
// checked the grammar: decode them into a value; and an object that
// approvals.Canonical refuses for a key given twice is refused.
func parseByValue(raw string) (json.RawMessage, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, err
	}
	if _, ok := v.(map[string]any); !ok {
		return json.RawMessage("{}"), nil
	}
	if _, err := approvals.Canonical([]byte(s)); err != nil && strings.Contains(err.Error(), "appears twice") {
		return nil, err
	}
	return json.RawMessage(s), nil
}

// FuzzParseArguments is a differential oracle: ParseArguments accepts
// exactly the arguments decoding accepts, and gives the same object; the
// one difference allowed is a number too large for a float64, valid JSON
// that decoding into a value refuses (the schema and the handler judge it),
// and a document nested deeper than Canonical reads.
func FuzzParseArguments(f *testing.F) {
	for _, s := range []string{"", " ", "{}", `{"a":1}`, ` {"a":[1,2,{"b":null}]} `, "[]", "1", `"x"`, "null", "{", `{"a":}`,
		`{} {}`, `{}x`, "\t{\"a\":\"\\u00e9\"}\n", `{"a":1e400}`, `{"a":"\xff"}`, "nul", `{"a":01}`,
		`{"env":"prod","env":"staging"}`, `{"env":"staging","ENV":"prod"}`, `{"a":{"k":1,"\u212a":2}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if _, cerr := approvals.Canonical([]byte(raw)); cerr != nil && strings.Contains(cerr.Error(), "nested too deeply") {
			return // the oracle reads no deeper
		}
		got, err := toolactors.ParseArguments(raw)
		want, werr := parseByValue(raw)
		var ute *json.UnmarshalTypeError
		if werr != nil && err == nil && errors.As(werr, &ute) && strings.HasPrefix(ute.Value, "number") {
			return // out of float64's range: valid JSON all the same
		}
		if (err != nil) != (werr != nil) {
			t.Fatalf("ParseArguments(%q) error %v; decoding: %v", raw, err, werr)
		}
		if err != nil {
			if werr != nil && strings.Contains(werr.Error(), "appears twice") {
				if !strings.HasPrefix(err.Error(), "Ambiguous tool arguments: ") {
					t.Fatalf("error %q", err)
				}
				return
			}
			if !strings.HasPrefix(err.Error(), "Invalid JSON in tool arguments: ") {
				t.Fatalf("error %q", err)
			}
			return
		}
		if string(got) != string(want) {
			t.Fatalf("ParseArguments(%q) = %s, decoding gives %s", raw, got, want)
		}
	})
}
