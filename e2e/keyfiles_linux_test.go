package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/internal/testutil"
)

// TestRelativeKeyFileHiddenUnderCwd: `jazz run --cwd D --nkey rel.nk`
// (or JAZZ_NATS_NKEY=rel.nk) names the seed relative to where jazz
// started, where the bus connection opens it; the programs the run starts
// in D must not read that file, however they spell it. A copy of the seed
// that nothing names is read by the same commands, so the check can fail.
func TestRelativeKeyFileHiddenUnderCwd(t *testing.T) {
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	pub, _ := user.PublicKey()
	ns := testutil.StartNATS(t, testutil.NATSOptions{Listen: true, JetStream: true, Configure: func(o *server.Options) {
		o.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	}})
	for _, tc := range []struct{ name, flag string }{{"flag", "--nkey"}, {"environment", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			start := t.TempDir()
			sub := filepath.Join(start, "project")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"rel.nk", "copy.nk"} {
				if err := os.WriteFile(filepath.Join(start, f), append(seed, '\n'), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			read := func(p string) string { return "cat " + p + "; rev " + p + "; od -c " + p }
			srv := chatserver.New(calls(
				shellCall("hidden", read(filepath.Join(start, "rel.nk"))+"; "+read("../rel.nk")),
				shellCall("control", read(filepath.Join(start, "copy.nk"))),
			), answer("done"))
			defer srv.Close()
			w := newWorld(t, srv.URL())
			w.agent("sh", "execute_command")
			args := []string{"run", "--agent", "sh", "--json", "--approval-policy", "high-risk", "--timeout", "60000",
				"--cwd", "project", "--nats-url", ns.URL}
			env := w.environ()
			if tc.flag != "" {
				args = append(args, tc.flag, "rel.nk")
			} else {
				env = append(env, "JAZZ_NATS_NKEY=rel.nk")
			}
			wantSuccess(t, runJazz(t, start, env, "", append(args, "go")...))
			results := toolResults(srv)
			secret := map[string]string{"seed": string(seed)}
			if got := leaks(results["control"], secret); len(got) == 0 {
				t.Fatalf("the control did not read the unnamed copy of the seed; the check proves nothing:\n%s", results["control"])
			}
			if got := leaks(results["hidden"], secret); len(got) > 0 {
				t.Fatalf("a program read the run's relative --nkey file:\n%s", results["hidden"])
			}
			if !strings.Contains(results["hidden"], "0000000") {
				t.Fatalf("the reads did not run:\n%s", results["hidden"])
			}
		})
	}
}
