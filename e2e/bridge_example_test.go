package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// TestBridgeExample (issue 13 item 12): examples/bridge drives the built
// binary as a chat bot would: an approval answered yes writes the file,
// one answered no leaves it unwritten, and the answer is printed.
func TestBridgeExample(t *testing.T) {
	t.Parallel()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bridge := filepath.Join(t.TempDir(), "bridge")
	build := exec.Command("go", "build", "-o", bridge, "./examples/bridge")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the example: %v\n%s", err, out)
	}
	for _, c := range []struct {
		answer  string
		written bool
	}{{"y", true}, {"n", false}} {
		t.Run(c.answer, func(t *testing.T) {
			wr := chatserver.Call{ID: "w1", Name: "write_file", Arguments: chatserver.JSONArgs(map[string]string{"path": "hello.txt", "content": "hi\n"})}
			srv := chatserver.New(calls(wr), answer("all done"))
			defer srv.Close()
			w := newWorld(t, srv.URL())
			w.agent("dev", "write_file")
			cmd := exec.Command(bridge, "--jazz", jazzBin, "--agent", "dev", "--answer", c.answer, "write hello.txt")
			cmd.Dir, cmd.Env = w.cwd, w.environ()
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil || strings.TrimSpace(string(out)) != "all done" {
				t.Fatalf("bridge: %v, stdout %q\nstderr: %s", err, out, stderr.String())
			}
			_, statErr := os.Stat(filepath.Join(w.cwd, "hello.txt"))
			if (statErr == nil) != c.written {
				t.Fatalf("answered %s: file written = %v\nstderr: %s", c.answer, statErr == nil, stderr.String())
			}
			if !strings.Contains(stderr.String(), "dev wants write_file") || !strings.Contains(stderr.String(), "[run run-") {
				t.Errorf("bridge stderr:\n%s", stderr.String())
			}
		})
	}
}
