package workerpool

import (
	"context"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/workstore"
)

// A worker acts on a decision or a cancel record only when the task's
// runner sealed it: the runner role is shared by every run, and the
// server delivers stored messages to any subject, so one published on a
// worker's subjects may come from anyone on the bus.
func TestWorkerTakesOnlySealedWordsOfItsRunner(t *testing.T) {
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan workDecided, 4)
	gate := engine.SpawnFunc(func(c *actor.Context) {
		if d, ok := c.Message().(workDecided); ok {
			got <- d
		}
	}, "gate")
	defer engine.Poison(gate)
	task := messages.WorkTask{TaskID: "t1", Key: NewTaskKey(), Pool: "p"}
	w := &Worker{o: WorkerOptions{Key: "wk", Pool: "p"}, engine: engine, jobs: map[string]*job{}}
	j := &job{w: w, task: task, attempt: 1, token: "t1", gate: gate}
	j.ctx, j.cancel = context.WithCancelCause(context.Background())
	defer j.cancel(nil)
	w.jobs["t1"] = j

	subject := messages.WorkDecisionSubject("p", "wk", "t1")
	d := messages.WorkDecision{TaskID: "t1", Attempt: 1, Seq: 1, Decision: messages.ApprovalDecided{ToolCallID: "c1", Approved: true}}
	data, _ := messages.Encode(d)
	seal := func(key, subject string) bus.Header {
		h, v := sealer(key)(subject, data)
		return bus.Header{h: {v}}
	}
	for _, forged := range []bus.Header{nil, seal(NewTaskKey(), subject), seal(task.Key, messages.WorkDecisionSubject("p", "other", "t1"))} {
		w.fromRunner(bus.Raw{Subject: subject, Value: data, Header: forged})
	}
	w.fromRunner(bus.Raw{Subject: subject, Value: data, Header: seal(task.Key, subject)})
	select {
	case m := <-got:
		if !m.d.Decision.Approved {
			t.Fatalf("decision %+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the sealed decision did not reach the gate")
	}
	select {
	case m := <-got:
		t.Fatalf("an unsealed decision reached the gate: %+v", m)
	case <-time.After(100 * time.Millisecond):
	}

	cancelSubject := workstore.KeySubject(workstore.CancelKey("t1"))
	plain, _ := messages.Encode(messages.WorkCancel{TaskID: "t1", Reason: "forged"})
	foreign, _ := sealCancelRecord(NewTaskKey(), messages.WorkCancel{TaskID: "t1", Reason: "another key"})
	for _, v := range [][]byte{plain, foreign} {
		w.cancelWritten(bus.Raw{Subject: cancelSubject, Value: v})
	}
	if j.ctx.Err() != nil {
		t.Fatal("an unsealed cancel record stopped the job")
	}
	real, _ := sealCancelRecord(task.Key, messages.WorkCancel{TaskID: "t1", Reason: "stopped"})
	w.cancelWritten(bus.Raw{Subject: cancelSubject, Value: real})
	if j.ctx.Err() == nil {
		t.Fatal("the runner's sealed cancel record did not stop the job")
	}
}
