package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// The gate's soundness (issue 9), through the built binary: a scripted
// model proposes one command of each class of hole, unattended, under the
// issue's allowlist and under --approval-policy read-only. None is
// approved, none writes, and the model is told why ("not auto-approved:
// …"); the harmless neighbours run.

// soundWorld is a git repository with the traps the classes aim at: a
// .gitconfig that runs a program (for HOME=), a directory named like a
// subcommand (for git -C), a node_modules/.bin/ls (for npx).
func soundWorld(t *testing.T, srv *chatserver.Server) *world {
	t.Helper()
	w := newWorld(t, srv.URL())
	w.file("f", "b\na\n")
	w.file("status/.keep", "")
	w.file("evilhome/.gitconfig", "[core]\n\tfsmonitor = touch pwn-home\n")
	w.file("node_modules/.bin/ls", "#!/bin/sh\ntouch pwn-npx\n")
	w.file("dir/x", "x\n")
	// A repository's own `ls`, reachable through a relative PATH entry
	// the user's environment has: the child's PATH drops it.
	if err := os.Chmod(w.file("ls", "#!/bin/sh\ntouch pwn-path\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "PATH=.:"+os.Getenv("PATH"))
	// An embedded bare repository whose config runs a program.
	w.file("evilbare/HEAD", "ref: refs/heads/main\n")
	w.file("evilbare/config", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = touch pwn-bare\n")
	w.file("evilbare/objects/info/.keep", "")
	w.file("evilbare/refs/heads/.keep", "")
	for _, args := range [][]string{{"init", "-q"}, {"add", "f"}, {"-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "one"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = w.cwd
		cmd.Env = append(os.Environ(), "HOME="+w.home, "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return w
}

// TestDenylistSeesExpandedRedirections: a redirection target computed at
// run time could name a home dotfile, so even the high-risk policy does
// not approve the command: only a person may, and a run nobody answers
// rejects it (when a person does approve it, the denylist still refuses
// the expanded target: shelltool's TestExecuteRuntimeDenylist).
func TestDenylistSeesExpandedRedirections(t *testing.T) {
	t.Parallel()
	_, res, w := shellRun(t, nil,
		calls(shellCall("r1", "mkdir -p ~/.ssh; f=~/.ssh/authorized_keys; echo key >> $f")),
		answer("done"))
	if !strings.Contains(res["r1"], `"rejected":true`) {
		t.Fatalf("tool result %s", res["r1"])
	}
	if _, err := os.Stat(filepath.Join(w.home, ".ssh", "authorized_keys")); err == nil {
		t.Fatal("authorized_keys was written")
	}
}

// runUnattended runs an agent with execute_command once, unattended,
// under config and, when set, an approval policy.
func runUnattended(t *testing.T, w *world, config, policy string) {
	t.Helper()
	w.writeConfig(config)
	w.agent("sh", "execute_command")
	args := []string{"run", "--agent", "sh", "--json", "--timeout", "60000"}
	if policy != "" {
		args = append(args, "--approval-policy", policy)
	}
	wantSuccess(t, w.exec("", append(args, "go")...))
}

// toolResults is what the model was sent back for each tool call, by id.
func toolResults(srv *chatserver.Server) map[string]string {
	results := map[string]string{}
	for _, q := range srv.Requests() {
		for _, m := range q.ToolMessages() {
			if m.Content != nil {
				results[m.ToolCallID] = *m.Content
			}
		}
	}
	return results
}

func TestGateRefusesEveryClassOfHole(t *testing.T) {
	t.Parallel()
	type probe struct {
		id, command string
		refused     bool   // declined or blocked, with the reason below
		why         string // in the tool result when refused
		dir         string // workingDirectory, when set
	}
	for _, tc := range []struct {
		name   string
		config string
		policy string
		probes []probe
	}{
		{
			name:   "allowlist",
			config: `{"maxRetries": 0, "autoApprovedCommands": ["git status", "ls", "cat", "echo", "grep"]}`,
			probes: []probe{
				{"ok1", "git status --short", false, "", ""},
				{"ok2", "LANG=C ls -la dir && cat f | grep a", false, "", ""},
				// 1: options before the subcommand and their values.
				{"c1a", "git -C status tag x", true, "not auto-approved", ""},
				{"c1b", "git -c core.fsmonitor='touch pwn-c' status", true, "not auto-approved", ""},
				{"c1c", "git --config-env=core.pager=PATH status", true, "not auto-approved", ""},
				// 2: environment assignments.
				{"c2", "HOME=./evilhome git status", true, "only LANG, LANGUAGE", ""},
				// 5: wrappers.
				{"c5a", "npx ls", true, "not auto-approved", ""},
				{"c5b", "env ls", true, "runs another program", ""},
				// Interpreter state.
				{"cs", "for PATH in ./node_modules/.bin; do ls; done", true, "loop variable", ""},
				// 14: the denylist sees normalised argv.
				{"c14a", "rm -v -r dir", true, "blocked", ""},
				{"c14b", "/bin/kill -s KILL 1", true, "blocked", ""},
				// An approved git status whose working directory is an
				// embedded bare repository: git refuses the repository.
				{"cw", "git status", true, "safe.bareRepository", "evilbare"},
			},
		},
		{
			name:   "read-only policy",
			config: `{"maxRetries": 0}`,
			policy: "read-only",
			probes: []probe{
				{"ok3", "sort -r f", false, "", ""},
				{"ok4", "git log --oneline -1", false, "", ""},
				// 3: words the interpreter expands.
				{"c3a", "sort {-o,pwn-brace} f", true, "not auto-approved", ""},
				{"c3b", "sort * ", true, "not auto-approved", ""},
				// 4: abbreviated, clustered and glued options; writing programs.
				{"c4a", "sort --o=pwn-abbrev f", true, "not on its list", ""},
				{"c4b", "sort -ropwn-cluster f", true, "not on its list", ""},
				{"c4c", "git log --output=pwn-git", true, "not auto-approved", ""},
				{"c4d", "find . -name x -delete", true, "not auto-approved", ""},
				{"c4e", "sed -n 'w pwn-sed' f", true, "not auto-approved", ""},
				{"c4f", "awk 'BEGIN{system(\"touch pwn-awk\")}'", true, "not auto-approved", ""},
				{"c4g", "date 01010000", true, "sets the clock", ""},
				// 6: undecided commands get no model rating in an unattended
				// run: the static verdict stands.
				{"c6", "make docs", true, "not auto-approved", ""},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cs []chatserver.Call
			for _, p := range tc.probes {
				c := shellCall(p.id, p.command)
				if p.dir != "" {
					c.Arguments = chatserver.JSONArgs(map[string]string{"command": p.command, "description": "e2e", "workingDirectory": p.dir})
				}
				cs = append(cs, c)
			}
			srv := chatserver.New(calls(cs...), answer("done"))
			defer srv.Close()
			w := soundWorld(t, srv)
			runUnattended(t, w, tc.config, tc.policy)
			results := toolResults(srv)
			if reqs := srv.Requests(); len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2: a command was rated by a model", len(reqs))
			}
			for _, p := range tc.probes {
				got, ok := results[p.id]
				switch {
				case !ok:
					t.Errorf("%s (%s): no tool result", p.id, p.command)
				case p.refused && !strings.Contains(got, p.why):
					t.Errorf("%s (%s) was not refused with %q: %s", p.id, p.command, p.why, got)
				case !p.refused && !strings.Contains(got, `"success":true`):
					t.Errorf("%s (%s) did not run: %s", p.id, p.command, got)
				}
			}
			// Nothing wrote: no trap fired, no tag, no file.
			matches, _ := filepath.Glob(filepath.Join(w.cwd, "pwn*"))
			deeper, _ := filepath.Glob(filepath.Join(w.cwd, "*", "pwn*"))
			matches = append(matches, deeper...)
			if len(matches) > 0 {
				t.Errorf("a refused command wrote: %v", matches)
			}
			if _, err := os.Stat(filepath.Join(w.cwd, ".git", "refs", "tags", "x")); err == nil {
				t.Error("git -C status tag x created a tag")
			}
			if _, err := os.Stat(filepath.Join(w.cwd, "dir", "x")); err != nil {
				t.Errorf("dir/x is gone: %v", err)
			}
		})
	}
}
