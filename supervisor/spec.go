package supervisor

import (
	"errors"
	"fmt"
)

// FailureKind says how a supervised child went wrong.
type FailureKind string

// The ways a subagent can fail.
const (
	// FailPanic: the child actor panicked (caught by Recover).
	FailPanic FailureKind = "panic"
	// FailTimeout: the child ran past its own time limit.
	FailTimeout FailureKind = "timeout"
	// FailRun: the child's run ended in failure on its own, which in
	// practice is a provider that kept failing after its retries.
	FailRun FailureKind = "run-failed"
	// FailCancelled: the parent is going away (run timeout, Ctrl-C,
	// SIGTERM, or the parent itself failed).
	FailCancelled FailureKind = "cancelled"
)

// Action is what a supervisor does about a failure.
type Action string

// The actions a Spec may choose.
const (
	// ReportFailure ends the child and hands the parent a failed result
	// (with whatever partial text the child wrote); the parent goes on.
	ReportFailure Action = "report-failure"
	// Restart runs the same task again in a fresh child, as long as the
	// spec's MaxRestarts allows; past it, the failure is reported.
	Restart Action = "restart"
	// Stop ends the child and reports nothing further: its parent is
	// stopping anyway. It is the only action allowed on FailCancelled.
	Stop Action = "stop"
	// Escalate fails the parent too, and so on up to the root, which fails
	// the run. A crash is a bug in jazz, not a failed task: no model can
	// work around it, and a run that carries on after one hides it.
	Escalate Action = "escalate"
)

// Spec is a supervision policy as data: one action per failure kind and
// a bound on restarts. The supervisor actor only executes what Decide
// returns, so the policy is tested without any actor running.
type Spec struct {
	OnPanic   Action
	OnTimeout Action
	OnRun     Action
	// OnCancel must be Stop: a cancelled parent wants everything gone.
	OnCancel Action
	// MaxRestarts bounds Restart per child; 0 means never restart.
	MaxRestarts int
}

// ChildFailure is one failure of one child, as the supervisor saw it.
type ChildFailure struct {
	Kind FailureKind
	// Restarts is how often this child was already restarted.
	Restarts int
	Reason   string
}

// ErrBadSpec matches (errors.Is) every error of Spec.Validate.
var ErrBadSpec = errors.New("bad supervision spec")

// DefaultSubagentSpec is what spawn_subagent runs under: a failed task
// (its time limit, its provider giving up) becomes a failed result for
// the parent, which decides what to do next (a model is better placed
// than a retry loop to judge a failed task); a crash fails the run.
func DefaultSubagentSpec() Spec {
	return Spec{OnPanic: Escalate, OnTimeout: ReportFailure, OnRun: ReportFailure, OnCancel: Stop}
}

// RunSpec is the root of a run's: it has one agent and one gate, and a
// restarted one would have forgotten the conversation or the queue of
// calls waiting for a decision, so any failure of either fails the run.
func RunSpec() Spec {
	return Spec{OnPanic: Escalate, OnTimeout: Escalate, OnRun: Escalate, OnCancel: Stop}
}

// CallSpec is what an agent does when one of its call actors crashes
// (a bug in jazz; a tool handler's own panic is a failed result instead).
func CallSpec() Spec {
	return Spec{OnPanic: Escalate, OnTimeout: ReportFailure, OnRun: ReportFailure, OnCancel: Stop}
}

// Validate rejects a spec that names an unknown action, restarts on
// cancel, or bounds restarts below zero.
func (s Spec) Validate() error {
	for _, f := range []struct {
		field string
		a     Action
	}{{"OnPanic", s.OnPanic}, {"OnTimeout", s.OnTimeout}, {"OnRun", s.OnRun}, {"OnCancel", s.OnCancel}} {
		switch f.a {
		case ReportFailure, Restart, Stop, Escalate:
		default:
			return fmt.Errorf("%w: %s is %q, want %q, %q, %q or %q", ErrBadSpec, f.field, f.a, ReportFailure, Restart, Stop, Escalate)
		}
	}
	if s.OnCancel != Stop {
		return fmt.Errorf("%w: OnCancel must be %q: a cancelled parent cannot keep its children", ErrBadSpec, Stop)
	}
	if s.MaxRestarts < 0 {
		return fmt.Errorf("%w: MaxRestarts is %d, must be 0 or more", ErrBadSpec, s.MaxRestarts)
	}
	return nil
}

// Decide is the whole supervision strategy: given a spec and a failure,
// the action to take. It is pure. A Restart past MaxRestarts degrades to
// ReportFailure; a cancellation is always Stop, whatever the spec says;
// an unknown kind or action reports the failure, never hides it.
func Decide(s Spec, f ChildFailure) Action {
	var a Action
	switch f.Kind {
	case FailCancelled:
		return Stop
	case FailPanic:
		a = s.OnPanic
	case FailTimeout:
		a = s.OnTimeout
	case FailRun:
		a = s.OnRun
	default:
		return ReportFailure
	}
	switch a {
	case Restart:
		if f.Restarts < s.MaxRestarts {
			return Restart
		}
		return ReportFailure
	case Stop, Escalate:
		return a
	default:
		return ReportFailure
	}
}
