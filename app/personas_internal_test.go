package app

import (
	"testing"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/personas"
)

// TestResearcherDeniesEveryMutation: the researcher's deny list names
// real tools only, and every built-in tool that can change something.
func TestResearcherDeniesEveryMutation(t *testing.T) {
	reg, err := BuiltinRegistry(RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := personas.Builtins()["researcher"]
	denied := map[string]bool{}
	for _, n := range r.Deny {
		denied[n] = true
		if _, ok := reg.Lookup(n); !ok {
			t.Errorf("the researcher denies %s, which is no built-in tool", n)
		}
	}
	for _, tl := range reg.Visible() {
		if tl.Level != messages.LevelReadOnly && !denied[tl.Name] {
			t.Errorf("the researcher may call %s (%s)", tl.Name, tl.Level)
		}
	}
}
