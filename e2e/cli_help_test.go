package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Help asked for, completion scripts and the version are answers: they go
// to stdout. Usage printed because of an error stays on stderr.
func TestHelpGoesToStdout(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "http://127.0.0.1:1/v1")
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"help", "run"}, {"agent", "--help"}, {"-h"}} {
		r := w.exec("", args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage:") || r.stderr != "" {
			t.Errorf("jazz %v: exit %d, want help on stdout and nothing on stderr\nstdout: %q\nstderr: %q", args, r.code, r.stdout, r.stderr)
		}
	}
	r := w.exec("", "run", "--help")
	for _, flag := range []string{"--agent", "--approval-policy", "--events", "--timeout"} {
		if !strings.Contains(r.stdout, flag) {
			t.Errorf("jazz run --help does not list %s", flag)
		}
	}
	r = w.exec("", "run", "--no-such-flag")
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "unknown flag: --no-such-flag") ||
		!strings.Contains(r.stderr, "Run 'jazz run --help' for usage.") {
		t.Errorf("a bad flag: exit %d, want the error and a pointer to help on stderr only\nstdout: %q\nstderr: %q", r.code, r.stdout, r.stderr)
	}
	// Under --json, stdout is the envelope alone: help never lands there.
	r = w.exec("", "run", "--json", "--help")
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "Usage:") {
		t.Errorf("jazz run --json --help: exit %d\nstdout: %q\nstderr: %q", r.code, r.stdout, r.stderr)
	}
}

func TestCompletionScriptsGoToStdout(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "http://127.0.0.1:1/v1")
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := w.exec("", "completion", shell)
		if r.code != 0 || len(r.stdout) < 500 || r.stderr != "" {
			t.Errorf("jazz completion %s: exit %d, %d bytes on stdout, stderr %q", shell, r.code, len(r.stdout), r.stderr)
		}
	}
	r := w.exec("", "__complete", "run", "--a")
	for _, want := range []string{"--agent", "--approval-policy", "--auto-approve-tools"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("__complete run --a lacks %s:\n%s", want, r.stdout)
		}
	}
	// Values: policies, and the agents of JAZZ_HOME by name.
	w.agent("reviewer", "read_file")
	r = w.exec("", "__complete", "run", "--approval-policy", "")
	if !strings.Contains(r.stdout, "low-risk") || !strings.Contains(r.stdout, "high-risk") {
		t.Errorf("__complete --approval-policy: %q", r.stdout)
	}
	r = w.exec("", "__complete", "run", "--agent", "rev")
	if !strings.Contains(r.stdout, "reviewer") {
		t.Errorf("__complete --agent rev: %q", r.stdout)
	}
}

// The generated bash script, sourced in a real bash, completes `jazz run
// --a` through the binary on PATH.
func TestBashCompletionSourced(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	w := newWorld(t, "http://127.0.0.1:1/v1")
	r := w.exec("", "completion", "bash")
	if r.code != 0 {
		t.Fatalf("completion bash: exit %d: %s", r.code, r.stderr)
	}
	script := filepath.Join(t.TempDir(), "jazz.bash")
	if err := os.WriteFile(script, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	// bash-completion's _get_comp_words_by_ref, when the package is not
	// installed, reduced to what the script needs.
	driver := `
if [ -f /usr/share/bash-completion/bash_completion ]; then . /usr/share/bash-completion/bash_completion; fi
if ! declare -F _get_comp_words_by_ref >/dev/null; then
  _get_comp_words_by_ref() { cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
fi
. "$1"
COMP_WORDS=(jazz run --a); COMP_CWORD=2; COMP_LINE="jazz run --a"; COMP_POINT=${#COMP_LINE}
__start_jazz 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}"
`
	cmd := exec.Command(bash, "-c", driver, "driver", script)
	cmd.Env = append(w.environ(), "PATH="+filepath.Dir(jazzBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{"--agent", "--approval-policy", "--auto-approve-tools"} {
		if !strings.Contains(got, want) {
			t.Errorf("bash completion of `jazz run --a` lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "--timeout") {
		t.Errorf("bash completion of `jazz run --a` offers flags not starting with --a:\n%s", got)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "http://127.0.0.1:1/v1")
	a := w.exec("", "--version")
	b := w.exec("", "version")
	if a.code != 0 || b.code != 0 || a.stdout != b.stdout || a.stderr != "" {
		t.Fatalf("--version (exit %d) %q and version (exit %d) %q differ or fail; stderr %q", a.code, a.stdout, b.code, b.stdout, a.stderr)
	}
	line := regexp.MustCompile(`^jazz (\S+) \((revision [0-9a-f]{40}, [0-9TZ:-]+(, modified)?|no VCS information)\) go\S+\n$`)
	if !line.MatchString(a.stdout) {
		t.Fatalf("version line %q does not name the module version, revision and Go version", a.stdout)
	}
	// Built by TestMain from this checkout, the revision is its HEAD.
	if head, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil && strings.Contains(a.stdout, "revision ") {
		if !strings.Contains(a.stdout, strings.TrimSpace(string(head))) {
			t.Errorf("version %q does not carry HEAD %s", a.stdout, head)
		}
	}
}
