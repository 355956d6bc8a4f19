package sse_test

import (
	"bufio"
	"errors"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/provider/sse"
)

func TestRead(t *testing.T) {
	in := ": keep-alive\n\nevent: a\ndata: one\ndata:two\nid: 7\n\ndata: {\"x\":1}\n\n\n\ndata: stop\n\ndata: never\n\n"
	var got []string
	err := sse.Read(strings.NewReader(in), 1<<10, func(d []byte) (bool, error) {
		got = append(got, string(d))
		return string(d) == "stop", nil
	})
	if err != nil || strings.Join(got, "|") != "one\ntwo|{\"x\":1}|stop" {
		t.Fatalf("got %q, %v", got, err)
	}
	// A last event without its blank line still counts.
	got = nil
	_ = sse.Read(strings.NewReader("data: tail"), 1<<10, func(d []byte) (bool, error) { got = append(got, string(d)); return false, nil })
	if len(got) != 1 || got[0] != "tail" {
		t.Fatalf("tail: %q", got)
	}
	boom := errors.New("boom")
	if err := sse.Read(strings.NewReader("data: x\n\ndata: y\n\n"), 1<<10, func([]byte) (bool, error) { return false, boom }); err != boom {
		t.Fatalf("fn's error: %v", err)
	}
	if err := sse.Read(strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), 32, func([]byte) (bool, error) { return false, nil }); !errors.Is(err, bufio.ErrTooLong) {
		t.Fatalf("long line: %v", err)
	}
}
