package messages

import "testing"

func TestStopReasonOf(t *testing.T) {
	declined := []AgentCall{{ToolCall: ToolCall{Name: "write_file"}}}
	for _, c := range []struct {
		name  string
		f     RunFinished
		cause string
		want  string
	}{
		{"answer", RunFinished{OK: true}, "", StopCompleted},
		{"declines", RunFinished{OK: true, Declined: declined}, "", StopDeclined},
		{"the agent's reason wins over declines", RunFinished{OK: true, StopReason: StopMaxIterations, Declined: declined}, "", StopMaxIterations},
		{"failure", RunFinished{OK: false, StopReason: StopMaxIterations}, "", StopError},
		{"timeout", RunFinished{OK: true}, CauseTimeout, StopTimeout},
		{"signal", RunFinished{}, CauseCancelled, StopInterrupted},
		{"crash", RunFinished{OK: true}, CauseCrash, StopError},
	} {
		if got := StopReasonOf(c.f, c.cause); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
