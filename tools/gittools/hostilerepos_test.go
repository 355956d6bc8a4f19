package gittools

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/gitinert/hostile"
)

// TestHostileRepositoriesRefused: git_status and git_diff refuse every
// hostile repository gitinert/hostile builds whose configuration holds a
// knob (a submodule's own configuration among them), naming it, and no
// canary runs. Aliases are not refused here: the git tools run only
// git's own commands, which no alias shadows.
func TestHostileRepositoriesRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, r := range hostile.Repos(t, filepath.Join(w.home, "hostile")) {
		if r.Knob == "" || r.Name == "alias" || strings.HasPrefix(r.Command, "cd ") {
			continue
		}
		for _, tool := range []string{"git_status", "git_diff"} {
			res := w.call(tool, map[string]any{"path": r.Dir})
			if res.Success || !strings.Contains(res.Error, r.Knob) {
				t.Errorf("%s in %s: %+v, want a refusal naming %s", tool, r.Name, res, r.Knob)
			}
		}
		if r.Fired() {
			t.Errorf("%s: the canary ran", r.Name)
		}
	}
}
