package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/iostreams"
	"github.com/jazz-run/jazz/store/agents"
)

// TestRunOnlyTreeIsTheWholeTree: Main gives `jazz run` a tree of the root
// and run alone; for help, bad flags, bad values, missing input, a run
// that fails and one that answers, it behaves as the whole tree does:
// same exit code, same stdout, same stderr (run ids aside).
func TestRunOnlyTreeIsTheWholeTree(t *testing.T) {
	model := chatserver.NewFunc(func(int, chatserver.Request) chatserver.Turn { return chatserver.Turn{Text: "4"} })
	defer model.Close()
	home, cwd := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"maxRetries":0}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (&agents.Store{Home: home}).Create(context.Background(), agents.Agent{Name: "bench", Model: "openai/gpt-4o-mini",
		Config: agents.Config{Tools: []string{"read_file", "ls"}}}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "JAZZ_HOME": home, "OPENAI_BASE_URL": model.URL(), "OPENAI_API_KEY": "test", "NO_COLOR": "1"}
	runIDs := regexp.MustCompile(`run-[0-9a-f-]+`)
	exec := func(runOnly bool, args []string) (int, string, string) {
		io, _, out, errb := iostreams.Test()
		d := Deps{IO: io, Getenv: func(k string) string { return env[k] }, Cwd: cwd}
		code := execute(context.Background(), newRoot(d, runOnly), args, d)
		return code, out.String(), runIDs.ReplaceAllString(errb.String(), "run-ID")
	}
	for _, args := range [][]string{
		{"run", "--help"},
		{"run", "-h", "--json"},
		{"run", "--json"},
		{"run"},
		{"run", "--bogus"},
		{"run", "--bogus", "--json"},
		{"run", "--version"},
		{"run", "help"},
		{"run", "--agent", "bench", "--approval-policy", "nope", "hi"},
		{"run", "--agent", "bench", "--events", "bogus", "--json", "hi"},
		{"run", "--agent", "bench", "--timeout", "0", "hi"},
		{"run", "--agent", "bench", "--json"},
		{"run", "--agent", "nobody", "--json", "hi"},
		{"run", "--agent", "bench", "--config", filepath.Join(cwd, "missing.json"), "hi"},
		{"run", "--agent", "bench", "--json", "--no-stream", "--", "--json"},
		{"run", "--agent", "bench", "--no-stream", "what is 2+2"},
	} {
		wc, wo, we := exec(false, args)
		gc, gout, ge := exec(true, args)
		if gc != wc || gout != wo || ge != we {
			t.Errorf("%q:\n run-only tree: exit %d\n stdout %q\n stderr %q\n whole tree: exit %d\n stdout %q\n stderr %q", args, gc, gout, ge, wc, wo, we)
		}
	}
	if n := len(model.Requests()); n != 4 {
		t.Errorf("the model was asked %d times, want 4 (two answering runs per tree)", n)
	}
}

// TestMainRootIsRunOnlyForRun: only a command line whose first word is
// run gets the small tree.
func TestMainRootIsRunOnlyForRun(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	d := Deps{IO: io, Getenv: func(string) string { return "" }}
	whole := len(NewRootCmd(d).Commands())
	for _, c := range []struct {
		args []string
		n    int
	}{
		{[]string{"run", "--agent", "a"}, 1},
		{[]string{"--debug", "run"}, whole},
		{[]string{"__complete", "run", ""}, whole},
		{[]string{"agent", "list"}, whole},
		{nil, whole},
	} {
		if got := len(mainRoot(d, c.args).Commands()); got != c.n {
			t.Errorf("%q: %d commands, want %d", c.args, got, c.n)
		}
	}
}
