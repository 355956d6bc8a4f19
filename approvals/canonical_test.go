package approvals_test

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
)

func TestCanonicalIgnoresSpellingNotValue(t *testing.T) {
	same := []string{
		`{"b":1,"a":{"y":[1,2,"x"],"x":null},"c":"\u00e9\/"}`,
		"{ \"a\" : { \"x\" : null , \"y\" : [ 1 , 2 , \"\\u0078\" ] } ,\n \"c\" : \"é/\", \"b\" : 1 }",
	}
	want, err := approvals.Canonical([]byte(same[0]))
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != `{"a":{"x":null,"y":[1,2,"x"]},"b":1,"c":"é/"}` {
		t.Fatalf("canonical form %s", want)
	}
	for _, s := range same[1:] {
		got, err := approvals.Canonical([]byte(s))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s → %s %v", s, got, err)
		}
	}
}

func TestCanonicalRefusesAmbiguousDocuments(t *testing.T) {
	for _, s := range []string{
		`{"path":"a","path":"b"}`,
		`{"path":"a","PATH":"b"}`,
		`{"a":1} {"b":2}`,
		`{"a":`,
		strings.Repeat("[", 300) + strings.Repeat("]", 300),
	} {
		if _, err := approvals.Canonical([]byte(s)); err == nil {
			t.Errorf("accepted %.40s", s)
		}
	}
}

// The hash separates what runs: any change of tool or of any argument
// byte that changes a value changes the hash; respelling does not.
func TestActionHashBindsToolAndArguments(t *testing.T) {
	base := json.RawMessage(`{"path":"/w/a.txt","content":"x","fingerprint":"sha256:00"}`)
	h, err := approvals.ActionHash("execute_write_file", base)
	if err != nil || !strings.HasPrefix(h, "sha256:") || len(h) != 71 {
		t.Fatalf("%s %v", h, err)
	}
	respelled, _ := approvals.ActionHash("execute_write_file", json.RawMessage(`{ "fingerprint":"sha256:00", "content":"x","path":"/w/a.txt" }`))
	if respelled != h {
		t.Error("key order or whitespace changed the hash")
	}
	for _, other := range []struct {
		tool string
		args string
	}{
		{"execute_edit_file", string(base)},
		{"execute_write_file", `{"path":"/w/b.txt","content":"x","fingerprint":"sha256:00"}`},
		{"execute_write_file", `{"path":"/w/a.txt","content":"x ","fingerprint":"sha256:00"}`},
		{"execute_write_file", `{"path":"/w/a.txt","content":"x","fingerprint":"sha256:01"}`},
		{"execute_write_file", `{"path":"/w/a.txt","content":"x","fingerprint":"sha256:00","cwd":"/"}`},
		{"execute_write_file", `{"path":"/w/a.txt","content":"x","fingerprint":"sha256:00","n":1.0}`},
	} {
		got, err := approvals.ActionHash(other.tool, json.RawMessage(other.args))
		if err != nil || got == h {
			t.Errorf("%s %s hashed like the original (%v)", other.tool, other.args, err)
		}
	}
	if _, err := approvals.ActionHash("", base); err == nil {
		t.Error("no tool, yet a hash")
	}
}

func FuzzCanonicalIsStable(f *testing.F) {
	f.Add(`{"a":[1,{"b":"c"}],"d":true}`)
	f.Add(`"x\u2028y"`)
	f.Add(`[1e5, -0, 0.10]`)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := approvals.Canonical([]byte(s))
		if err != nil {
			return
		}
		// Canonical output is valid JSON, a fixed point, and means the
		// same as the input.
		again, err := approvals.Canonical(c)
		if err != nil || string(again) != string(c) {
			t.Fatalf("not a fixed point: %q → %q (%v)", c, again, err)
		}
		a, b := decodeNumbers(t, []byte(s)), decodeNumbers(t, c)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Fatalf("value changed: %s vs %s", ja, jb)
		}
	})
}

func decodeNumbers(t *testing.T, data []byte) any {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("invalid JSON %q: %v", data, err)
	}
	return v
}

