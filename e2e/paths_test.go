package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// linkedRepo is the repository fixture of issue 10 item 1: a checkout
// whose docs is a symbolic link to the user's ~/.ssh, with a build
// directory, a source tree and a link inside the repository back into it.
type linkedRepo struct {
	e   *hlEnv
	ssh string // the real ~/.ssh
}

const ownerKey = "ssh-ed25519 AAAA owner\n"

func newLinkedRepo(t *testing.T) *linkedRepo {
	t.Helper()
	e := hlNewEnv(t)
	ssh := filepath.Join(e.user, ".ssh")
	for _, d := range []string{ssh, filepath.Join(e.cwd, "src", "pkg"), filepath.Join(e.cwd, "build", "obj")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(ssh, "authorized_keys"):         ownerKey,
		filepath.Join(e.cwd, "src", "main.go"):        "package main\n",
		filepath.Join(e.cwd, "src", "pkg", "lib.go"):  "package pkg\n",
		filepath.Join(e.cwd, "build", "a.out"):        "ELF....",
		filepath.Join(e.cwd, "build", "obj", "lib.o"): "obj",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"docs": ssh, "vendor": "src"} {
		if err := os.Symlink(target, filepath.Join(e.cwd, link)); err != nil {
			t.Fatal(err)
		}
	}
	return &linkedRepo{e: e, ssh: ssh}
}

// oneCall is a replay script making one tool call, then reporting its
// result in the answer.
func oneCall(name string, args map[string]any) map[string]any {
	return map[string]any{"turns": []any{
		map[string]any{"toolCalls": []any{map[string]any{"name": name, "arguments": args}}},
		map[string]any{"text": "Result: {{lastToolResult}}"},
	}}
}

// bridged runs the agent under --interactive-stdin; decide sees each
// approval request and says whether to approve it. It returns the
// messages the bridge was shown and the run's result.
func (r *linkedRepo) bridged(t *testing.T, script map[string]any, tool string, decide func(req map[string]any) bool) ([]string, hlResult) {
	t.Helper()
	r.e.replayAgent("w", script, tool)
	var mu sync.Mutex
	var shown []string
	res := hlBridge(t, r.e, []string{"run", "--json", "--interactive-stdin", "--approval-policy", "low-risk", "--agent", "w", "go"},
		func(req map[string]any) []string {
			if req["type"] != "approval_required" {
				return nil
			}
			msg, _ := req["message"].(string)
			diff, _ := req["previewDiff"].(string)
			mu.Lock()
			shown = append(shown, msg+"\n--preview--\n"+diff)
			mu.Unlock()
			return []string{decision(req, decide(req))}
		}, false)
	return shown, res
}

