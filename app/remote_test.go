package app_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/store/agents"
)

// startNATS runs a real NATS server on a random loopback port: the
// "external cluster" a run can be pointed at with --nats-url.
func startNATS(t *testing.T) string {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s.ClientURL()
}

// A person in another process approves a write over NATS: the run asks
// on jazz.run.<run>.approval.required and the answer comes back on
// approval.decided, through a real TCP connection.
func TestRemoteApprovalOverNATS(t *testing.T) {
	url := startNATS(t)
	dir := t.TempDir()
	home := t.TempDir()
	target := filepath.Join(dir, "note.txt")
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[
		{"toolCalls":[{"name":"write_file","arguments":{"path":"note.txt","content":"approved remotely\n"}}]},
		{"text":"done"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}

	// The remote approver: a separate connection, as another process has.
	approver, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer approver.Close()
	asked := make(chan messages.ApprovalRequired, 1)
	sub, err := approver.Subscribe("jazz.run.*.approval.required", func(m *nats.Msg) {
		req, err := messages.Decode[messages.ApprovalRequired](m.Data)
		if err != nil {
			t.Error(err)
			return
		}
		asked <- req
		d, _ := messages.Encode(messages.ApprovalDecided{Place: req.Place, RequestID: req.RequestID, ToolCallID: req.ToolCallID, Approved: true, DecidedBy: messages.DecidedByRemote})
		_ = approver.Publish(messages.ApprovalDecidedSubject(req.Place.RunID), d)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := approver.Flush(); err != nil {
		t.Fatal(err)
	}

	cfg := &config.Config{Home: home, MaxIterations: 10}
	out, err := app.Run(context.Background(), app.RunOptions{
		Agent: agents.Agent{ID: "a1", Name: "remote", Model: "replay/" + script,
			Config: agents.Config{LLMProvider: "replay", LLMModel: script, Tools: []string{"write_file"}}},
		Prompt: "write the note", Config: cfg, NATSURL: url, Reachable: true,
		Stderr: os.Stderr, Cwd: dir, Timeout: 20 * time.Second,
	})
	if err != nil || !out.OK {
		t.Fatalf("run: %v %+v", err, out)
	}
	select {
	case req := <-asked:
		if req.ToolName != "write_file" || req.PreviewDiff == "" {
			t.Fatalf("approval request: %+v", req)
		}
	default:
		t.Fatal("the remote approver was never asked")
	}
	got, err := os.ReadFile(target)
	if err != nil || string(got) != "approved remotely\n" {
		t.Fatalf("file: %q %v", got, err)
	}
}
