package actors_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/messages"
)

// A successful result reads as the text of a JSON string (null as ""),
// anything else as its JSON, whatever whitespace surrounds it; the oracle
// is the plain rule: unquote whenever json.Unmarshal into a string works.
func TestFormatResultUnquotesOnlyStrings(t *testing.T) {
	for _, raw := range []string{
		`"plain"`, `"with \"quotes\" and \u00e9\n"`, ` 	"padded"` + "\n", `null`, ` null `, `""`,
		`{"path":"/a","content":"x"}`, `["a"]`, `42`, `true`, `false`, ``, `nope`, `"unterminated`,
		`n`, `nul`, `"a" "b"`, `{"a":1} x`, "\"\xff\"", `  `,
	} {
		var want string
		if json.Unmarshal([]byte(raw), &want) != nil {
			want = raw
		}
		if got := actors.FormatResult(messages.ToolResult{Success: true, Result: json.RawMessage(raw)}); got != want {
			t.Errorf("FormatResult(%q) = %q, want %q", raw, got, want)
		}
	}
}

// BenchmarkFormatResult formats a read_file result (an object), which
// every file read in a turn goes through.
func BenchmarkFormatResult(b *testing.B) {
	v, err := json.Marshal(map[string]any{"path": "/tmp/work/f001.txt", "encoding": "utf-8", "totalLines": 20,
		"returnedLines": 20, "truncated": false, "content": strings.Repeat("line 1 of a small file\n", 20)})
	if err != nil {
		b.Fatal(err)
	}
	r := messages.ToolResult{Success: true, Result: v}
	b.ReportAllocs()
	for b.Loop() {
		actors.FormatResult(r)
	}
}
