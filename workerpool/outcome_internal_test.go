package workerpool

import (
	"context"
	"testing"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/supervisor"
)

// The runner writes a "finished" cancel record for every task it has the
// result of; by then the worker's agent has ended, and the record stops
// nothing (the worker logged each finished task as cancelled).
func TestCancelRecordAfterTheEndStopsNothing(t *testing.T) {
	j := &job{attempt: 1}
	j.ctx, j.cancel = context.WithCancelCause(context.Background())
	defer j.cancel(nil)
	j.over.Store(true)
	if j.cancelIf(messages.WorkCancel{TaskID: "t1", Reason: "the task is finished"}) || j.ctx.Err() != nil {
		t.Fatal("a record written after the end cancelled the job")
	}
	running := &job{attempt: 1}
	running.ctx, running.cancel = context.WithCancelCause(context.Background())
	defer running.cancel(nil)
	if !running.cancelIf(messages.WorkCancel{TaskID: "t1", Reason: "stopped"}) || running.ctx.Err() == nil {
		t.Fatal("a record for a running job did not cancel it")
	}
}

// The worker logs how each attempt ended, in its result's words.
func TestOutcomeSaysHowTheTaskEnded(t *testing.T) {
	for _, c := range []struct {
		r    messages.WorkResult
		want string
	}{
		{messages.WorkResult{Finished: messages.RunFinished{OK: true, Iterations: 2}}, "finished (2 iterations)"},
		{messages.WorkResult{Kind: string(supervisor.FailCancelled), Reason: "stopped: the run is stopping"}, "cancelled: stopped: the run is stopping"},
		{messages.WorkResult{Kind: string(supervisor.FailTimeout), Reason: "timed out after 1s"}, "timed out: timed out after 1s"},
		{messages.WorkResult{Finished: messages.RunFinished{Error: "model refused"}}, "failed: model refused"},
		{messages.WorkResult{Kind: string(supervisor.FailPanic), Reason: "boom"}, "crashed: boom"},
	} {
		if got := outcome(c.r); got != c.want {
			t.Errorf("outcome(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}
