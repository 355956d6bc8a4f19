package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/remoteapproval"
)

// RemoteApprovals turns on `--remote-approvals`: gated calls wait for a
// signed decision from an approver on the bus.
type RemoteApprovals struct {
	// Timeout declines a call nobody decides in time.
	Timeout time.Duration
	// Ceiling is the highest policy a signed change may set.
	Ceiling string
	// Registry is who may decide.
	Registry *approvals.Registry
}

// askTap hands every approval request the gate publishes to the remote
// approvals loop directly (in-process, so nothing on the bus can inject
// or alter a request), then publishes it as before.
// On an external bus the person at hand is shown the request on their
// own in-process bus (local), never one read back from the shared bus.
type askTap struct {
	pub    publisher
	runID  string
	remote *remoteapproval.Remote
	local  publisher
	// human is told each call the gate resolved (Withdraw, Unasked): the
	// local answerer's (a bridge's) own withdrawal and count, or nil.
	human func(messages.ApprovalDecided)
	// shared: pub is an external bus, whose copy of a request is for
	// observers only (the person at hand reads local, remote approvals
	// get it in-process, and the run takes no decision from there).
	shared bool
	// warn tells the run's user; may be nil.
	warn func(msg string)
}

type publisher interface {
	Publish(subject string, msg any, trace messages.Trace) error
}

func (t *askTap) Publish(subject string, msg any, trace messages.Trace) error {
	if req, ok := msg.(messages.ApprovalRequired); ok && t.remote != nil && subject == messages.ApprovalRequiredSubject(t.runID) {
		t.remote.Ask(req)
	}
	if _, ok := msg.(messages.ApprovalRequired); ok && t.local != nil {
		if err := t.local.Publish(subject, msg, trace); err != nil {
			return err
		}
	}
	err := t.pub.Publish(subject, msg, trace)
	if req, ok := msg.(messages.ApprovalRequired); ok && t.shared && errors.Is(err, bus.ErrTooLarge) {
		// Only observers miss it: whoever decides was handed it above,
		// or was told why not. Failing here would decline a call the
		// person at hand can still see whole.
		if t.warn != nil {
			t.warn(fmt.Sprintf("approval request for %s (%s) was not copied to the shared bus: %v", req.ToolCallID, req.ToolName, err))
		}
		return nil
	}
	return err
}

// Withdraw closes remote approvals' record of a request the gate
// resolved (gateactor.Withdrawer), whoever answered it, and takes it off
// the local bridge, which then refuses answers to it.
func (t *askTap) Withdraw(d messages.ApprovalDecided) {
	if t.remote != nil {
		t.remote.Withdraw(d)
	}
	if t.human != nil {
		t.human(d)
	}
}

// Unasked tells the local bridge of a call the gate settled without
// asking (gateactor.Unasker), before that call's events go out: their
// lines show its tool-call id, which a bridge answer may name alone.
// Remote approvals never held it, so there is nothing to withdraw.
func (t *askTap) Unasked(d messages.ApprovalDecided) {
	if t.human != nil {
		t.human(d)
	}
}

// directDecisions gives a local human's decisions to the gate in-process
// when the bus is external: on a shared server, the decided subject is
// something anyone with access could publish to, so the run never
// listens to it there.
type directDecisions struct {
	pub   publisher
	runID string
	// deliver hands a message to the gate (through the run's root).
	deliver func(any)
}

func (d directDecisions) Publish(subject string, msg any, trace messages.Trace) error {
	if dec, ok := msg.(messages.ApprovalDecided); ok && subject == messages.ApprovalDecidedSubject(d.runID) {
		d.deliver(dec)
		return nil
	}
	return d.pub.Publish(subject, msg, trace)
}

// startRemote opens the approvals bucket on the run's bus and starts the
// loop that feeds the gate verified decisions and policy changes only.
func startRemote(ctx context.Context, o RunOptions, b *bus.Bus, runID string, audit *approvals.Audit, deliver func(any), warn func(agent, msg string)) (*remoteapproval.Remote, error) {
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	store, err := approvals.OpenStore(octx, b, true)
	if err != nil {
		return nil, fmt.Errorf("remote approvals: %w", err)
	}
	r, err := remoteapproval.Start(context.WithoutCancel(ctx), remoteapproval.Config{
		Bus: b, Store: store, RunID: runID, Registry: o.Remote.Registry, Timeout: o.Remote.Timeout,
		Policy: o.Policy, Ceiling: o.Remote.Ceiling, WorkDir: o.Cwd, LocalHuman: o.Bridge || o.TerminalHuman,
		Deliver:   func(d messages.ApprovalDecided) { deliver(d) },
		SetPolicy: func(p messages.PolicyChanged) { deliver(p) },
		Report:    func(n remoteapproval.Notice) { warn("", "remote approvals: "+n.Message) },
		Audit:     audit,
	})
	if err != nil {
		return nil, fmt.Errorf("remote approvals: %w", err)
	}
	return r, nil
}
