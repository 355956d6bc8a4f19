package approvals_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools/asktools"
)

// Over the bus server, as a run wires it (app/start.go): questions come
// and go while an approver answers on the shared bus. An answer already
// taken, published again while another question waits, is audited as a
// replay; an answer to a question the run stopped waiting for is audited
// and taken by nobody.
func TestAnswersOverTheBusAreAuditedOnce(t *testing.T) {
	home := t.TempDir()
	_, seed, err := approvals.AddApprover(home, "alice", "read-only", false)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.FromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := approvals.WriteSecret(approvals.ApproverSeedPath(home, "alice"), seed); err != nil {
		t.Fatal(err)
	}
	srv, err := busserver.Start(context.Background(), busserver.Options{Home: home, Port: -1, Reload: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runBus, err := busclient.Connect(ctx, busclient.Options{URL: srv.ClientURL(), Nkey: busserver.RoleSeedPath(home, busserver.RoleRunner)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runBus.CloseNow)
	apBus, err := busclient.Connect(ctx, busclient.Options{URL: srv.ClientURL(), Nkey: approvals.ApproverSeedPath(home, "alice")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(apBus.CloseNow)
	reg, err := approvals.LoadRegistry(home, nil)
	if err != nil {
		t.Fatal(err)
	}
	local := bus.New(bus.Options{})
	t.Cleanup(func() { _ = local.Close(context.Background()) })
	checker := approvals.NewAnswerChecker(reg, "run-1", nil).WithAudit(approvals.NewAudit(home, runBus), func(err error) { t.Error(err) })
	asker := asktools.NewAsker(local, "run-1", nil).WithRemote(&asktools.Remote{Bus: runBus,
		Check: func(raw []byte, q messages.UserInputRequired) (string, error) {
			a, _, err := checker.Check(raw, q)
			return a.Response, err
		},
		Asked: checker.Ask,
	})
	// The approver hears the questions as the run publishes them.
	var mu sync.Mutex
	asked := map[string]messages.UserInputRequired{}
	sub, err := bus.Subscribe(ctx, apBus, messages.InputRequiredSubject("run-1"), func(m bus.Msg[messages.UserInputRequired]) {
		mu.Lock()
		asked[m.Value.Question] = m.Value
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	heard := func(question string) messages.UserInputRequired {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			q, ok := asked[question]
			mu.Unlock()
			if ok {
				return q
			}
		}
		t.Fatalf("question %q never reached the approver", question)
		return messages.UserInputRequired{}
	}
	answer := func(q messages.UserInputRequired, resp string) []byte {
		env, err := approvals.SignAnswer(kp, "run-1", q, resp, time.Now(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(env)
		if err := apBus.Conn().Publish(messages.InputSignedSubject("run-1"), raw); err != nil {
			t.Fatal(err)
		}
		return raw
	}
	type result struct {
		resp string
		err  error
	}
	ask := func(ctx context.Context, question string) chan result {
		out := make(chan result, 1)
		go func() {
			r, err := asker.Ask(ctx, messages.Place{}, "", question, nil)
			out <- result{r, err}
		}()
		return out
	}
	waitFor := func(ch chan result) result {
		t.Helper()
		select {
		case r := <-ch:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("a question never returned")
		}
		return result{}
	}
	refusals := func(reason string) int {
		n := 0
		for _, e := range readAudit(t, home) {
			if e.Event == approvals.AuditAnswerRefused && e.Refusal == reason {
				n++
			}
		}
		return n
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if ok() {
				return
			}
		}
		t.Fatalf("%s; audit: %+v", what, readAudit(t, home))
	}

	first := ask(ctx, "first?")
	second := ask(ctx, "second?")
	q1 := heard("first?")
	heard("second?")
	raw := answer(q1, "one")
	if r := waitFor(first); r.err != nil || r.resp != "one" {
		t.Fatalf("first question: %+v", r)
	}
	// The taken answer again, while the second question waits.
	if err := apBus.Conn().Publish(messages.InputSignedSubject("run-1"), raw); err != nil {
		t.Fatal(err)
	}
	eventually("a replayed answer was not audited while another question waited", func() bool { return refusals(approvals.ReasonReplay) == 1 })

	// The run stops waiting for a question; an answer to it arrives
	// while another waits.
	abandonCtx, abandon := context.WithCancel(ctx)
	third := ask(abandonCtx, "third?")
	q3 := heard("third?")
	abandon()
	if r := waitFor(third); r.err == nil {
		t.Fatalf("abandoned question answered: %+v", r)
	}
	answer(q3, "too late")
	eventually("an answer to a question no longer asked was not audited", func() bool { return refusals(approvals.ReasonOtherRequest) == 1 })

	q2 := heard("second?")
	answer(q2, "two")
	if r := waitFor(second); r.err != nil || r.resp != "two" {
		t.Fatalf("second question: %+v", r)
	}
	answered := 0
	for _, e := range readAudit(t, home) {
		if e.Event == approvals.AuditAnswered {
			answered++
		}
	}
	if answered != 2 {
		t.Errorf("%d answers logged taken, want 2: %+v", answered, readAudit(t, home))
	}
}
