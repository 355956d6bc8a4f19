package main

import (
	"strings"
	"testing"
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
			if code := run(strings.NewReader(c.in), &out); code != c.code {
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
