package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/visible"
)

// auditCmd builds `jazz approvals audit RUN`: the audit stream's lines
// about one run, each said to be verified (signed by the identity whose
// subject it is on, allowed to say it, read once) or not, and why.
func (c *approverConn) auditCmd() *cobra.Command {
	var runners []string
	cmd := &cobra.Command{
		Use:   "audit RUN",
		Short: "Read the bus's audit trail of a run, saying which lines could not be verified",
		Long: `Read every line the bus's audit stream holds about run RUN, in order. A line is
verified when the identity whose subject it is on signed it there (this bus's runner,
or an approver of JAZZ_HOME or the global config) and may write what it says; every
other line is marked unverified with the reason: it may be anyone's forgery. On an
external deployment, pass the runners' public keys with --runner-key.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.open(cmd.Context(), false); err != nil {
				return err
			}
			defer c.close()
			cfg, _, err := config.Load(cmd.Context(), config.LoadOptions{Home: c.home, Getenv: c.d.Getenv, Cwd: c.d.Cwd})
			if err != nil {
				return err
			}
			reg, err := approvals.LoadRegistry(c.home, cfg.Raw["approvers"])
			if err != nil {
				return err
			}
			if kp, err := approvals.LoadSigner(busserver.RoleSeedPath(c.home, busserver.RoleRunner)); err == nil {
				if pub, err := kp.PublicKey(); err == nil {
					runners = append(runners, pub)
				}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			recs, err := approvals.ReadAudit(ctx, c.conn, args[0], approvals.AuditWriters(reg, runners...))
			if err != nil {
				return err
			}
			bad := 0
			for _, r := range recs {
				if !r.Verified {
					bad++
				}
			}
			if c.jsonOut {
				if recs == nil {
					recs = []approvals.AuditRecord{}
				}
				return writeJSON(c.d.IO.Out, recs)
			}
			for _, r := range recs {
				c.auditLine(r)
			}
			if bad > 0 {
				fmt.Fprintf(c.d.IO.ErrOut, "%d of %d lines could not be verified\n", bad, len(recs))
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&runners, "runner-key", nil, "a runner's nkey public key whose lines count as the runs' own (repeatable)")
	return cmd
}

// auditLine prints one line; everything in it but the verdict was
// written by whoever wrote the line, so it is shown as text, escaped.
func (c *approverConn) auditLine(r approvals.AuditRecord) {
	mark, who := "✓", r.WriterName
	if who == "" {
		who = r.Writer
	}
	if !r.Verified {
		mark = "✗"
	}
	line := fmt.Sprintf("%s %s %s", mark, r.Time.UTC().Format(time.RFC3339), visible.Line(r.Event))
	if r.RequestID != "" {
		line += " " + visible.Line(r.RequestID)
	}
	if r.Tool != "" {
		line += " " + visible.Line(r.Tool)
	}
	if r.Approved != nil {
		line += map[bool]string{true: " approved", false: " denied"}[*r.Approved]
	}
	if r.Approver != "" {
		line += " by " + visible.Line(r.Approver)
	}
	if who != "" {
		line += " (written by " + visible.Line(who) + ")"
	}
	if !r.Verified {
		line += ": unverified, " + visible.Line(r.Unverified)
	}
	fmt.Fprintln(c.d.IO.Out, line)
}
