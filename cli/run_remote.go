package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/messages"
)

// DefaultApprovalTimeout is how long a remote approval waits by default.
const DefaultApprovalTimeout = 10 * time.Minute

// remoteOptions resolves the bus a run uses and, with --remote-approvals,
// who may approve and for how long. Everything is checked before any
// model call: a run that could never be approved fails now, not later. A
// run that uses a worker pool (pool) needs a shared bus too: the local
// `jazz bus serve` (or cluster) unless one is named. bo is the run's bus
// settings (runBus), whose files the isolation hides.
func remoteOptions(o RunOptions, bo busclient.Options, policy string, cfg *config.Config, pool bool) (string, bus.Client, *app.RemoteApprovals, error) {
	if !o.RemoteApprovals && (o.ApprovalTimeout != "" || o.MaxRemotePolicy != "") {
		return "", bus.Client{}, nil, fmt.Errorf("--approval-timeout and --max-remote-policy need --remote-approvals")
	}
	if bo.URL == "" && pool && !o.RemoteApprovals {
		local, err := bo.WithLocal(cfg.Home, busserver.RoleSeedPath(cfg.Home, busserver.RoleRunner))
		if err != nil {
			return "", bus.Client{}, nil, fmt.Errorf("worker pool: %w", err)
		}
		bo = local
	}
	if bo.URL == "" && !o.RemoteApprovals {
		if b := o.Bus; b.Creds != "" || b.Nkey != "" || b.CA != "" || b.TLSPin != "" || b.Cert != "" || b.Key != "" {
			return "", bus.Client{}, nil, fmt.Errorf("--creds, --nkey and --tls-* need --nats-url or --remote-approvals")
		}
		return "", bus.Client{}, nil, nil // the embedded in-process bus
	}
	var remote *app.RemoteApprovals
	if o.RemoteApprovals {
		timeout := DefaultApprovalTimeout
		if o.ApprovalTimeout != "" {
			ms, err := strconv.ParseUint(o.ApprovalTimeout, 10, 32)
			if err != nil || ms == 0 || time.Duration(ms)*time.Millisecond > approvals.RecordMaxAge {
				return "", bus.Client{}, nil, fmt.Errorf("--approval-timeout must be a positive integer of milliseconds, at most 86400000 (got %q).", o.ApprovalTimeout)
			}
			timeout = time.Duration(ms) * time.Millisecond
		}
		ceiling := policy
		switch o.MaxRemotePolicy {
		case "":
		case messages.PolicyReadOnly, messages.PolicyLowRisk, messages.PolicyHighRisk:
			ceiling = o.MaxRemotePolicy
		default:
			return "", bus.Client{}, nil, fmt.Errorf("Invalid --max-remote-policy %q. Expected read-only, low-risk, or high-risk.", o.MaxRemotePolicy)
		}
		reg, err := approvals.LoadRegistry(cfg.Home, cfg.Raw["approvers"])
		if err != nil {
			return "", bus.Client{}, nil, err
		}
		if reg.Len() == 0 {
			return "", bus.Client{}, nil, fmt.Errorf("--remote-approvals: nobody may approve yet: add an approver with `jazz bus add-approver NAME` (or list them under \"approvers\" in the global config)")
		}
		remote = &app.RemoteApprovals{Timeout: timeout, Ceiling: ceiling, Registry: reg}
		local, err := bo.WithLocal(cfg.Home, busserver.RoleSeedPath(cfg.Home, busserver.RoleRunner))
		if err != nil {
			return "", bus.Client{}, nil, err
		}
		bo = local
	}
	// A lost bus keeps retrying for as long as an approval may wait, then
	// gives up: what waits is declined, never approved.
	bo.ReconnectFor = DefaultApprovalTimeout
	if remote != nil {
		bo.ReconnectFor = remote.Timeout
	}
	client := bo.Client()
	if err := client.Check(); err != nil {
		return "", bus.Client{}, nil, err
	}
	return bo.URL, client, remote, nil
}
