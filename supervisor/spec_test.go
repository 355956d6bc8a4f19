package supervisor

import (
	"errors"
	"testing"
)

func TestDecide(t *testing.T) {
	restarting := Spec{OnPanic: Restart, OnTimeout: ReportFailure, OnRun: Restart, OnCancel: Stop, MaxRestarts: 2}
	tests := []struct {
		name string
		spec Spec
		f    ChildFailure
		want Action
	}{
		{"default panic escalates", DefaultSubagentSpec(), ChildFailure{Kind: FailPanic}, Escalate},
		{"run: a crash fails the run", RunSpec(), ChildFailure{Kind: FailPanic}, Escalate},
		{"run: cancel stops", RunSpec(), ChildFailure{Kind: FailCancelled}, Stop},
		{"call: a crash fails the agent", CallSpec(), ChildFailure{Kind: FailPanic}, Escalate},
		{"default timeout reports", DefaultSubagentSpec(), ChildFailure{Kind: FailTimeout}, ReportFailure},
		{"default run failure reports", DefaultSubagentSpec(), ChildFailure{Kind: FailRun}, ReportFailure},
		{"default cancel stops", DefaultSubagentSpec(), ChildFailure{Kind: FailCancelled}, Stop},
		{"restart within bound", restarting, ChildFailure{Kind: FailPanic, Restarts: 1}, Restart},
		{"restart past bound reports", restarting, ChildFailure{Kind: FailPanic, Restarts: 2}, ReportFailure},
		{"restart run failure", restarting, ChildFailure{Kind: FailRun}, Restart},
		{"cancel stops even if spec says restart", Spec{OnCancel: Restart}, ChildFailure{Kind: FailCancelled}, Stop},
		{"unknown kind reports", restarting, ChildFailure{Kind: "meteor"}, ReportFailure},
		{"empty action reports", Spec{}, ChildFailure{Kind: FailTimeout}, ReportFailure},
		{"stop on timeout", Spec{OnTimeout: Stop}, ChildFailure{Kind: FailTimeout}, Stop},
		{"restart with zero bound reports", Spec{OnPanic: Restart}, ChildFailure{Kind: FailPanic}, ReportFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(tt.spec, tt.f); got != tt.want {
				t.Fatalf("Decide(%+v, %+v) = %q, want %q", tt.spec, tt.f, got, tt.want)
			}
		})
	}
}

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		ok   bool
	}{
		{"default", DefaultSubagentSpec(), true},
		{"run", RunSpec(), true},
		{"call", CallSpec(), true},
		{"restarting", Spec{OnPanic: Restart, OnTimeout: Stop, OnRun: ReportFailure, OnCancel: Stop, MaxRestarts: 3}, true},
		{"empty", Spec{}, false},
		{"unknown action", Spec{OnPanic: "retry-forever", OnTimeout: Stop, OnRun: Stop, OnCancel: Stop}, false},
		{"restart on cancel", Spec{OnPanic: Stop, OnTimeout: Stop, OnRun: Stop, OnCancel: Restart}, false},
		{"negative restarts", Spec{OnPanic: Stop, OnTimeout: Stop, OnRun: Stop, OnCancel: Stop, MaxRestarts: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !tt.ok && !errors.Is(err, ErrBadSpec) {
				t.Fatalf("Validate = %v, want ErrBadSpec", err)
			}
		})
	}
}
