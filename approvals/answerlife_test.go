package approvals_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/messages"
)

// A run's questions open and close while signed answers, fresh and
// replayed, arrive on the bus; every open question's subscription checks
// every message, in any order. Against a model of what must be logged:
// each question takes at most one answer, while it is open, logged once;
// every other message heard by an open question is logged exactly once
// (by the raw message), a taken answer heard again as a replay, an
// answer for a question closed or never asked as other_request.
func TestAnswerLifecycleIsAuditedExactlyOnce(t *testing.T) {
	alice := newParty(t, "alice", "read-only", false)
	reg, err := approvals.NewRegistry([]approvals.Approver{alice.a})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for seed := uint64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		home := t.TempDir()
		checker := approvals.NewAnswerChecker(reg, "run-1", func() time.Time { return now }).WithAudit(approvals.NewAudit(home, nil), func(err error) { t.Fatal(err) })
		question := func(i int) messages.UserInputRequired {
			return messages.UserInputRequired{Place: messages.Place{RunID: "run-1"}, RequestID: fmt.Sprintf("ui-%d", i), Question: fmt.Sprintf("question %d?", i)}
		}
		type qs struct {
			q        messages.UserInputRequired
			done     func()
			open     bool
			answered bool
		}
		var qsList []*qs
		var sent [][]byte
		answerOf := map[string]string{} // raw -> question id
		taken := map[string]bool{}      // raw taken as an answer
		logged := map[string]bool{}     // raw logged refused
		wantAnswered, wantRefused := 0, map[string]int{}
		var trace []string
		deliver := func(raw []byte) {
			var open []*qs
			for _, s := range qsList {
				if s.open {
					open = append(open, s)
				}
			}
			rng.Shuffle(len(open), func(i, j int) { open[i], open[j] = open[j], open[i] })
			id := answerOf[string(raw)]
			var own *qs
			for _, s := range qsList {
				if s.q.RequestID == id {
					own = s
				}
			}
			switch {
			case own != nil && own.open && !own.answered && !taken[string(raw)]:
				wantAnswered++
				taken[string(raw)] = true
				own.answered = true
			case len(open) == 0 || logged[string(raw)]:
			case taken[string(raw)]:
				wantRefused[approvals.ReasonReplay]++
				logged[string(raw)] = true
			case own != nil && own.answered:
				// A second answer to an answered question is heard only
				// by others once it stopped waiting.
				wantRefused[approvals.ReasonOtherRequest]++
				logged[string(raw)] = true
			default:
				wantRefused[approvals.ReasonOtherRequest]++
				logged[string(raw)] = true
			}
			for _, s := range open {
				_, _, err := checker.Check(raw, s.q)
				if err == nil {
					if s.q.RequestID != id {
						t.Fatalf("seed %d: %s took an answer to %s", seed, s.q.RequestID, id)
					}
				}
			}
			// The asker stops waiting for an answered question.
			if own != nil && own.answered && own.open {
				own.open = false
				own.done()
			}
		}
		for step := 0; step < 40; step++ {
			switch k := rng.IntN(10); {
			case k < 3 || len(qsList) == 0:
				s := &qs{q: question(len(qsList) + 1), open: true}
				s.done = checker.Ask(s.q)
				qsList = append(qsList, s)
				trace = append(trace, "ask "+s.q.RequestID)
			case k < 4:
				s := qsList[rng.IntN(len(qsList))]
				if s.open {
					s.open = false
					s.done()
					trace = append(trace, "abandon "+s.q.RequestID)
				}
			case k < 8:
				// A fresh answer, for any question asked so far or one
				// never asked.
				i := rng.IntN(len(qsList)+1) + 1
				env, err := approvals.SignAnswer(alice.kp, "run-1", question(i), fmt.Sprint("answer ", step), now, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := json.Marshal(env)
				answerOf[string(raw)] = question(i).RequestID
				sent = append(sent, raw)
				trace = append(trace, fmt.Sprintf("answer ui-%d #%d", i, len(sent)-1))
				deliver(raw)
			default:
				if len(sent) > 0 {
					n := rng.IntN(len(sent))
					trace = append(trace, fmt.Sprintf("replay #%d", n))
					deliver(sent[n])
				}
			}
		}
		gotAnswered, gotRefused := 0, map[string]int{}
		for _, e := range readAudit(t, home) {
			switch e.Event {
			case approvals.AuditAnswered:
				gotAnswered++
			case approvals.AuditAnswerRefused:
				gotRefused[e.Refusal]++
			}
		}
		if gotAnswered != wantAnswered || fmt.Sprint(gotRefused) != fmt.Sprint(wantRefused) {
			t.Fatalf("seed %d: logged %d answered, refused %v; want %d, %v\n%v\n", seed, gotAnswered, gotRefused, wantAnswered, wantRefused, strings.Join(trace, "\n"))
		}
	}
}
