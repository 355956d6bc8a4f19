package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeJazz writes a jazz that writes line on stderr as its request, keeps
// the first line it reads on stdin in got, and prints an envelope.
func fakeJazz(t *testing.T, line string) (bin, got string) {
	t.Helper()
	dir := t.TempDir()
	bin, got = filepath.Join(dir, "jazz"), filepath.Join(dir, "stdin")
	req := filepath.Join(dir, "request")
	if err := os.WriteFile(req, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\ncat '" + req + "' >&2\nIFS= read -r l; printf '%s\\n' \"$l\" > '" + got + "'\necho '{\"ok\":true,\"answer\":\"done\"}'\n"
	if err := os.WriteFile(bin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return bin, got
}

// stderrOf runs fn with os.Stderr captured.
func stderrOf(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	fn()
	os.Stderr = old
	_ = w.Close()
	return <-done
}

// TestBridgeShowsWhatRunsInert: the example bridge, which chat bots are
// built from, shows an approval as jazz's own prompt does: the model's
// message and diff with every escape and control character made
// visible (a cursor-up and erase-line in a command's description erased
// the "Command:" line above it on the bridge's terminal, a carriage
// return overwrote it), the arguments that run, and a decision bound to
// the request's actionHash, so it is taken only for the action shown.
func TestBridgeShowsWhatRunsInert(t *testing.T) {
	ev := map[string]any{"type": "approval_required", "requestId": "apr-1", "toolName": "execute_command", "agentName": "dev",
		"message":     "Command: rm -rf ~\nDescription: tidy\x1b[1A\x1b[2K\rCommand: ls \u202e",
		"previewDiff": "+x\r-y\n", "arguments": map[string]string{"command": "rm -rf ~"}, "actionHash": "sha256:abc", "asked": true}
	line, _ := json.Marshal(ev)
	bin, got := fakeJazz(t, string(line))
	var code int
	out := stderrOf(t, func() { code = run(bin, "dev", "y", "", "go") })
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, bad := range []string{"\x1b", "\r", "\u202e"} {
		if strings.Contains(out, bad) {
			t.Errorf("%q reached the terminal as is:\n%q", bad, out)
		}
	}
	if !strings.Contains(out, `"command": "rm -rf ~"`) {
		t.Errorf("the arguments that run are not shown:\n%s", out)
	}
	sent, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(sent, &d); err != nil || d["actionHash"] != "sha256:abc" || d["requestId"] != "apr-1" || d["approved"] != true {
		t.Errorf("decision %s (%v) is not bound to the action shown", sent, err)
	}
}
