package capbuf_test

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/jazz-run/jazz/tools/capbuf"
)

func TestBuffer(t *testing.T) {
	h := sha256.New()
	b := &capbuf.Buffer{Limit: 10, Hash: h}
	for _, s := range []string{"line one\n", "line two\n", "three"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if !b.Truncated() || b.Text() != "line one\n" {
		t.Fatalf("truncated %v, text %q", b.Truncated(), b.Text())
	}
	if got, want := fmt.Sprintf("%x", h.Sum(nil)), fmt.Sprintf("%x", sha256.Sum256([]byte("line one\nline two\nthree"))); got != want {
		t.Fatal("the hash does not cover everything written")
	}
	whole := &capbuf.Buffer{Limit: 100}
	whole.Write([]byte("no newline at the end"))
	if whole.Truncated() || whole.Text() != "no newline at the end" {
		t.Fatalf("%q", whole.Text())
	}
}
