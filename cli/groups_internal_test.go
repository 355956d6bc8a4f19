package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/jazz-run/jazz/iostreams"
)

// Every command that only groups others (jazz bus, jazz approvals, …),
// found by walking the tree so a group added later is covered, fails on a
// word that names none of its commands, in plain and --json mode, and
// still shows its help, exit 0, when given nothing: a script running a
// command this jazz lacks must not take it as done.
func TestGroupsRefuseUnknownCommands(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home, "JAZZ_HOME": home}
	exec := func(args ...string) (int, string, string) {
		io, _, out, errb := iostreams.Test()
		d := Deps{IO: io, Getenv: func(k string) string { return env[k] }, Cwd: home}
		return execute(context.Background(), newRoot(d, false), args, d), out.String(), errb.String()
	}
	var groups [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.HasParent() && c.HasSubCommands() && !c.Runnable() {
			groups = append(groups, path)
		}
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	io, _, _, _ := iostreams.Test()
	walk(newRoot(Deps{IO: io, Getenv: func(string) string { return "" }, Cwd: home}, false), nil)
	if len(groups) < 3 {
		t.Fatalf("found only %d groups: %v", len(groups), groups)
	}
	for _, g := range groups {
		if code, _, errs := exec(append(g, "no-such-command")...); code == ExitOK || !strings.Contains(errs, `unknown command "no-such-command"`) {
			t.Errorf("jazz %s no-such-command: exit %d, stderr %q", strings.Join(g, " "), code, errs)
		}
		if code, out, _ := exec(append(g, "no-such-command", "--json")...); code == ExitOK || !strings.Contains(out, `"ok":false`) {
			t.Errorf("jazz %s no-such-command --json: exit %d, stdout %q", strings.Join(g, " "), code, out)
		}
		if code, out, _ := exec(g...); code != ExitOK || !strings.Contains(out, "Available Commands") {
			t.Errorf("jazz %s: exit %d, stdout %q", strings.Join(g, " "), code, out)
		}
	}
}
