package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
)

// bus is a `jazz bus serve` process.
type bus struct {
	cmd *exec.Cmd
	url string
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// addApprover runs `jazz bus add-approver name args...` in e's home.
func addApprover(t *testing.T, e *hlEnv, name string, args ...string) {
	t.Helper()
	if r := e.run(hlRunOpts{args: append([]string{"bus", "add-approver", name}, args...)}); r.code != 0 {
		t.Fatalf("add-approver %s: %+v", name, r)
	}
}

// busWithAlice is a home with its bus served on a free port and alice
// admitted as an approver: the start of every remote-approval test.
func busWithAlice(t *testing.T) *hlEnv {
	t.Helper()
	e := hlNewEnv(t)
	serveBus(t, e, freeTCPPort(t))
	addApprover(t, e, "alice")
	return e
}

// serveBus starts the built binary's bus on port and waits for the URL it
// prints when ready.
func serveBus(t *testing.T, e *hlEnv, port int) *bus {
	t.Helper()
	cmd := exec.Command(e.bin, "bus", "serve", "--port", fmt.Sprint(port))
	cmd.Env = e.environ()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &bus{cmd: cmd}
	t.Cleanup(func() { b.kill() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case u, ok := <-line:
		if !ok || !strings.HasPrefix(u, "nats://127.0.0.1:") {
			t.Fatalf("bus serve printed %q", u)
		}
		b.url = u
	case <-time.After(30 * time.Second):
		t.Fatal("bus serve never became ready")
	}
	return b
}

// kill ends the server the hard way: no shutdown, like a crash.
func (b *bus) kill() {
	if b.cmd.ProcessState == nil {
		_ = b.cmd.Process.Kill()
		_ = b.cmd.Wait()
	}
}

type pendingView struct {
	Status  string `json:"status"`
	Pending bool   `json:"pending"`
	Request struct {
		RunID       string `json:"runId"`
		RequestID   string `json:"requestId"`
		Tool        string `json:"tool"`
		PreviewDiff string `json:"previewDiff"`
		WorkDir     string `json:"workDir"`
		ActionHash  string `json:"actionHash"`
		RiskTier    string `json:"riskTier"`
	} `json:"request"`
}

// waitPending polls `jazz approvals list --json` (a new approver process
// each time) until n requests wait.
func waitPending(t *testing.T, e *hlEnv, n int, args ...string) []pendingView {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := e.run(hlRunOpts{args: append([]string{"approvals", "list", "--json"}, args...)})
		var list []pendingView
		if r.code == 0 && json.Unmarshal([]byte(r.stdout), &list) == nil && len(list) >= n {
			return list
		}
		if time.Now().After(deadline) {
			t.Fatalf("never %d pending: exit %d\n%s\n%s", n, r.code, r.stdout, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var noteScript = map[string]any{"turns": []any{
	map[string]any{"toolCalls": []any{map[string]any{"name": "write_file", "arguments": map[string]any{"path": "note.txt", "content": "approved remotely\n"}}}},
	map[string]any{"text": "done"},
}}

// The whole path across processes: `jazz bus serve`, a run waiting in
// one process, approver CLIs started after the request in others, the
// server killed and restarted on the same port and store while the
// request waits, and a second approver told who won.
func TestRemoteApprovalAcrossProcesses(t *testing.T) {
	t.Parallel()
	e := hlNewEnv(t)
	port := freeTCPPort(t)
	srv := serveBus(t, e, port)
	addApprover(t, e, "alice")
	addApprover(t, e, "bob", "--max-tier", "low-risk")
	e.replayAgent("remote", noteScript, "write_file")
	run := e.start(hlRunOpts{args: []string{"run", "--agent", "remote", "--json", "--remote-approvals", "--approval-timeout", "120000", "write the note"}})

	list := waitPending(t, e, 1, "--as", "alice")
	req := list[0].Request
	if req.Tool != "write_file" || req.PreviewDiff == "" || req.WorkDir != e.cwd || !strings.HasPrefix(req.ActionHash, "sha256:") || req.RiskTier != "high-risk" {
		t.Fatalf("request: %+v", req)
	}
	show := e.run(hlRunOpts{args: []string{"approvals", "show", req.RequestID, "--as", "alice"}})
	if show.code != 0 || !strings.Contains(show.stdout, "approved remotely") || strings.Contains(show.stdout, "\x1b[") {
		t.Fatalf("show (piped: no colour): %+v", show)
	}

	// Crash the server while the run waits; bring it back on the same
	// port and store.
	srv.kill()
	time.Sleep(500 * time.Millisecond)
	srv = serveBus(t, e, port)
	after := waitPending(t, e, 1, "--as", "alice")
	if after[0].Request.RequestID != req.RequestID {
		t.Fatalf("after restart: %+v", after)
	}

	// bob may approve only low-risk: the CLI signs, the run refuses, and
	// the request stays up.
	if r := e.run(hlRunOpts{args: []string{"approvals", "approve", req.RequestID, "--as", "bob"}}); r.code != 0 {
		t.Fatalf("bob's attempt is recorded: %+v", r)
	}
	waitPending(t, e, 1, "--as", "alice")

	huge := strings.Repeat("x", 5000)
	if r := e.run(hlRunOpts{args: []string{"approvals", "approve", req.RequestID, "--as", "alice", "--note", huge}}); r.code != 1 || !strings.Contains(r.stderr, "at most 4096") {
		t.Fatalf("huge note: %+v", r)
	}
	if r := e.run(hlRunOpts{args: []string{"approvals", "approve", "ap-000000000000000000000000", "--as", "alice"}}); r.code != 1 || !strings.Contains(r.stderr, "no such pending approval") {
		t.Fatalf("unknown id: %+v", r)
	}
	ok := e.run(hlRunOpts{args: []string{"approvals", "approve", req.RequestID, "--as", "alice", "--note", "looks right"}})
	if ok.code != 0 || !strings.Contains(ok.stdout, "approved "+req.RequestID) {
		t.Fatalf("approve: %+v", ok)
	}
	late := e.run(hlRunOpts{args: []string{"approvals", "deny", req.RequestID, "--as", "bob"}})
	if late.code != 1 || !strings.Contains(late.stderr, "already decided by alice at ") {
		t.Fatalf("the loser: %+v", late)
	}

	res := run.wait(60 * time.Second)
	if res.code != 0 {
		t.Fatalf("run: %+v", res)
	}
	var env struct {
		ToolCalls []struct {
			Name      string `json:"name"`
			DecidedBy string `json:"decidedBy"`
		} `json:"toolCalls"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &env); err != nil || len(env.ToolCalls) != 1 || env.ToolCalls[0].DecidedBy != "remote:alice" {
		t.Fatalf("the envelope must say who approved: %v %s", err, res.stdout)
	}
	if got, err := os.ReadFile(filepath.Join(e.cwd, "note.txt")); err != nil || string(got) != "approved remotely\n" {
		t.Fatalf("file %q %v", got, err)
	}
	audit, err := os.ReadFile(filepath.Join(e.home, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"event":"refused"`, `"event":"decided","runId"`, `"approver":"alice"`, `"side":"approver"`, `"side":"run"`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("audit.jsonl lacks %s:\n%s", want, audit)
		}
	}
}

// No credentials, or credentials the server does not know: the approver
// CLI cannot even connect, and says so.
func TestApproverWithoutValidCredentials(t *testing.T) {
	t.Parallel()
	e := hlNewEnv(t)
	srv := serveBus(t, e, freeTCPPort(t))
	// An approver on another machine: a JAZZ_HOME of their own, with no
	// identity in it.
	other := hlNewEnv(t)
	r := other.run(hlRunOpts{args: []string{"approvals", "list", "--nats-url", srv.url}})
	if r.code != 1 || !strings.Contains(r.stderr, "refused these credentials") {
		t.Fatalf("no credentials: %+v", r)
	}
	kp, _ := nkeys.CreateUser()
	seed, _ := kp.Seed()
	stranger := filepath.Join(e.user, "stranger.nk")
	_ = os.WriteFile(stranger, seed, 0o600)
	r = other.run(hlRunOpts{args: []string{"approvals", "approve", "ap-x", "--nats-url", srv.url, "--nkey", stranger}})
	if r.code != 1 || !strings.Contains(r.stderr, "refused these credentials") {
		t.Fatalf("wrong credentials: %+v", r)
	}
	e.replayAgent("remote", noteScript, "write_file")
	r = e.run(hlRunOpts{args: []string{"run", "--agent", "remote", "--remote-approvals", "x"}})
	if r.code != 1 || !strings.Contains(r.stderr, "nobody may approve yet") {
		t.Fatalf("a run with no approvers configured must fail: %+v", r)
	}
}

// Debian's standalone nats-server (2.9), configured by the test with the
// same permissions `jazz bus serve` enforces: an external deployment.
func TestRemoteApprovalOnStandaloneNATSServer(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nats-server"); serr == nil {
			bin = "/usr/sbin/nats-server"
		} else if os.Getenv("CI") != "" {
			t.Fatal("nats-server is not installed (.ci/run installs Debian's package)")
		} else {
			t.Skip("nats-server is not installed (apt-get install nats-server)")
		}
	}
	e := hlNewEnv(t)
	var alice struct {
		PublicKey string `json:"publicKey"`
		SeedFile  string `json:"seedFile"`
	}
	ar := e.run(hlRunOpts{args: []string{"bus", "add-approver", "carol", "--json"}})
	_ = json.Unmarshal([]byte(ar.stdout), &alice)
	runnerKP, _ := nkeys.CreateUser()
	runnerPub, _ := runnerKP.PublicKey()
	runnerSeed, _ := runnerKP.Seed()
	runnerFile := filepath.Join(e.user, "runner.nk")
	_ = os.WriteFile(runnerFile, runnerSeed, 0o600)
	adminKP, _ := nkeys.CreateUser()
	adminPub, _ := adminKP.PublicKey()
	adminSeed, _ := adminKP.Seed()
	adminFile := filepath.Join(e.user, "admin.nk")
	_ = os.WriteFile(adminFile, adminSeed, 0o600)
	port := freeTCPPort(t)
	conf := map[string]any{
		"listen":        fmt.Sprintf("127.0.0.1:%d", port),
		"jetstream":     map[string]any{"store_dir": filepath.Join(e.user, "js")},
		"authorization": map[string]any{"users": []any{user(runnerPub, busserver.RoleRunner), user(alice.PublicKey, busserver.RoleApprover), map[string]any{"nkey": adminPub}}},
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // nats-server's parser knows no \u escapes
	if err := enc.Encode(conf); err != nil {
		t.Fatal(err)
	}
	data := []byte(buf.String())
	confFile := filepath.Join(e.user, "nats.conf")
	_ = os.WriteFile(confFile, data, 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := exec.CommandContext(ctx, bin, "-c", confFile)
	var nsLog strings.Builder
	ns.Stderr = &nsLog
	defer func() {
		if t.Failed() {
			t.Logf("nats-server:\n%s", nsLog.String())
		}
	}()
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = ns.Wait() }()
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	waitTCP(t, port)

	// Runners and approvers may not create streams: the deployment's
	// admin sets the bucket and the audit stream up once.
	if r := e.run(hlRunOpts{args: []string{"bus", "init", "--nats-url", url, "--nkey", adminFile}}); r.code != 0 {
		t.Fatalf("bus init: %+v", r)
	}
	e.replayAgent("remote", noteScript, "write_file")
	run := e.start(hlRunOpts{args: []string{"run", "--agent", "remote", "--json", "--remote-approvals",
		"--nats-url", url, "--nkey", runnerFile, "--approval-timeout", "60000", "write the note"}})
	list := waitPending(t, e, 1, "--nats-url", url, "--nkey", alice.SeedFile)
	// Another runner may write any key, but erases none with a roll-up
	// header: bus init made the bucket refuse them.
	rb, err := busclient.Connect(ctx, busclient.Options{URL: url, Nkey: runnerFile})
	if err != nil {
		t.Fatal(err)
	}
	for _, rollup := range []string{"all", "sub"} {
		m := nats.NewMsg(approvals.KeySubject(approvals.Key(list[0].Request.RunID, list[0].Request.RequestID)))
		m.Header.Set("Nats-Rollup", rollup)
		m.Header.Set("KV-Operation", "PURGE")
		reply, err := rb.Conn().RequestMsg(m, 5*time.Second)
		if err != nil || !strings.Contains(string(reply.Data), `"error"`) {
			t.Fatalf("a roll-up %s on the pending request was taken: %v %+v", rollup, err, reply)
		}
	}
	rb.CloseNow()
	list = waitPending(t, e, 1, "--nats-url", url, "--nkey", alice.SeedFile)
	r := e.run(hlRunOpts{args: []string{"approvals", "approve", list[0].Request.RequestID, "--nats-url", url, "--nkey", alice.SeedFile}})
	if r.code != 0 {
		t.Fatalf("approve: %+v", r)
	}
	if res := run.wait(60 * time.Second); res.code != 0 {
		t.Fatalf("run: %+v", res)
	}
	if got, err := os.ReadFile(filepath.Join(e.cwd, "note.txt")); err != nil || string(got) != "approved remotely\n" {
		t.Fatalf("file %q %v", got, err)
	}
}

// user is one nats-server config entry with a role's permissions.
func user(pub, role string) map[string]any {
	p := busserver.Permissions(role, pub)
	conv := func(allow, deny []string) map[string]any {
		m := map[string]any{}
		if len(allow) > 0 {
			m["allow"] = allow
		}
		if len(deny) > 0 {
			m["deny"] = deny
		}
		return m
	}
	return map[string]any{"nkey": pub, "permissions": map[string]any{
		"publish":   conv(p.Publish.Allow, p.Publish.Deny),
		"subscribe": conv(p.Subscribe.Allow, p.Subscribe.Deny),
	}}
}

func waitTCP(t *testing.T, port int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats-server never listened on %d", port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
