package e2e_test

import (
	"strings"
	"testing"
)

// TestJSONContractHostileLines: with --json on the command line as a
// flag (not as another flag's value, not after "--"), stdout is exactly
// one failure envelope with costUSD 0, whatever else is wrong with the
// line; and without it, stdout stays empty and the message is on stderr.
func TestJSONContractHostileLines(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "http://127.0.0.1:1/v1")
	cfg := w.file("cfg.json", `{"maxRetries": 0}`)
	cases := []struct {
		name string
		args []string
		want string // in the envelope's error (json) or on stderr (plain)
		json bool
	}{
		{"global flag value before run, unknown flag", []string{"--config", cfg, "run", "--json", "--bogus"}, "unknown flag: --bogus", true},
		{"global flag=value before run", []string{"--config=" + cfg, "run", "--json", "--bogus"}, "unknown flag: --bogus", true},
		{"bool global flag before run", []string{"-v", "--debug", "run", "--bogus", "--json"}, "unknown flag: --bogus", true},
		{"unknown flag before --json", []string{"run", "--bogus", "--json", "--agent", "x", "hi"}, "unknown flag: --bogus", true},
		{"unknown shorthand", []string{"run", "--json", "-Z"}, "unknown shorthand flag", true},
		{"--json before the command", []string{"--json", "run", "--agent", "x", "hi"}, "--json goes after the command name", true},
		{"--json before a global flag's value", []string{"--json", "--config", cfg, "run", "--agent", "x", "hi"}, "", true},
		{"unknown command", []string{"frobnicate", "--json"}, "unknown command", true},
		{"no command", []string{"--json"}, "unknown flag: --json", true},
		{"group without subcommand", []string{"agent", "--json"}, "unknown flag: --json", true},
		{"group with --json, no subcommand", []string{"approvals", "--json"}, "jazz approvals needs a command", true},
		{"flag missing its value", []string{"run", "--json", "--timeout"}, "flag needs an argument", true},
		{"bad flag value", []string{"run", "--json", "--agent", "x", "--timeout", "30s", "hi"}, `--timeout must be a positive integer (got "30s").`, true},
		{"bad --json value", []string{"run", "--json=maybe", "--agent", "x", "hi"}, "invalid argument", true},
		{"missing --config file", []string{"--config", "/nonexistent/jazz.json", "run", "--json", "--agent", "x", "hi"}, "/nonexistent/jazz.json", true},
		{"missing agent", []string{"run", "--json", "hi"}, "No agent specified", true},
		{"prompt after --", []string{"run", "--json", "--agent", "nobody", "--", "--bogus"}, "No agent found with ID: nobody", true},
		{"agent subcommand with --json", []string{"agent", "create", "--json", "--name", "n"}, "unknown flag: --json", true},
		{"--json last of several", []string{"run", "--json=false", "--bogus", "--json"}, "unknown flag: --bogus", true},

		{"--json as a flag's value", []string{"run", "--agent", "--json", "hi"}, "No agent found with ID: --json", false},
		{"--json after --", []string{"run", "--agent", "nobody", "--", "--json"}, "No agent found with ID: nobody", false},
		{"--json=false", []string{"run", "--json=false", "--bogus"}, "unknown flag: --bogus", false},
		{"--json as a global flag's value", []string{"--config", "--json", "run", "--agent", "x", "hi"}, "--json", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := w.exec("", c.args...)
			if r.code != 1 {
				t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			if !c.json {
				if r.stdout != "" || !strings.Contains(r.stderr, c.want) {
					t.Fatalf("plain: stdout %q, stderr %q lacks %q", r.stdout, r.stderr, c.want)
				}
				return
			}
			e := wantFailure(t, r, c.want)
			if e.CostUSD != 0 || strings.TrimSpace(e.Error) == "" || !strings.Contains(r.stdout, `"costUSD":0`) {
				t.Fatalf("envelope %s", r.stdout)
			}
		})
	}
}
