package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/internal/testutil/syncbuf"
)

// TestRun: each package is printed as it ends, a failing one with its
// output, and any failure (or nothing run at all) is exit 1.
func TestRun(t *testing.T) {
	for _, c := range []struct {
		name, in string
		code     int
		want     []string
	}{
		{"pass", `{"Action":"output","Package":"a","Output":"ok a\n"}
{"Action":"pass","Package":"a","Elapsed":1.5}
`, 0, []string{"ok   a", "1 packages", "0 failed"}},
		{"fail", `{"Action":"output","Package":"b","Test":"TestX","Output":"boom happened\n"}
{"Action":"fail","Package":"b","Test":"TestX"}
{"Action":"fail","Package":"b","Elapsed":0.2}
{"Action":"pass","Package":"a","Elapsed":1.5}
`, 1, []string{"boom happened", "FAIL b", "1 failed"}},
		{"build error", "# c\nc/x.go:1: syntax error\nFAIL\tc [build failed]\n", 1, []string{"syntax error"}},
		{"build-output", `{"ImportPath":"d [d.test]","Action":"build-output","Output":"./d_test.go:2: undefined: x\n"}
{"ImportPath":"d [d.test]","Action":"build-fail"}
{"Action":"fail","Package":"d","Elapsed":0,"FailedBuild":"d [d.test]"}
`, 1, []string{"undefined: x", "FAIL d"}},
		{"slowest", `{"Action":"pass","Package":"a","Test":"TestQuick","Elapsed":0.1}
{"Action":"pass","Package":"a","Test":"TestSlow","Elapsed":9.5}
{"Action":"pass","Package":"a","Test":"TestSlow/sub","Elapsed":9.4}
{"Action":"pass","Package":"a","Elapsed":9.7}
`, 0, []string{"slowest tests:\n     9.5s a TestSlow\n     0.1s a TestQuick\n"}},
		{"nothing", "", 1, []string{"0 packages"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			if code := run(strings.NewReader(c.in), &out, nil); code != c.code {
				t.Errorf("exit %d, want %d\n%s", code, c.code, out.String())
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// TestSilence: a tick after nothing was printed says what is going on
// (the build before any package started, then the packages running,
// longest first); a tick after a printed line says nothing.
func TestSilence(t *testing.T) {
	pr, pw := io.Pipe()
	tick := make(chan time.Time)
	var out syncbuf.Buffer
	code := make(chan int, 1)
	go func() { code <- run(pr, &out, tick) }()
	waitFor := func(want string) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), want); {
			if time.Now().After(end) {
				t.Fatalf("output lacks %q:\n%s", want, out.String())
			}
			time.Sleep(time.Millisecond)
		}
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(pw, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	tick <- time.Now()
	waitFor("building the test binaries; nothing has run yet [0 done")

	send(`{"Action":"start","Package":"slow"}`)
	send(`{"Action":"start","Package":"quick"}`)
	send(`{"Action":"output","Package":"slow","Output":"held back\n"}`)
	send(`{"Action":"pass","Package":"quick","Elapsed":0.1}`)
	waitFor("ok   quick")
	tick <- time.Now() // "ok quick" was printed since the last tick
	tick <- time.Now()
	waitFor("running slow (")
	if n := strings.Count(out.String(), "..   "); n != 2 {
		t.Errorf("%d status lines, want 2:\n%s", n, out.String())
	}
	if strings.Contains(out.String(), "quick (") || strings.Contains(out.String(), "held back") {
		t.Errorf("a finished package shown as running, or held output printed:\n%s", out.String())
	}

	send(`{"Action":"pass","Package":"slow","Elapsed":30}`)
	waitFor("ok   slow")
	tick <- time.Now()
	tick <- time.Now()
	waitFor("building the next test binaries [2 done")
	pw.Close()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d, want 0:\n%s", c, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not end after its input closed")
	}
}

// TestStatusOrder: the packages running are named longest-running first.
func TestStatusOrder(t *testing.T) {
	now := time.Now()
	got := status(map[string]time.Time{"b": now.Add(-5 * time.Second), "a": now.Add(-70 * time.Second)}, 3, 90*time.Second, now)
	if want := "..   running a (1m10s), b (5s) [3 done, 1m30s]"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
