package asktools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/deadline"
	"github.com/jazz-run/jazz/internal/testutil"
	"github.com/jazz-run/jazz/messages"
)

func startBus(t *testing.T) *bus.Bus {
	t.Helper()
	b, err := bus.Start(context.Background(), bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, done := context.WithTimeout(context.Background(), 2*time.Second)
		defer done()
		_ = b.Close(c)
	})
	return b
}

// On a shared bus, a question is answered only by a signed answer from an
// admitted approver, to that question as asked, once: an attacker on the
// bus who publishes plain answers, answers signed by an unknown key,
// answers to another question, or replays an accepted one, answers
// nothing. The person at hand still answers on the local bus.
func TestRemoteAnswersMustBeSigned(t *testing.T) {
	const run = "run-r"
	local, shared := startBus(t), startBus(t)
	alice, _ := nkeys.CreateUser()
	mallory, _ := nkeys.CreateUser()
	alicePub, _ := alice.PublicKey()
	reg, err := approvals.NewRegistry([]approvals.Approver{{Name: "alice", PublicKey: alicePub, MaxTier: "read-only"}})
	if err != nil {
		t.Fatal(err)
	}
	checker := approvals.NewAnswerChecker(reg, run, nil)
	var mu sync.Mutex
	var refused []string
	asker := NewAsker(local, run, deadline.New(time.Hour)).WithRemote(&Remote{Bus: shared,
		Check: func(raw []byte, q messages.UserInputRequired) (string, error) {
			a, _, err := checker.Check(raw, q)
			return a.Response, err
		},
		Refused: func(id string, err error) {
			var r *approvals.RefusedError
			mu.Lock()
			defer mu.Unlock()
			if errors.As(err, &r) {
				refused = append(refused, r.Reason)
			} else {
				refused = append(refused, err.Error())
			}
		}})
	// The attacker answers every question it sees on the shared bus, in
	// every way it can, before the approver does.
	var accepted []byte
	questions := make(chan messages.UserInputRequired, 16)
	sub, err := bus.Subscribe(context.Background(), shared, messages.InputRequiredSubject(run), func(m bus.Msg[messages.UserInputRequired]) {
		questions <- m.Value
	}, bus.Registered())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	publishRaw := func(raw []byte) {
		if err := shared.Conn().Publish(messages.InputSignedSubject(run), raw); err != nil {
			t.Error(err)
		}
	}
	sign := func(kp nkeys.KeyPair, q messages.UserInputRequired, resp string) []byte {
		env, err := approvals.SignAnswer(kp, run, q, resp, time.Now(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(env)
		return raw
	}
	attack := func(q messages.UserInputRequired) {
		_ = shared.Publish(messages.InputAnsweredSubject(run), messages.UserInputAnswered{RequestID: q.RequestID, Response: "plain"}, nil)
		publishRaw([]byte(`{"requestId":"` + q.RequestID + `","response":"unsigned"}`))
		publishRaw(sign(mallory, q, "mallory"))
		reworded := q
		reworded.Question = "something else"
		publishRaw(sign(alice, reworded, "reworded"))
		if accepted != nil {
			publishRaw(accepted) // an answer to the last question, again
		}
		publishRaw(make([]byte, approvals.MaxAnswerEnvelope+1))
	}
	answer := func(question string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return asker.Ask(ctx, messages.Place{AgentName: "coder"}, "", question, nil)
	}
	go func() {
		q := <-questions
		attack(q)
		accepted = sign(alice, q, "alice says yes")
		publishRaw(accepted)
		first := q.RequestID
		for q.RequestID == first { // the first may be published again
			q = <-questions
		}
		attack(q)
		publishRaw(sign(alice, q, "second"))
	}()
	for i, want := range []string{"alice says yes", "second"} {
		got, err := answer("Which database?")
		if err != nil || got != want {
			t.Fatalf("question %d: %q, %v; want %q", i+1, got, err, want)
		}
	}
	mu.Lock()
	t.Logf("refused: %v", refused)
	for _, reason := range []string{approvals.ReasonUnsigned, approvals.ReasonUnknownSigner, approvals.ReasonShownMismatch, approvals.ReasonOtherRequest, approvals.ReasonMalformed} {
		found := false
		for _, r := range refused {
			found = found || r == reason
		}
		if !found {
			t.Errorf("no answer was refused for %s: %v", reason, refused)
		}
	}
	mu.Unlock()

	// The person at hand answers on the local bus as before.
	lsub, err := bus.Subscribe(context.Background(), local, messages.InputRequiredSubject(run), func(m bus.Msg[messages.UserInputRequired]) {
		_ = local.Publish(messages.InputAnsweredSubject(run), messages.UserInputAnswered{RequestID: m.Value.RequestID, Response: "local"}, nil)
	}, bus.Registered())
	if err != nil {
		t.Fatal(err)
	}
	defer lsub.Stop()
	if got, err := answer("Local?"); err != nil || got != "local" {
		t.Fatalf("local answer: %q, %v", got, err)
	}
}

// A question larger than the shared bus takes reaches no remote approver:
// the run is told so (once), instead of republishing it unseen while an
// approver waits for a question that never comes.
func TestQuestionTooLargeForTheSharedBusIsReported(t *testing.T) {
	const run = "run-big"
	srv := testutil.StartNATS(t, testutil.NATSOptions{Configure: func(o *server.Options) { o.MaxPayload = 4096 }})
	local, shared := startBus(t), bus.Wrap(srv.Conn(t))
	unsent := make(chan error, 4)
	asker := NewAsker(local, run, deadline.New(time.Hour)).WithRemote(&Remote{Bus: shared,
		Check:  func([]byte, messages.UserInputRequired) (string, error) { return "", errors.New("no answers here") },
		Unsent: func(_ string, err error) { unsent <- err }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = asker.Ask(ctx, messages.Place{RunID: run}, "", strings.Repeat("q", 8192), nil)
	}()
	select {
	case err := <-unsent:
		if !errors.Is(err, bus.ErrTooLarge) {
			t.Fatalf("reported %v, want the bus's too-large refusal", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the question never reached the remote bus, and nobody was told")
	}
	select {
	case err := <-unsent:
		t.Fatalf("reported twice: %v", err)
	case <-time.After(RepublishEvery + time.Second):
	}
	cancel()
	<-done
}
