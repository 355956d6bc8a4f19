package cli_test

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/jazz-run/jazz/cli"
	"github.com/jazz-run/jazz/mcpclient/mcptest"
)

// TestMain lets the test binary be jazz itself when a script runs
// "jazz", the way shfmt's and gh's script tests do.
func TestMain(m *testing.M) {
	// The MCP tests start this test binary as their stdio server.
	if reportingServer() || mcptest.Main() {
		return
	}
	testscript.Main(m, map[string]func(){"jazz": func() { os.Exit(cli.Main()) }})
}

// TestScripts runs the CLI contract in testdata/script: each .txtar is
// a session of commands with their stdin, stdout, stderr and exit code.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "../testdata/script",
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			// A clean world: nothing of the developer's jazz or keys.
			e.Setenv("JAZZ_HOME", e.WorkDir+"/home")
			e.Setenv("HOME", e.WorkDir)
			e.Setenv("NO_COLOR", "1")
			for _, k := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "TRACEPARENT"} {
				e.Setenv(k, "")
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// exits N cmd args...: runs cmd and checks its exit code is
			// exactly N (the headless contract has two: 0 and 1).
			"exits": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 2 {
					ts.Fatalf("usage: exits N command [args...]")
				}
				want, err := strconv.Atoi(args[0])
				if err != nil {
					ts.Fatalf("exits: %v", err)
				}
				code := 0
				if err := ts.Exec(args[1], args[2:]...); err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) {
						ts.Fatalf("exits: %v", err)
					}
					code = ee.ExitCode()
				}
				if code != want {
					ts.Fatalf("exit %d, want %d", code, want)
				}
			},
		},
	})
}
