// Command postbase is the harness's yardstick for a one-turn run: the
// smallest Go program that makes the one POST such a run makes (to the
// URL in JAZZ_BENCH_POST) and reads the answer. It imports net/http and
// nothing else of note, so its start-up is what any Go program that
// speaks HTTP pays; the harness builds it the way `make build` builds
// jazz (CGO_ENABLED=0).
package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

func main() {
	body := `{"messages":[{"content":"bench: one turn","role":"user"}],"model":"gpt-4o-mini"}`
	req, err := http.NewRequest(http.MethodPost, os.Getenv("JAZZ_BENCH_POST")+"/chat/completions", strings.NewReader(body))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer bench")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"4"`)) {
		fmt.Fprintf(os.Stderr, "baseline POST: %d %v %s\n", resp.StatusCode, err, b)
		os.Exit(1)
	}
}