// TestShownHashCoversEverythingShown: every field an approver reads
// changes the hash; a trip through the store's JSON does not.
func TestShownHashCoversEverythingShown(t *testing.T) {
	base := approvals.Request{
		RunID: "run-1", RequestID: "ap-1", ToolCallID: "c1", AgentID: "a1", Agent: "coder", Subagent: "helper", Depth: 1,
		Tool: "write_file", Arguments: json.RawMessage(`{"path":"x"}`), Message: "Write x", PreviewDiff: "+x",
		RiskTier: "high-risk", WorkDir: "/w", Policy: "low-risk", ExecuteTool: "execute_write_file",
		ExecuteArgs: json.RawMessage(`{"path":"/w/x"}`), ActionHash: "sha256:00",
		CreatedAt: time.Now().UTC(), ExpiresAt: time.Now().UTC().Add(time.Minute),
	}
	want, err := approvals.ShownHash(base)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(base)
	var back approvals.Request
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if got, _ := approvals.ShownHash(back); got != want {
		t.Fatalf("a JSON round trip changed the shown hash: %s, want %s", got, want)
	}
	for name, change := range map[string]func(*approvals.Request){
		"message":      func(q *approvals.Request) { q.Message += " " },
		"diff":         func(q *approvals.Request) { q.PreviewDiff = "-x" },
		"tool":         func(q *approvals.Request) { q.Tool = "edit_file" },
		"execute tool": func(q *approvals.Request) { q.ExecuteTool = "execute_edit_file" },
		"tier":         func(q *approvals.Request) { q.RiskTier = "low-risk" },
		"policy":       func(q *approvals.Request) { q.Policy = "high-risk" },
		"agent":        func(q *approvals.Request) { q.Agent = "other" },
		"agent id":     func(q *approvals.Request) { q.AgentID = "a2" },
		"subagent":     func(q *approvals.Request) { q.Subagent = "" },
		"depth":        func(q *approvals.Request) { q.Depth = 0 },
		"directory":    func(q *approvals.Request) { q.WorkDir = "/" },
		"arguments":    func(q *approvals.Request) { q.Arguments = json.RawMessage(`{"path":"y"}`) },
		"execute args": func(q *approvals.Request) { q.ExecuteArgs = json.RawMessage(`{"path":"/w/y"}`) },
		"action hash":  func(q *approvals.Request) { q.ActionHash = "sha256:01" },
		"expiry":       func(q *approvals.Request) { q.ExpiresAt = q.ExpiresAt.Add(time.Hour) },
	} {
		q := base
		change(&q)
		if got, _ := approvals.ShownHash(q); got == want {
			t.Errorf("changing the %s leaves the shown hash as it was", name)
		}
	}
}

// TestCanonicalRefusesWhatTheDecoderWouldMerge is differential: for keys
// built from letters with non-ASCII case partners (ſ folds with s, K with
// k), whenever Canonical accepts {a:1, b:2}, Go's decoder filling a field
// tagged a takes a's value, never b's. A key that lands in another's
// field would show a person (or a bridge's JSON.parse) one argument and
// run another.
func TestCanonicalRefusesWhatTheDecoderWouldMerge(t *testing.T) {
	alphabet := []rune{'s', 'S', 'ſ', 'k', 'K', 'K', 'a', 'å', 'Å', 'Å', 'µ', 'μ', 'Μ', '_'}
	keys := []string{"old_string", "task", "path"}
	for i := 0; i < len(alphabet); i++ {
		for j := 0; j < len(alphabet); j++ {
			keys = append(keys, string(alphabet[i])+string(alphabet[j]))
		}
	}
	variants := func(k string) []string {
		out := []string{k, strings.ToUpper(k)}
		out = append(out, strings.ReplaceAll(k, "s", "ſ"), strings.ReplaceAll(k, "k", "K"))
		return out
	}
	checked := 0
	for _, a := range keys {
		for _, b := range append(variants(a), keys...) {
			if a == b {
				continue
			}
			ka, _ := json.Marshal(a)
			kb, _ := json.Marshal(b)
			doc := []byte("{" + string(ka) + ":1," + string(kb) + ":2}")
			if _, err := approvals.Canonical(doc); err != nil {
				continue
			}
			field := reflect.StructOf([]reflect.StructField{{Name: "F", Type: reflect.TypeOf(0), Tag: reflect.StructTag(`json:` + strconv.Quote(a))}})
			v := reflect.New(field)
			if err := json.Unmarshal(doc, v.Interface()); err != nil {
				t.Fatal(err)
			}
			if got := v.Elem().Field(0).Int(); got != 1 {
				t.Errorf("Canonical accepted %s, but the decoder fills %q with %d", doc, a, got)
			}
			checked++
		}
	}
	if checked < 100 {
		t.Fatalf("only %d documents checked", checked)
	}
}
