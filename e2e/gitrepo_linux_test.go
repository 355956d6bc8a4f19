package e2e_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/gitinert/hostile"
)

// TestAutoApprovedGitRunsNoRepositoryProgram: through the built binary,
// a scripted model runs git in repositories whose own configuration runs
// a canary (each knob, an included and a worktree configuration, a .git
// file, discovery upward, a nested repository entered by cd, a hook, an
// alias). Under an allowlist that covers every one of the commands, and
// under the read-only policy, no canary runs and the model is told why;
// under the high-risk policy the same commands do run the canaries, so
// the test can fail.
func TestAutoApprovedGitRunsNoRepositoryProgram(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config, policy string
		fire                 bool
	}{
		{"allowlist", `{"maxRetries": 0, "autoApprovedCommands": ["git", "cd"]}`, "", false},
		{"read-only policy", `{"maxRetries": 0}`, "read-only", false},
		{"high-risk policy", `{"maxRetries": 0}`, "high-risk", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			repos := hostile.Repos(t, filepath.Join(root, "repos"))
			var cs []chatserver.Call
			for _, r := range repos {
				cs = append(cs, chatserver.Call{ID: r.Name, Name: "execute_command", Arguments: chatserver.JSONArgs(map[string]string{
					"command": r.Command, "description": "e2e", "workingDirectory": r.Dir})})
			}
			srv := chatserver.New(calls(cs...), answer("done"))
			defer srv.Close()
			w := newWorld(t, srv.URL())
			runUnattended(t, w, tc.config, tc.policy)
			results := toolResults(srv)
			for _, r := range repos {
				got := results[r.Name]
				switch {
				case tc.fire:
					if r.Fires && !r.Fired() {
						t.Errorf("%s: under the high-risk policy %q did not run the canary: %s", r.Name, r.Command, got)
					}
				case r.Fired():
					t.Errorf("%s: %q ran the repository's canary: %s", r.Name, r.Command, got)
				case tc.policy == "" && r.Knob != "" && !strings.Contains(got, "not auto-approved: the repository's config runs programs: "+r.Knob):
					t.Errorf("%s: %q was not refused for %s: %s", r.Name, r.Command, r.Knob, got)
				case tc.policy == "" && r.Knob == "" && !strings.Contains(got, `"success":true`):
					t.Errorf("%s: %q, whose configuration is inert, did not run: %s", r.Name, r.Command, got)
				}
			}
		})
	}
}
