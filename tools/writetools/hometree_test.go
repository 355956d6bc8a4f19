package writetools

import (
	"os"
	"testing"
)

// TestTreesHoldingTheHomeNeedAPerson: removing or moving away a
// directory that holds the home directory takes the home's dot entries
// with it (shell startup files, ~/.ssh, ~/.gitconfig) just as removing
// each would, and each of those needs a person; so does the tree, even
// when no name inside it (.git, AGENTS.md) gives it away. Only / and
// $HOME itself are refused outright; their ancestors were approved like
// any directory.
func TestTreesHoldingTheHomeNeedAPerson(t *testing.T) {
	h := newHarness(t)
	h.env.Home = h.path("users/u")
	h.write("users/u/.bashrc", "# rc\n")
	h.write("users/u/.ssh/authorized_keys", "\n")
	h.write("plain/a.txt", "a\n")
	h.write("mine.txt", "mine\n")
	must(t, os.Symlink("users", h.path("people")))
	for _, c := range []struct {
		name  string
		args  map[string]any
		human bool
	}{
		{"rm", map[string]any{"path": "users", "recursive": true}, true},
		{"rm", map[string]any{"path": "people/", "recursive": true}, false}, // the link only: the home stays
		{"mv", map[string]any{"source": "users", "destination": "gone"}, true},
		{"mv", map[string]any{"source": "plain", "destination": "users", "force": true}, true},
		{"cp", map[string]any{"source": "plain", "destination": "users", "force": true}, true},
		{"mv", map[string]any{"source": "mine.txt", "destination": "users/v"}, false},
		{"rm", map[string]any{"path": "plain", "recursive": true}, false},
		{"cp", map[string]any{"source": "users", "destination": "copy"}, false}, // the home stays where it is
	} {
		r := h.propose(c.name, c.args)
		if got := r.Approval.HumanOnly != ""; got != c.human {
			t.Errorf("%s %v: human-only %v (%q), want %v", c.name, c.args, got, r.Approval.HumanOnly, c.human)
		}
	}
}