func readOr(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// TestSymlinkedRepository drives the built binary against the fixture:
// the approval names where a write really goes, a retarget after the
// preview is refused, destruction is stated, and a copy into a link back
// into its source is refused before anyone is asked.
func TestSymlinkedRepository(t *testing.T) {
	t.Parallel()
	t.Run("approval names the real target and the write lands there", func(t *testing.T) {
		r := newLinkedRepo(t)
		keys := filepath.Join(r.ssh, "authorized_keys")
		shown, res := r.bridged(t, oneCall("write_file", map[string]any{"path": "docs/authorized_keys", "content": "ssh-ed25519 EVIL\n"}), "write_file",
			func(map[string]any) bool { return true })
		if res.code != 0 || len(shown) != 1 {
			t.Fatalf("exit %d, %d approvals:\n%s\n%s", res.code, len(shown), res.stdout, res.stderr)
		}
		note := "Through symbolic links, " + filepath.Join(r.e.cwd, "docs", "authorized_keys") + " is " + keys + "."
		if !strings.Contains(shown[0], note) || !strings.Contains(shown[0], "--preview--\nWrites "+keys+" (through symbolic links from ") {
			t.Fatalf("the approval hid the real target:\n%s\nwant %q", shown[0], note)
		}
		if got := readOr(t, keys); got != "ssh-ed25519 EVIL\n" {
			t.Fatalf("the approved write did not land where the message said: %q", got)
		}
	})
	t.Run("retarget after the preview is refused", func(t *testing.T) {
		r := newLinkedRepo(t)
		keys := filepath.Join(r.ssh, "authorized_keys")
		decoy := filepath.Join(r.e.cwd, "decoy")
		_, res := r.bridged(t, oneCall("write_file", map[string]any{"path": "docs/authorized_keys", "content": "ssh-ed25519 EVIL\n"}), "write_file",
			func(map[string]any) bool {
				// Between preview and approval docs is pointed elsewhere,
				// at an identical copy: the path still reads the same.
				if err := os.Mkdir(decoy, 0o755); err != nil {
					t.Error(err)
				}
				os.WriteFile(filepath.Join(decoy, "authorized_keys"), []byte(ownerKey), 0o644)
				os.Remove(filepath.Join(r.e.cwd, "docs"))
				if err := os.Symlink(decoy, filepath.Join(r.e.cwd, "docs")); err != nil {
					t.Error(err)
				}
				return true
			})
		env := res.envelope(t)
		if !strings.Contains(env.Answer, "changed since the preview was approved; propose the change again.") {
			t.Fatalf("the model was not told of the refusal: %s\n%s", res.stdout, res.stderr)
		}
		if readOr(t, keys) != ownerKey || readOr(t, filepath.Join(decoy, "authorized_keys")) != ownerKey {
			t.Fatal("a refused write changed a file")
		}
	})
	t.Run("a forced copy onto a directory states what it destroys", func(t *testing.T) {
		r := newLinkedRepo(t)
		shown, res := r.bridged(t, oneCall("cp", map[string]any{"source": "src/main.go", "destination": "build", "force": true}), "cp",
			func(map[string]any) bool { return true })
		if res.code != 0 || len(shown) != 1 {
			t.Fatalf("exit %d, %d approvals:\n%s\n%s", res.code, len(shown), res.stdout, res.stderr)
		}
		want := "This replaces the directory " + filepath.Join(r.e.cwd, "build") + " and everything in it: 2 files, 1 directory, 10 bytes."
		if !strings.Contains(shown[0], want) {
			t.Fatalf("message:\n%s\nwant %q", shown[0], want)
		}
		if readOr(t, filepath.Join(r.e.cwd, "build")) != "package main\n" {
			t.Fatal("not replaced")
		}
	})
	t.Run("rm through a linked directory states the real path and what goes", func(t *testing.T) {
		r := newLinkedRepo(t)
		shown, res := r.bridged(t, oneCall("rm", map[string]any{"path": "docs/authorized_keys"}), "rm",
			func(map[string]any) bool { return false })
		if res.code != 0 || len(shown) != 1 {
			t.Fatalf("exit %d, %d approvals:\n%s\n%s", res.code, len(shown), res.stdout, res.stderr)
		}
		keys := filepath.Join(r.ssh, "authorized_keys")
		for _, want := range []string{"is " + keys + ".", "This removes the file " + filepath.Join(r.e.cwd, "docs", "authorized_keys") + " (23 bytes)."} {
			if !strings.Contains(shown[0], want) {
				t.Fatalf("message:\n%s\nwant %q", shown[0], want)
			}
		}
		if readOr(t, keys) != ownerKey {
			t.Fatal("declined, yet removed")
		}
	})
	t.Run("a copy into a link back into its source is refused unasked", func(t *testing.T) {
		r := newLinkedRepo(t)
		shown, res := r.bridged(t, oneCall("cp", map[string]any{"source": "src", "destination": "vendor/copy"}), "cp",
			func(map[string]any) bool { return true })
		if len(shown) != 0 {
			t.Fatalf("asked to approve a self-copy: %v", shown)
		}
		env := res.envelope(t)
		if !strings.Contains(env.Answer, "Destination must not be within source: "+filepath.Join(r.e.cwd, "vendor", "copy")) {
			t.Fatalf("answer: %s\n%s", env.Answer, res.stderr)
		}
		if _, err := os.Lstat(filepath.Join(r.e.cwd, "src", "copy")); !os.IsNotExist(err) {
			t.Fatal("copied into itself")
		}
	})
}
