package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzAppend: any string is written as json.Marshal writes it.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "a", `"\<>&`, "\u2028\u2029", "\xff\xfe", "12345678\n1234567", "abcdefgh<", "\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f", "ééééé"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := Append(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: %s, want %s", s, got, want)
		}
	})
}

// TestAppendEveryByte: each byte value, alone and inside a run
// that the word-at-a-time scan reads, is written as json.Marshal writes it.
func TestAppendEveryByte(t *testing.T) {
	for c := range 256 {
		for pos := range 9 {
			s := strings.Repeat("a", pos) + string([]byte{byte(c)}) + strings.Repeat("b", 16-pos)
			want, _ := json.Marshal(s)
			if got := Append(nil, s); !bytes.Equal(got, want) {
				t.Fatalf("byte %#x at %d: %s, want %s", c, pos, got, want)
			}
		}
	}
}

// BenchmarkAppend escapes a read_file result (the text a tool
// message carries) with Append and with encoding/json.
func BenchmarkAppend(b *testing.B) {
	v, _ := json.Marshal(map[string]string{"path": "/tmp/work/f000.txt", "encoding": "utf-8", "content": strings.Repeat("line 0 of a small file\n", 20)})
	s := string(v)
	b.Run("jsonstr", func(b *testing.B) {
		buf := make([]byte, 0, 4096)
		for b.Loop() {
			buf = Append(buf[:0], s)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(s)
		}
	})
}

// Every pair of bytes side by side, inside a word and across the end of
// one: a byte that needs escaping can make its word-at-a-time test mark
// the byte above it too (a borrow), which must then be judged on its own.
func TestAppendEveryPair(t *testing.T) {
	for _, pos := range []int{3, 7} {
		for c1 := range 256 {
			for c2 := range 256 {
				s := strings.Repeat("a", pos) + string([]byte{byte(c1), byte(c2)}) + strings.Repeat("b", 14-pos)
				want, _ := json.Marshal(s)
				if got := Append(nil, s); !bytes.Equal(got, want) {
					t.Fatalf("bytes %#x %#x at %d: %s, want %s", c1, c2, pos, got, want)
				}
			}
		}
	}
}
