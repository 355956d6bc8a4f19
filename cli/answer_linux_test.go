package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY is a new pseudo-terminal: the side jazz writes to (a terminal
// to isatty) and the side the test reads what it drew from.
func openPTY(t *testing.T) (term, screen *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("name the pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open the pseudo-terminal's terminal side: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return s, m
}

// TestAnswerOnATerminalActsOnNothing: the model writes the answer, and on
// a terminal a person reads it there: escape sequences in it (a clipboard
// write, cursor moves over the lines above, a carriage return, a bidi
// override) are drawn as visible escapes, not acted on. To a pipe the
// answer is the payload, byte for byte.
func TestAnswerOnATerminalActsOnNothing(t *testing.T) {
	w := newJazzWorld(t)
	answer := "done.\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2A\x1b[2K\rall tests pass \u202eevil\nsecond line"
	script, _ := json.Marshal(map[string]any{"turns": []any{map[string]any{"text": answer}}})
	replay := filepath.Join(w.out, "replay.json")
	if err := os.WriteFile(replay, script, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := w.jazz(30*time.Second, "agent", "create", "--name", "tty", "--model", "replay/"+replay, "--tools", "ls"); code != 0 {
		t.Fatalf("agent create: exit %d: %s", code, stderr)
	}

	// A pipe: the payload.
	if stdout, stderr, code := w.jazz(30*time.Second, "run", "--agent", "tty", "hi"); code != 0 || stdout != answer+"\n" {
		t.Fatalf("to a pipe: exit %d, stdout %q, want the answer byte for byte %q\n%s", code, stdout, answer+"\n", stderr)
	}

	// A terminal: nothing it would act on.
	term, screen := openPTY(t)
	path, err := exec.LookPath("jazz")
	if err != nil {
		t.Fatalf("no jazz on PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "run", "--agent", "tty", "hi")
	cmd.Dir, cmd.Env = w.wd, w.env
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = term, &stderr
	drawn := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(screen) // ends with EIO once no one holds the terminal side
		drawn <- b
	}()
	err = cmd.Run()
	term.Close()
	var ee *exec.ExitError
	if ctx.Err() != nil || err != nil && !errors.As(err, &ee) {
		t.Fatalf("jazz run on a terminal: %v: %s", err, stderr.String())
	}
	var got []byte
	select {
	case got = <-drawn:
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal's output did not end within 10 s")
	}
	if cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("jazz run on a terminal: exit %d: %s", cmd.ProcessState.ExitCode(), stderr.String())
	}
	text := strings.ReplaceAll(string(got), "\r\n", "\n") // the terminal's own newline translation
	for _, raw := range []string{"\x1b", "\x07", "\r", "\u202e"} {
		if strings.Contains(text, raw) {
			t.Errorf("the terminal got %q raw: %q", raw, text)
		}
	}
	for _, want := range []string{"done.", "all tests pass", "evil\nsecond line"} {
		if !strings.Contains(text, want) {
			t.Errorf("the terminal's text %q lacks %q", text, want)
		}
	}
}
