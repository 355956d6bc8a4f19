package tools

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeArgs is a differential oracle: decodeArgs must give exactly
// what a json.Decoder with UseNumber gives (value and error), since the
// schema validator reads that shape.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":1,"b":[true,false,null,"x"],"c":{"d":-1.5e3}}`,
		`{"a":"\u00e9\n\"q\"","a":2}`, " {\"p\" : [ 1 , 2 ] } ", `"\ud800"`, "\"\xff\"",
		`{"a":1} {"b":2}`, `{"a":`, ``, `  `, `1e400`, `{"k":"é😀"}`, `[[[[]]]]`, `{"a":01}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		wantErr := dec.Decode(&want)
		got, gotErr := decodeArgs(b)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%q: decoder error %v, decodeArgs error %v", b, wantErr, gotErr)
		}
		if wantErr != nil {
			if wantErr.Error() != gotErr.Error() {
				t.Fatalf("%q: decoder error %q, decodeArgs error %q", b, wantErr, gotErr)
			}
			return
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%q: decoder gives %#v, decodeArgs %#v", b, want, got)
		}
	})
}
