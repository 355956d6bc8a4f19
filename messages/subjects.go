package messages

import "strings"

// Subject scheme. Every subject is scoped by run id, so one NATS server (or
// cluster) can carry many runs and a remote process subscribes to exactly
// the run it serves:
//
//	jazz.run.<run>.event.<type>        Event                 (run → sinks)
//	jazz.run.<run>.approval.required   ApprovalRequired      (gate → approvers)
//	jazz.run.<run>.approval.decided    ApprovalDecided       (approvers → gate)
//	jazz.run.<run>.policy              PolicyChanged         (anyone → gate)
//	jazz.run.<run>.input.required      UserInputRequired     (run → askers)
//	jazz.run.<run>.input.answered      UserInputAnswered     (askers → run)
//	jazz.run.<run>.input.signed        approvals.Envelope    (approvers → run)
//	jazz.run.<run>.finished            RunFinished           (run → anyone)
//
// A decision names the request it answers by ApprovalRequired.RequestID,
// which the gate mints for each approval it asks; the model's tool-call
// id decides nothing.
//
// Run ids are made of [A-Za-z0-9_-]; SubjectToken replaces anything else,
// so an id can never inject wildcards or extra tokens.
const subjectRoot = "jazz.run."

// SubjectToken makes s safe as one NATS subject token.
func SubjectToken(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}

// RunSubject is the prefix of every subject of one run.
func RunSubject(runID string) string { return subjectRoot + SubjectToken(runID) }

// EventSubject is where events of the given type are published.
func EventSubject(runID, eventType string) string {
	return RunSubject(runID) + ".event." + SubjectToken(eventType)
}

// EventsWildcard matches every event of a run.
func EventsWildcard(runID string) string { return RunSubject(runID) + ".event.>" }

// ApprovalRequiredSubject carries ApprovalRequired.
func ApprovalRequiredSubject(runID string) string { return RunSubject(runID) + ".approval.required" }

// ApprovalDecidedSubject carries ApprovalDecided.
func ApprovalDecidedSubject(runID string) string { return RunSubject(runID) + ".approval.decided" }

// PolicySubject carries PolicyChanged.
func PolicySubject(runID string) string { return RunSubject(runID) + ".policy" }

// PolicyWildcard matches every run's PolicySubject.
const PolicyWildcard = subjectRoot + "*.policy"

// InputSignedSubject carries signed answers (an approvals.Envelope of an
// approvals.Answer): on a shared bus the only answers a run takes from it.
func InputSignedSubject(runID string) string { return RunSubject(runID) + ".input.signed" }

// InputRequiredSubject carries UserInputRequired.
func InputRequiredSubject(runID string) string { return RunSubject(runID) + ".input.required" }

// InputAnsweredSubject carries UserInputAnswered.
func InputAnsweredSubject(runID string) string { return RunSubject(runID) + ".input.answered" }

// FinishedSubject carries RunFinished.
func FinishedSubject(runID string) string { return RunSubject(runID) + ".finished" }

// FinishedWildcard matches every run's FinishedSubject: a watcher of all
// run ends subscribes to it.
const FinishedWildcard = subjectRoot + "*.finished"
