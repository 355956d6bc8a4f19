package e2e_test

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// secretAlphabet holds no hex digit and no lower-case letter: a slice of
// a secret cannot turn up by chance in the ids, hashes and fingerprints a
// run sends.
const secretAlphabet = "GHIJKLMNOPQRSTUVWXYZ"

func randomSecret(t *testing.T, prefix string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(prefix)
	for range 28 {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(secretAlphabet))))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteByte(secretAlphabet[n.Int64()])
	}
	return b.String()
}

// leaks lists each secret of which the text holds a slice of at least six
// characters, forwards or backwards, once everything but letters and
// digits is dropped (od, cut, rev and friends print a secret in pieces).
func leaks(text string, secrets map[string]string) []string {
	norm := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, s)
	}
	hay := norm(text)
	var out []string
	for name, s := range secrets {
		body := norm(s)
		rev := []rune(body)
		for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
			rev[i], rev[j] = rev[j], rev[i]
		}
		for _, v := range []string{body, string(rev)} {
			found := false
			for i := 0; i+6 <= len(v) && !found; i++ {
				found = strings.Contains(hay, v[i:i+6])
			}
			if found {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// TestShellCommandsCannotReadJazzSecrets is the differential check of
// execute_command's isolation: random secrets are planted in JAZZ_HOME's
// config, an agent file and a bus seed file, and in a --config file
// outside JAZZ_HOME; a battery of commands tries every road to them
// (cat, cut, rev, od, grep -r, find -newer, symlinks and hard links the
// command makes, /proc/<pid>/root and cwd, /proc/self/mountinfo, umount,
// a user namespace of its own, a relative path after cd). Through the
// built binary, under the high-risk policy and under the static
// read-only pass's auto-approval, no six-character slice of any secret
// reaches the model server. The control runs the same battery against
// copies of the secrets outside the hidden places and must see them, so
// the check can fail.
func TestShellCommandsCannotReadJazzSecrets(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mk := func(p string) string {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	secrets := map[string]string{
		"config api_key":    randomSecret(t, "sk-ant-"),
		"agent llmApiKeys":  randomSecret(t, "sk-"),
		"bus seed":          randomSecret(t, "SU"),
		"external --config": randomSecret(t, "sk-ext-"),
		"JAZZ_HOME scratch": randomSecret(t, "tok-"),
	}
	for _, tc := range []struct {
		name, policy, config string
		control              bool
	}{
		{"high-risk", "high-risk", `{"maxRetries": 0`, false},
		{"static read-only auto-approval", "read-only", `{"maxRetries": 0`, false},
		{"allowlist auto-approval", "", `{"maxRetries": 0, "autoApprovedCommands": ["cat", "grep", "cut", "rev", "od", "find", "ls", "head", "sh"]`, false},
		{"control: the same battery on copies outside", "high-risk", `{"maxRetries": 0`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := mk(filepath.Join(root, strings.NewReplacer(" ", "-", ":", "", ",", "").Replace(tc.name)))
			home := mk(filepath.Join(base, "jazzhome"))
			extDir := mk(filepath.Join(base, "elsewhere"))
			cwd := mk(filepath.Join(base, "work"))
			ext := filepath.Join(extDir, "team-config.json")
			// --config names the file the run's settings come from; the
			// global one in JAZZ_HOME holds a key all the same.
			write(filepath.Join(home, "config.json"), `{"maxRetries": 0, "llm": {"anthropic": {"api_key": "`+secrets["config api_key"]+`"}}}`)
			write(ext, tc.config+`, "llm": {"anthropic": {"api_key": "`+secrets["external --config"]+`"}}}`)
			mk(filepath.Join(home, "bus"))
			write(filepath.Join(home, "bus", "runner.nk"), secrets["bus seed"]+"\n")
			write(filepath.Join(home, "scratch.txt"), secrets["JAZZ_HOME scratch"]+"\n")

			// Where the battery looks: the real places, or for the control
			// copies of them in a directory nothing hides.
			H, C := home, ext
			if tc.control {
				H = mk(filepath.Join(base, "copy-home"))
				C = filepath.Join(H, "team-config.json")
			}
			// The agent first (creating it asks no model), so the battery
			// can name its file.
			w := &world{t: t, home: home, cwd: cwd}
			w.agent("sh", "execute_command")
			agentFiles, _ := filepath.Glob(filepath.Join(home, "agents", "*.json"))
			if len(agentFiles) == 0 {
				t.Fatal("no agent file")
			}
			for _, f := range agentFiles {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				var doc map[string]any
				if err := json.Unmarshal(b, &doc); err != nil {
					t.Fatal(err)
				}
				conf, _ := doc["config"].(map[string]any)
				if conf == nil {
					conf = doc
				}
				conf["llmApiKeys"] = map[string]string{"anthropic": secrets["agent llmApiKeys"]}
				b, _ = json.Marshal(doc)
				write(f, string(b))
			}
			agent := filepath.Base(agentFiles[0])
			battery := []string{
				fmt.Sprintf("cat %[1]s/config.json %[1]s/agents/%[3]s %[1]s/bus/runner.nk %[1]s/scratch.txt %[2]s", H, C, agent),
				fmt.Sprintf("cut -c5-40 %[1]s/config.json %[1]s/bus/runner.nk %[2]s", H, C),
				fmt.Sprintf("rev %[1]s/config.json %[1]s/agents/%[3]s %[1]s/bus/runner.nk %[1]s/scratch.txt %[2]s", H, C, agent),
				fmt.Sprintf("od -c %[1]s/config.json %[1]s/agents/%[3]s %[1]s/bus/runner.nk %[1]s/scratch.txt %[2]s", H, C, agent),
				fmt.Sprintf("grep -r -s -o 'SU[A-Z]*' %s", base),
				fmt.Sprintf("grep -r -s -h key %s ~", base),
				fmt.Sprintf("find %s -newer %s -type f -exec cat {} +", base, cwd),
				fmt.Sprintf("ln -s %[1]s link && cat link/config.json link/scratch.txt; ln %[1]s/scratch.txt hard && cat hard", H),
				fmt.Sprintf("for p in /proc/[0-9]*; do cat $p/root%[1]s/scratch.txt $p/cwd/scratch.txt $p/cwd/../jazzhome/scratch.txt 2>/dev/null; done; cat /proc/$PPID/cwd/../jazzhome/scratch.txt", H),
				// umount spelled so the denylist's text match lets it run:
				// the mounts themselves must hold.
				fmt.Sprintf("grep -F %[1]s /proc/self/mountinfo; printf '\\165mount %[1]s; \\165mount -l %[1]s; \\165mount %[2]s; cat %[1]s/scratch.txt %[2]s\\n' > u.sh && sh u.sh", H, C),
				fmt.Sprintf("printf '\\165mount -l %[1]s; \\165mount -l %[2]s; cat %[1]s/scratch.txt %[2]s\\n' > un.sh && unshare -Urm sh un.sh", H, C),
				fmt.Sprintf("cd %[1]s && cat config.json scratch.txt bus/runner.nk; cd agents && cat *.json", H),
			}
			var cs []chatserver.Call
			for i, c := range battery {
				cs = append(cs, shellCall(fmt.Sprintf("b%d", i), c))
			}
			srv := chatserver.New(calls(cs...), answer("done"))
			defer srv.Close()
			w.baseURL = srv.URL()
			if tc.control {
				copyTree(t, home, H)
				copyFile(t, ext, C)
			}
			args := []string{"--config", ext, "run", "--agent", "sh", "--json", "--timeout", "120000"}
			if tc.policy != "" {
				args = append(args, "--approval-policy", tc.policy)
			}
			r := w.exec("", append(args, "go")...)
			wantSuccess(t, r)
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2:\nstdout %s\nstderr %s", len(reqs), r.stdout, r.stderr)
			}
			results := toolResults(srv)
			sent := string(reqs[1].Raw)
			found := leaks(sent, secrets)
			if tc.control {
				// Every secret is readable where nothing hides it: the
				// battery runs and the check sees what gets out.
				if len(found) != len(secrets) {
					t.Fatalf("the control saw only %q of %d secrets; the check proves nothing:\n%s", found, len(secrets), results)
				}
				return
			}
			if len(found) > 0 {
				t.Fatalf("secrets reached the model server (%s): %q\n%s", tc.name, found, results)
			}
			// The battery ran: auto-approved reads ran and found nothing,
			// rather than being declined before they could try.
			ran := []string{"b0"}
			if tc.policy == "high-risk" {
				ran = append(ran, "b11")
			}
			for _, id := range ran {
				if res := results[id]; !strings.Contains(res, "No such file") {
					t.Errorf("%s did not run as a read that finds nothing: %s", id, res)
				}
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		if fi.Mode().IsRegular() {
			copyFile(t, p, filepath.Join(to, rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
