package approvals_test

import (
	"encoding/json"
	"strings"
	"testing"

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
