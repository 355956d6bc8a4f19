// Command testprogress reads `go test -json` on stdin and prints one line
// per package as it finishes (ok, FAIL or no tests, with its time), so a
// long `make test` shows progress instead of holding every result until
// the packages before it are done. A failing package's output is printed
// whole. At the end it names the slowest tests, where a faster suite
// starts. While nothing ends for a while it says what it is waiting on
// (the packages running, or the build before the first: a cold build cache
// compiles the whole race-enabled tree first, minutes of no other output).
// It exits 1 when any package failed, none ran, or the stream broke.
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

// quiet is how long the output may stay silent before a status line says
// what is still going on.
const quiet = 20 * time.Second

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

func main() {
	tick := time.NewTicker(quiet)
	defer tick.Stop()
	os.Exit(run(os.Stdin, os.Stdout, tick.C))
}

// readLines sends each line of in, then the scanner's error (nil at a
// clean end) on errc. The stream ends when go test exits.
func readLines(in io.Reader, lines chan<- []byte, errc chan<- error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		lines <- slices.Clone(sc.Bytes())
	}
	errc <- sc.Err()
}

// run prints the stream from in; at each tick with nothing printed since
// the one before, it prints a status line.
func run(in io.Reader, out io.Writer, tick <-chan time.Time) int {
	start := time.Now()
	outputs := map[string]*strings.Builder{}
	running := map[string]time.Time{}
	failed, done := 0, 0
	var tests []timing
	lines, errc := make(chan []byte), make(chan error, 1)
	go readLines(in, lines, errc)
	// Progress is what reached out: buffered output of a running package
	// is none.
	cw := &countingWriter{w: out}
	out = cw
	seen := 0
	var err error
	for ended := false; !ended; {
		var line []byte
		select {
		case line = <-lines:
		case err = <-errc:
			ended = true
			continue
		case now := <-tick:
			if cw.n == seen {
				fmt.Fprintln(out, status(running, done, now.Sub(start), now))
			}
			seen = cw.n
			continue
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			// Build errors come as plain text between the JSON lines.
			fmt.Fprintln(out, string(line))
			if strings.HasPrefix(string(line), "FAIL") || strings.Contains(string(line), "build failed") {
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
		if e.Action == "start" {
			running[e.Package] = time.Now()
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
		case "pass", "skip", "fail":
			delete(running, e.Package)
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
	if err != nil {
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

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// status is the line printed after a silence: the packages whose tests
// are running (longest first, with how long), or that none has started.
func status(running map[string]time.Time, done int, since time.Duration, now time.Time) string {
	at := fmt.Sprintf("[%d done, %s]", done, since.Round(time.Second))
	if len(running) == 0 {
		if done == 0 {
			return "..   building the test binaries; nothing has run yet " + at + " (a cold build cache compiles the race-enabled tree first)"
		}
		return "..   building the next test binaries " + at
	}
	pkgs := make([]string, 0, len(running))
	for p := range running {
		pkgs = append(pkgs, p)
	}
	slices.SortFunc(pkgs, func(a, b string) int { return cmp.Or(running[a].Compare(running[b]), strings.Compare(a, b)) })
	shown := make([]string, 0, len(pkgs))
	for _, p := range pkgs {
		shown = append(shown, fmt.Sprintf("%s (%s)", p, now.Sub(running[p]).Round(time.Second)))
	}
	return "..   running " + strings.Join(shown, ", ") + " " + at
}
