// Command testprogress reads `go test -json` on stdin and prints one line
// per package as it finishes (ok, FAIL or no tests, with its time), so a
// long `make test` shows progress instead of holding every result until
// the packages before it are done. A failing package's output is printed
// whole. At the end it names the slowest tests, where a faster suite
// starts. It exits 1 when any package failed, none ran, or the stream broke.
//
//	go test -json ./... | go run ./internal/testprogress
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// slowest is how many of the slowest tests the summary names.
const slowest = 5

// timing is one top-level test's time.
type timing struct {
	pkg, test string
	elapsed   float64
}

// event is one line of `go test -json` (test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() { os.Exit(run(os.Stdin, os.Stdout)) }

func run(in io.Reader, out io.Writer) int {
	start := time.Now()
	outputs := map[string]*strings.Builder{}
	failed, done := 0, 0
	var tests []timing
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Build errors come as plain text between the JSON lines.
			fmt.Fprintln(out, sc.Text())
			if strings.HasPrefix(sc.Text(), "FAIL") || strings.Contains(sc.Text(), "build failed") {
				failed++
			}
			continue
		}
		if e.Action == "build-output" {
			// A build error, reported before its package's fail.
			fmt.Fprint(out, e.Output)
			continue
		}
		if e.Package == "" {
			continue
		}
		b := outputs[e.Package]
		if b == nil {
			b = &strings.Builder{}
			outputs[e.Package] = b
		}
		if e.Action == "output" {
			b.WriteString(e.Output)
			continue
		}
		if e.Test != "" {
			if (e.Action == "pass" || e.Action == "fail") && !strings.Contains(e.Test, "/") {
				tests = append(tests, timing{e.Package, e.Test, e.Elapsed})
			}
			continue
		}
		switch e.Action {
		case "pass", "skip":
			done++
			status := "ok  "
			if e.Action == "skip" || strings.Contains(b.String(), "[no test files]") {
				status = "--  "
			}
			fmt.Fprintf(out, "%s %-55s %6.1fs   [%d done, %s]\n", status, e.Package, e.Elapsed, done, time.Since(start).Round(time.Second))
			delete(outputs, e.Package)
		case "fail":
			done++
			failed++
			fmt.Fprint(out, b.String())
			fmt.Fprintf(out, "FAIL %-55s %6.1fs   [%d done, %s]\n", e.Package, e.Elapsed, done, time.Since(start).Round(time.Second))
			delete(outputs, e.Package)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "testprogress:", err)
		return 1
	}
	fmt.Fprintf(out, "%d packages in %s, %d failed\n", done, time.Since(start).Round(time.Second), failed)
	slices.SortStableFunc(tests, func(a, b timing) int { return cmp.Compare(b.elapsed, a.elapsed) })
	if len(tests) > 0 {
		fmt.Fprintln(out, "slowest tests:")
	}
	for _, x := range tests[:min(slowest, len(tests))] {
		fmt.Fprintf(out, "  %6.1fs %s %s\n", x.elapsed, x.pkg, x.test)
	}
	if failed > 0 || done == 0 {
		return 1
	}
	return 0
}
