package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
	jbus "github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/messages"
)

// auditLines are the entries of home's audit log with this event.
func auditLines(t *testing.T, home, event string) []approvals.AuditEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(home, approvals.AuditFile))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []approvals.AuditEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e approvals.AuditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if e.Event == event {
			out = append(out, e)
		}
	}
	return out
}

// Alice's key leaks while a run is waiting on a question she could
// answer. `jazz bus remove-approver alice` revokes her: the bus lets the
// key in no more, and an answer signed with it that still reaches the run
// (published by someone holding the runner identity, which every run
// has) is refused as revoked and logged with her key and a hint, while
// the run keeps waiting for a genuine answer, which bob then gives.
func TestRemovedApproverIsRefusedByARunningRun(t *testing.T) {
	t.Parallel()
	e := busWithAlice(t)
	addApprover(t, e, "bob")
	// The leak: a copy of alice's seed outside jazz's keeping.
	leaked := filepath.Join(t.TempDir(), "alice.nk")
	seed, err := os.ReadFile(approvals.ApproverSeedPath(e.home, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(leaked, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	aliceKP, err := approvals.LoadSigner(leaked)
	if err != nil {
		t.Fatal(err)
	}
	alicePub, _ := aliceKP.PublicKey()

	srv := chatserver.New(chatserver.Turn{Calls: []chatserver.Call{
		{Name: "ask_user_question", Arguments: chatserver.JSONArgs(map[string]string{"question": "Which database?"})},
	}}, chatserver.Turn{Text: "done"})
	defer srv.Close()
	e.chatAgent(srv, "q", nil, "ask_user_question")

	o, err := busclient.Options{}.WithLocal(e.home, busserver.RoleSeedPath(e.home, busserver.RoleRunner))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, err := busclient.Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.CloseNow()
	asked := make(chan jbus.Msg[messages.UserInputRequired], 64)
	sub, err := jbus.Subscribe(ctx, nc, "jazz.run.*.input.required", func(m jbus.Msg[messages.UserInputRequired]) {
		select {
		case asked <- m:
		default:
		}
	}, jbus.Registered())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close() // the bridge answers nothing itself
	p := e.start(hlRunOpts{args: []string{"run", "--json", "--interactive-stdin", "--remote-approvals", "--agent", "q", "go"}, stdinReader: pr})
	var q jbus.Msg[messages.UserInputRequired]
	select {
	case q = <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the run never asked on the shared bus")
	}
	run := q.Value.Place.RunID

	// Revoked after the run started.
	rm := e.run(hlRunOpts{args: []string{"bus", "remove-approver", "alice"}})
	if rm.code != 0 || strings.TrimSpace(rm.stdout) != alicePub {
		t.Fatalf("remove-approver: %+v", rm)
	}
	if again := e.run(hlRunOpts{args: []string{"bus", "remove-approver", "alice"}}); again.code == 0 || !strings.Contains(again.stderr, "bob") {
		t.Errorf("removing alice twice: %+v", again)
	}
	// The bus lets the leaked key in no more (it reloads about every second).
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r := e.run(hlRunOpts{args: []string{"approvals", "answer", run, q.Value.RequestID, "from the leak", "--nkey", leaked}})
		if r.code != 0 && strings.Contains(r.stderr, "Authorization Violation") {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the bus still lets the removed key in 15 s after removal: %+v", r)
		}
	}
	// The leaked key signs anyway, and the runner identity carries it.
	env, err := approvals.SignAnswer(aliceKP, run, q.Value, "drop prod", time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish(messages.InputSignedSubject(run), env, nil); err != nil {
		t.Fatal(err)
	}
	var refused []approvals.AuditEntry
	for end := time.Now().Add(15 * time.Second); len(refused) == 0; time.Sleep(100 * time.Millisecond) {
		refused = auditLines(t, e.home, approvals.AuditAnswerRefused)
		if time.Now().After(end) {
			t.Fatal("the revoked key's answer left no refusal in the audit log")
		}
	}
	if r := refused[0]; r.Refusal != approvals.ReasonRevoked || r.ApproverKey != alicePub || r.RunID != run ||
		r.RequestID != q.Value.RequestID || !strings.Contains(r.Reason, "alice") || r.Hint == "" || r.Approver != "" {
		t.Errorf("the refusal was logged as %+v", r)
	}
	// Still waiting: bob, admitted, answers, and only his answer counts.
	var ans hlResult
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		ans = e.run(hlRunOpts{args: []string{"approvals", "answer", run, q.Value.RequestID, "postgres", "--as", "bob"}})
		if ans.code == 0 || !strings.Contains(ans.stderr, "Authorization Violation") || time.Now().After(end) {
			break
		}
	}
	if ans.code != 0 {
		t.Fatalf("bob's answer: %+v", ans)
	}
	r := p.wait(60 * time.Second)
	if r.code != 0 {
		t.Fatalf("run: %+v", r)
	}
	var tool []string
	for _, req := range srv.Requests() {
		for _, m := range req.ToolMessages() {
			if m.Content != nil {
				tool = append(tool, *m.Content)
			}
		}
	}
	if len(tool) != 1 || !strings.Contains(tool[0], "postgres") || strings.Contains(tool[0], "drop prod") {
		t.Fatalf("the model was told %q, want bob's answer only", tool)
	}
	if got := auditLines(t, e.home, approvals.AuditAnswered); len(got) != 1 || got[0].Approver != "bob" {
		t.Errorf("the answer taken was logged as %+v", got)
	}
}
