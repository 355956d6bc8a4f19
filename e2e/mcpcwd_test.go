package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/mcpclient/mcptest"
)

// A server the user defined (~/.agents/mcp.json, no trust record needed)
// must not let a cloned repository choose what runs: in an untrusted
// project it starts outside it, a relative command (bin/srv) or argument
// (".") is refused with a warning, and a relative PATH entry
// (node_modules/.bin, as npx would use) finds nothing of the project.
// Once the user trusts the project, its servers start in it as before.
func TestMCPUserServerOutsideUntrustedProject(t *testing.T) {
	t.Parallel()
	tag := fmt.Sprintf("w%d", time.Now().UnixNano())
	w := newWorld(t, "")
	marks := t.TempDir()
	ran := func(name string) bool {
		_, err := os.Stat(filepath.Join(marks, name))
		return err == nil
	}
	// The repository's programs record that they ran.
	for _, p := range []string{"bin/srv", "node_modules/.bin/rec"} {
		f := w.file(p, "#!/bin/sh\ntouch "+filepath.Join(marks, filepath.Base(p))+"\n")
		if err := os.Chmod(f, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pwdFile := filepath.Join(marks, "pwd")
	w.mcpConfig(map[string]any{
		"rel": map[string]any{"command": "bin/srv"},
		// As npx runs node_modules/.bin of where it starts: a shell that
		// records its directory, runs "rec" by PATH, then serves.
		"viapath": map[string]any{
			"command": "/bin/sh",
			"args":    []string{"-c", fmt.Sprintf("pwd -P > %s; rec; exec %s jzmcp-%s", pwdFile, os.Args[0], tag)},
			"env":     map[string]string{"PATH": "node_modules/.bin:/usr/bin:/bin", mcptest.ServerEnv: mcptest.ModeNormal},
		},
		"dot": testServer(mcptest.ModeNormal, tag, map[string]any{"args": []string{"jzmcp-" + tag, "."}}),
	})
	w.agent("m", "mcp_rel", "mcp_viapath", "mcp_dot")
	srv := chatserver.New(answer("ok"), answer("ok"))
	defer srv.Close()
	w.baseURL = srv.URL()

	// A relative location in jazz's own environment leads back into the
	// project too.
	w.env = append(w.env, "PYTHONPATH=.")
	r := w.exec("", "run", "--agent", "m", "--json", "go")
	wantSuccess(t, r)
	noneLeft(t, tag)
	if !strings.Contains(r.stderr, "your environment names relative locations in PYTHONPATH") {
		t.Errorf("no warning about PYTHONPATH=.:\n%s", r.stderr)
	}
	if ran("srv") || ran("rec") {
		t.Fatalf("an untrusted project's program ran (srv %v, rec %v)\nstderr: %s", ran("srv"), ran("rec"), r.stderr)
	}
	cwd, _ := filepath.EvalSymlinks(w.cwd)
	// The world's HOME is its JAZZ_HOME, which servers see empty: they
	// start in the root directory instead.
	if b, err := os.ReadFile(pwdFile); err != nil || strings.TrimSpace(string(b)) != "/" {
		t.Fatalf("the user's server started in %q (%v), want / (outside the project %s)\nstderr: %s", b, err, cwd, r.stderr)
	}
	for _, want := range []string{"mcpServers.rel.command", "mcpServers.dot.args[1]", "mcpServers.viapath.env names relative locations in PATH", "jazz trust"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
		}
	}
	tl := offeredTools(t, srv.Requests()[0])
	if _, ok := tl["mcp_viapath_echo"]; !ok {
		t.Errorf("the server started outside the project was not offered: %v", tl)
	}
	for name := range tl {
		if strings.HasPrefix(name, "mcp_dot_") || strings.HasPrefix(name, "mcp_rel_") {
			t.Errorf("refused server offered %s", name)
		}
	}

	// jazz mcp list says which servers this project keeps from starting.
	if r := w.exec("", "mcp", "list"); r.code != 0 || !strings.Contains(r.stdout, "rel\trefused-here") || !strings.Contains(r.stdout, "mcpServers.dot.args[1]") {
		t.Errorf("mcp list: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// Trusted, the project is the user's: its servers start in it.
	w.file(".jazz/config.json", "{}")
	if r := w.exec("", "trust"); r.code != 0 {
		t.Fatalf("trust: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = w.exec("", "run", "--agent", "m", "--json", "go")
	wantSuccess(t, r)
	noneLeft(t, tag)
	if b, err := os.ReadFile(pwdFile); err != nil || strings.TrimSpace(string(b)) != cwd {
		t.Fatalf("in a trusted project the server started in %q (%v), want %s", b, err, cwd)
	}
	if !ran("rec") {
		t.Errorf("in a trusted project the server's PATH lost its relative entry\nstderr: %s", r.stderr)
	}
	if _, ok := offeredTools(t, srv.Requests()[1])["mcp_dot_echo"]; !ok {
		t.Errorf("in a trusted project the server given \".\" was not started\nstderr: %s", r.stderr)
	}
}
