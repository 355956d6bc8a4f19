package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/humanio"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/visible"
)

// NewApprovalsCmd builds `jazz approvals`: what waits for a person, and
// their signed decisions.
func NewApprovalsCmd(d Deps) *cobra.Command {
	c := &approverConn{d: d}
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List, show, approve and deny the approvals runs wait for on the bus",
		Long: `Decide what runs on the shared bus wait for. Every decision is signed with your
identity (--as NAME for an approver added with 'jazz bus add-approver', or --nkey /
--creds), bound to the exact action the run will execute, and recorded exactly once.`,
	}
	c.flags(cmd.PersistentFlags())
	cmd.AddCommand(c.listCmd(), c.showCmd(), c.decideCmd(true), c.decideCmd(false), c.watchCmd(), c.answerCmd(), c.auditCmd())
	return cmd
}

type approverConn struct {
	d          Deps
	bus        busclient.Options
	as         string
	jsonOut    bool
	home       string
	conn       *bus.Bus
	store      *approvals.Store
	signer     nkeys.KeyPair
	signerName string
}

func (c *approverConn) flags(f *pflag.FlagSet) {
	addBusFlags(f, &c.bus, busFlagText{
		URL:   "bus URL (default: the local 'jazz bus serve')",
		Creds: "NATS credentials file (user JWT + seed)",
		Nkey:  "nkey seed file",
	})
	f.StringVar(&c.as, "as", "", "decide as this approver (their seed in JAZZ_HOME/bus/approvers)")
	f.BoolVar(&c.jsonOut, "json", false, "JSON output for scripts")
}

// open connects; sign says an identity that can sign is required.
func (c *approverConn) open(ctx context.Context, sign bool) error {
	home, err := config.Home(c.d.Getenv, c.d.Cwd)
	if err != nil {
		return err
	}
	// The approver's seeds, the server's address and pin, and the audit
	// log live here: one another user could change is not trusted.
	if err := config.CheckHome(home); err != nil {
		return err
	}
	c.home = home
	o := c.bus.WithEnv(c.d.Getenv)
	o.Name, o.ReconnectFor = "jazz-approvals", 30*time.Second
	identity, name, err := c.identity(home, o, sign)
	if err != nil {
		return err
	}
	if identity != "" && o.Nkey == "" && o.Creds == "" {
		o.Nkey = identity
	}
	if o, err = o.WithLocal(home, identity); err != nil {
		return err
	}
	if sign {
		if c.signer, err = o.Signer(); err != nil {
			return err
		}
		c.signerName = name
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if c.conn, err = busclient.Connect(cctx, o); err != nil {
		return err
	}
	if c.store, err = approvals.OpenStore(cctx, c.conn, false); err != nil {
		c.conn.CloseNow()
		return err
	}
	return nil
}

// withRecord connects, finds the record of id and hands it to fn, all
// within 15 s.
func (c *approverConn) withRecord(ctx context.Context, id string, sign bool, fn func(context.Context, approvals.Record) error) error {
	if err := c.open(ctx, sign); err != nil {
		return err
	}
	defer c.close()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	r, err := c.store.Find(ctx, id)
	if err != nil {
		return err
	}
	return fn(ctx, r)
}

func (c *approverConn) close() {
	if c.conn != nil {
		// Deliveries and publishes still pending finish first, within a
		// bound.
		ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = c.conn.Close(ctx)
	}
}

// identity picks the seed file: --as NAME, else --nkey/--creds (already
// in o), else the only local approver, else (to read only) the observer.
func (c *approverConn) identity(home string, o busclient.Options, sign bool) (path, name string, err error) {
	if c.as != "" {
		if !approvals.ValidName(c.as) {
			return "", "", fmt.Errorf("--as %q is not an approver name", c.as)
		}
		p := approvals.ApproverSeedPath(home, c.as)
		if _, err := os.Stat(p); err != nil {
			return "", "", fmt.Errorf("no local identity for approver %s (%s): add one with `jazz bus add-approver %s`, or pass --nkey", c.as, p, c.as)
		}
		return p, c.as, nil
	}
	if o.Nkey != "" || o.Creds != "" {
		return "", strings.TrimSuffix(filepath.Base(o.Nkey+o.Creds), filepath.Ext(o.Nkey+o.Creds)), nil
	}
	seeds, _ := filepath.Glob(filepath.Join(home, approvals.BusDir, approvals.ApproverSeeds, "*.nk"))
	sort.Strings(seeds)
	switch {
	case len(seeds) == 1:
		return seeds[0], strings.TrimSuffix(filepath.Base(seeds[0]), ".nk"), nil
	case len(seeds) > 1:
		var names []string
		for _, s := range seeds {
			names = append(names, strings.TrimSuffix(filepath.Base(s), ".nk"))
		}
		return "", "", fmt.Errorf("which approver are you? pass --as NAME (%s)", strings.Join(names, ", "))
	case sign:
		return "", "", errors.New("no approver identity: add one with `jazz bus add-approver NAME`, or pass --nkey FILE or --creds FILE")
	}
	if p := busserver.RoleSeedPath(home, busserver.RoleObserver); fileExists(p) {
		return p, "", nil
	}
	return "", "", nil // no identity: the server decides whether that is enough
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (c *approverConn) listCmd() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the approvals waiting for a decision",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.open(cmd.Context(), false); err != nil {
				return err
			}
			defer c.close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			recs, err := c.store.Snapshot(ctx)
			if err != nil {
				return err
			}
			now := time.Now()
			var shown []approvals.Record
			for _, r := range recs {
				if all || r.Pending(now) {
					shown = append(shown, r)
				}
			}
			if c.jsonOut {
				return writeJSON(c.d.IO.Out, recordViews(shown, now))
			}
			if len(shown) == 0 {
				fmt.Fprintln(c.d.IO.ErrOut, "nothing waits for a decision")
				return nil
			}
			width := humanio.ScreenWidth(c.d.IO.Out)
			for _, r := range shown {
				// Broken to the screen: a row the terminal wrapped could
				// pass for another request's line.
				fmt.Fprintln(c.d.IO.Out, visible.Wrap(summaryLine(r, now), width, "  "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include decided and expired requests")
	return cmd
}

func (c *approverConn) showCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one request: what would run, where, and its diff",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withRecord(cmd.Context(), args[0], false, func(_ context.Context, r approvals.Record) error {
				if c.jsonOut {
					return writeJSON(c.d.IO.Out, recordView(r, time.Now()))
				}
				c.render(c.d.IO.Out, r)
				return nil
			})
		},
	}
}

func (c *approverConn) decideCmd(approve bool) *cobra.Command {
	var note, shown string
	use, short := "approve ID", "Approve a request (signed with your identity)"
	if !approve {
		use, short = "deny ID", "Deny a request (signed with your identity)"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(note) > approvals.MaxNote {
				return fmt.Errorf("the note is %d bytes; at most %d are allowed", len(note), approvals.MaxNote)
			}
			return c.withRecord(cmd.Context(), args[0], true, func(ctx context.Context, r approvals.Record) error {
				rec, err := c.decide(ctx, r, approve, note, shown)
				if err != nil {
					return err
				}
				if c.jsonOut {
					return writeJSON(c.d.IO.Out, recordView(rec, time.Now()))
				}
				fmt.Fprintf(c.d.IO.Out, "%s %s (%s in run %s)\n", visible.Line(rec.Status), visible.Line(rec.Request.RequestID), visible.Line(rec.Request.Tool), visible.Line(rec.Request.RunID))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "a note for the run (the model reads it on a denial)")
	cmd.Flags().StringVar(&shown, "shown", "", "the shown hash `show` printed: refuse if the request changed since")
	return cmd
}

// decide signs and records one verdict. The action hash is recomputed
// from the record's own execute arguments first: a record whose hash does
// not match what it says will run is never signed. wantShown, when set,
// is the shown hash the person saw (`show`): a record that differs now is
// not signed.
func (c *approverConn) decide(ctx context.Context, r approvals.Record, approve bool, note, wantShown string) (approvals.Record, error) {
	now := time.Now()
	req := r.Request
	if err := r.Closed(now); err != nil {
		return r, err
	}
	// The signature covers the request exactly as read and shown here:
	// the run accepts it only if that is what it wrote.
	d, err := approvals.DecisionFor(req, approve, note)
	if err != nil {
		return r, err
	}
	if wantShown != "" && wantShown != d.ShownHash {
		return r, fmt.Errorf("request %s is not the one you were shown (it is %s now, you saw %s); not signing it: show it again", req.RequestID, d.ShownHash, wantShown)
	}
	d.SignerName = c.signerName
	env, err := approvals.SignDecision(c.signer, d, now, 0)
	if err != nil {
		return r, err
	}
	if err := env.Open(&d); err != nil {
		return r, err
	}
	rec, err := c.store.DecideRecord(ctx, r, env, d, now)
	if err != nil {
		return rec, err
	}
	audit := approvals.NewAudit(c.home, c.conn)
	if err := audit.Append(approvals.AuditEntry{Event: approvals.AuditDecided, RunID: req.RunID, RequestID: req.RequestID,
		Tool: req.Tool, ActionHash: d.ActionHash, Approved: &approve, Approver: c.signerName, ApproverKey: env.Signer, Note: note, Side: "approver"}); err != nil {
		fmt.Fprintf(c.d.IO.ErrOut, "warning: %v\n", err)
	}
	return rec, nil
}

func (c *approverConn) watchCmd() *cobra.Command {
	var prompt, noPrompt bool
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Stream requests as they arrive and decide them inline",
		Long: `Print every request waiting now and every new one as it arrives. On a terminal
(or with --prompt) each is asked in turn: y [note] approves, n [note] denies, s skips,
q stops. Requests decided elsewhere are reported as they are.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			interactive := !noPrompt && (prompt || c.d.IO.IsStdinTTY())
			if err := c.open(cmd.Context(), interactive); err != nil {
				return err
			}
			defer c.close()
			return c.watch(cmd.Context(), interactive)
		},
	}
	cmd.Flags().BoolVar(&prompt, "prompt", false, "ask for each request even when stdin is not a terminal")
	cmd.Flags().BoolVar(&noPrompt, "no-prompt", false, "only stream; decide nothing")
	return cmd
}

// watch streams requests and, when interactive, asks them one at a
// time. What a keystroke answers is always the request on screen:
//
//   - the prompt names its request, and on a terminal the request is
//     printed in full right above its prompt when it is asked, so a
//     request that arrives while a prompt is open is not printed below
//     it (a note says it waits, and the prompt is written again);
//   - a line read before the asked request was on screen answers nothing
//     (it was typed for the one before: a double Enter, a "y" sent twice,
//     one whose request was decided elsewhere meanwhile), and is said;
//   - a request decided elsewhere leaves the queue, asked or not.
func (c *approverConn) watch(ctx context.Context, interactive bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates, err := c.store.Watch(ctx)
	if err != nil {
		return err
	}
	var lines chan humanio.Line
	if interactive {
		lines = make(chan humanio.Line, 64)
		go humanio.ReadLines(ctx, c.d.IO.In, humanio.MaxLine, lines)
	}
	shown := map[string]bool{}
	var queue []approvals.Record
	asking := ""
	// since is when the asked request went on screen: only a line read
	// after it answers.
	var since time.Time
	prompt := func(head approvals.Record) {
		q := head.Request
		fmt.Fprintf(c.d.IO.ErrOut, "Approve %s (%s in run %s)? y [note] / n [note] / s skip / q quit: ", visible.Line(q.RequestID), visible.Line(q.Tool), visible.Line(q.RunID))
	}
	// ask puts the head of the queue on screen; at is when it was
	// written out already (--json streams it on arrival), else zero.
	ask := func(at time.Time) {
		for len(queue) > 0 && asking == "" {
			head := queue[0]
			if !head.Pending(time.Now()) {
				queue = queue[1:]
				continue
			}
			asking = approvals.Key(head.Request.RunID, head.Request.RequestID)
			since = time.Now()
			if !c.jsonOut {
				c.render(c.d.IO.Out, head)
			} else if !at.IsZero() {
				since = at
			}
			at = time.Time{}
			prompt(head)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case r, ok := <-updates:
			if !ok {
				return nil
			}
			key := approvals.Key(r.Request.RunID, r.Request.RequestID)
			now := time.Now()
			switch {
			case r.Pending(now) && !shown[key]:
				shown[key] = true
				switch {
				case c.jsonOut:
					_ = writeJSON(c.d.IO.Out, recordView(r, now))
				case !interactive:
					c.render(c.d.IO.Out, r)
				}
				if !interactive {
					continue
				}
				queue = append(queue, r)
				if asking != "" && !c.jsonOut {
					fmt.Fprintf(c.d.IO.ErrOut, "\n(%s arrived; it is asked after this one)\n", visible.Line(r.Request.RequestID))
					prompt(queue[0])
				}
				ask(now)
			case !r.Pending(now) && shown[key]:
				delete(shown, key)
				if c.jsonOut {
					_ = writeJSON(c.d.IO.Out, recordView(r, now))
				} else {
					fmt.Fprintln(c.d.IO.Out, outcomeLine(r))
				}
				if asking == key {
					fmt.Fprintln(c.d.IO.ErrOut, "\n(decided elsewhere)")
					asking = ""
				}
				queue = withoutKey(queue, key)
				ask(time.Time{})
			}
		case l, ok := <-whenAsking(lines, asking != ""):
			if !ok {
				lines = nil // stdin closed: keep streaming, ask nothing more
				interactive = false
				continue
			}
			head := queue[0]
			if l.Cut || l.At.Before(since) {
				// Typed for something else, or endless: it answers nothing.
				fmt.Fprintf(c.d.IO.ErrOut, "\n(ignored a line typed before %s was shown)\n", visible.Line(head.Request.RequestID))
				prompt(head)
				continue
			}
			verb, note, _ := strings.Cut(strings.TrimSpace(l.Text), " ")
			switch strings.ToLower(verb) {
			case "y", "yes", "n", "no":
				approve := verb[0] == 'y' || verb[0] == 'Y'
				dctx, done := context.WithTimeout(ctx, 15*time.Second)
				_, err := c.decide(dctx, head, approve, strings.TrimSpace(note), "")
				done()
				if err != nil {
					fmt.Fprintf(c.d.IO.ErrOut, "%v\n", err)
				}
			case "s", "skip":
			case "q", "quit":
				return nil
			default:
				fmt.Fprintf(c.d.IO.ErrOut, "answer y [note], n [note], s or q for %s: ", visible.Line(head.Request.RequestID))
				continue
			}
			asking = ""
			queue = queue[1:]
			ask(time.Time{})
		}
	}
}

// withoutKey is queue without the request of key.
func withoutKey(queue []approvals.Record, key string) []approvals.Record {
	out := queue[:0]
	for _, r := range queue {
		if approvals.Key(r.Request.RunID, r.Request.RequestID) != key {
			out = append(out, r)
		}
	}
	return out
}

// whenAsking is lines while a request is being asked, else nil: a line
// waits in the channel until a prompt is open, and is then taken only
// if it came in after that prompt's request was shown.
func whenAsking(lines <-chan humanio.Line, asking bool) <-chan humanio.Line {
	if !asking {
		return nil
	}
	return lines
}

// render shows one request in full; everything the run (and so the
// model) wrote is made visible first, then coloured on a terminal. Its
// last line says again what runs (see actionLine): watch writes the
// prompt right under it.
func (c *approverConn) render(out io.Writer, r approvals.Record) {
	w := &strings.Builder{}
	q := r.Request
	colour := c.d.IO.IsStdoutTTY() && c.d.Getenv("NO_COLOR") == ""
	field := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "  %-10s %s\n", k, v)
		}
	}
	// Every field is the run's (or a forger's) text: none reaches the
	// screen unescaped (TestEveryRecordFieldRendersInert).
	fmt.Fprintf(w, "● %s  %s\n", visible.Line(q.RequestID), visible.Line(r.Status))
	field("run", visible.Line(q.RunID))
	who := visible.Line(q.Agent)
	if q.Subagent != "" {
		// The name is the model's to choose; the persona is what it is.
		// Both are quoted (visible.Name), so a name cannot end itself and
		// write a persona of its choosing after it.
		who += " → subagent " + visible.Name(q.Subagent)
		if q.Persona != "" {
			who += " (persona " + visible.Name(q.Persona) + ")"
		}
	}
	field("agent", who)
	field("task", visible.Line(q.Task))
	field("tool", visible.Line(q.Tool)+" → "+visible.Line(q.ExecuteTool))
	policy := q.Policy
	if policy == "" {
		policy = "none"
	}
	field("risk", visible.Line(q.RiskTier)+" (policy "+visible.Line(policy)+")")
	field("directory", visible.Line(q.WorkDir))
	if q.Worker != "" {
		field("worker", visible.Line(q.Worker)+" (it runs on that worker's machine, not the run's)")
	}
	field("expires", q.ExpiresAt.Local().Format("15:04:05"))
	// Broken to the screen's width: a line the terminal wrapped itself
	// would start a row with the model's text (visible.Wrap). A digest is
	// not broken: it is copied into `approve --shown`. Where its row would
	// be wider than the screen, it goes on a row of its own under its name.
	width := humanio.ScreenWidth(out)
	body := &strings.Builder{}
	digest := func(k, v string) {
		if !isDigest(v) {
			field(k, visible.Line(v))
			return
		}
		body.WriteString(visible.Wrap(w.String(), width, "  "))
		w.Reset()
		if row := fmt.Sprintf("  %-10s %s", k, v); len(row) <= width {
			fmt.Fprintln(body, row)
		} else {
			fmt.Fprintf(body, "  %s\n    %s\n", k, v)
		}
	}
	digest("action", q.ActionHash)
	if shown, err := approvals.ShownHash(q); err == nil {
		// `approve ID --shown` with this refuses a record changed since.
		digest("shown", shown)
	}
	// The message and the diff are the run's (the model's) text: quoted
	// behind the gutter, so no line of them passes for a field above.
	if q.Message != "" {
		fmt.Fprintln(w, visible.Quote("  ", q.Message))
	}
	if len(q.ExecuteArgs) > 0 {
		canon, err := approvals.Canonical(q.ExecuteArgs)
		if err != nil {
			canon = q.ExecuteArgs
		}
		// ASCII JSON: a lookalike or invisible character is a \u escape.
		fmt.Fprintf(w, "  %-10s %s\n", "executes", visible.JSON(canon, "  "))
	}
	if q.PreviewDiff != "" {
		lines := strings.Split(colourDiff(visible.Block(strings.TrimSuffix(q.PreviewDiff, "\n")), colour), "\n")
		for i, l := range lines {
			lines[i] = "  " + visible.Gutter + l
		}
		fmt.Fprintln(w, strings.Join(lines, "\n"))
	}
	if r.Status != approvals.StatusPending {
		fmt.Fprintln(w, "  "+outcomeLine(r))
	}
	body.WriteString(visible.Wrap(w.String(), width, "  "))
	_, _ = io.WriteString(out, body.String()+visible.Wrap(actionLine(q, humanio.Height(body.String())), width, "  ")+"\n")
}

// isDigest says whether s is a sha256 digest as approvals writes one:
// "sha256:" and 64 lowercase hex digits.
func isDigest(s string) bool {
	hex, ok := strings.CutPrefix(s, approvals.HashPrefix)
	return ok && len(hex) == 64 && strings.Trim(hex, "0123456789abcdef") == ""
}

// actionLine closes a rendered request: the tool and the arguments that
// run, each cut with a mark and its runs of spaces counted, so none
// hides behind its own length, and, for a request taller than a screen,
// that the rest is above. A diff or an argument of a few hundred lines
// otherwise scrolls the file or the command out of sight, and watch's
// prompt names only the tool.
func actionLine(q approvals.Request, height int) string {
	return "  ▶ runs: " + visible.Code(q.Tool) + humanio.Arguments(q.ExecuteArgs, ", above") + humanio.TallNote(height)
}

func colourDiff(diff string, colour bool) string {
	if !colour {
		return diff
	}
	lines := strings.Split(diff, "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			lines[i] = "\x1b[1m" + l + "\x1b[0m"
		case strings.HasPrefix(l, "+"):
			lines[i] = "\x1b[32m" + l + "\x1b[0m"
		case strings.HasPrefix(l, "-"):
			lines[i] = "\x1b[31m" + l + "\x1b[0m"
		case strings.HasPrefix(l, "@@"):
			lines[i] = "\x1b[36m" + l + "\x1b[0m"
		}
	}
	return strings.Join(lines, "\n")
}

// summaryLine is a request in one line for list, which a person may
// approve from: it says what runs (the arguments it executes, each cut
// with a mark that says where the rest is), not the first line of the
// message, which a command's later lines or its padding never reached.
func summaryLine(r approvals.Record, now time.Time) string {
	q := r.Request
	age := now.Sub(q.CreatedAt).Round(time.Second)
	return fmt.Sprintf("%s  %s  %s  %s  %s ago ▶%s", visible.Line(q.RequestID), visible.Line(q.RunID), visible.Line(q.Tool), visible.Line(q.RiskTier), age,
		humanio.Arguments(q.ExecuteArgs, ": show "+visible.Code(q.RequestID)))
}

func outcomeLine(r approvals.Record) string {
	q := r.Request
	switch r.Status {
	case approvals.StatusApproved, approvals.StatusDenied:
		return fmt.Sprintf("%s %s by %s at %s", visible.Line(q.RequestID), r.Status, visible.Line(r.DecidedBy), r.DecidedAt.Local().Format(time.RFC3339))
	case approvals.StatusPending:
		return fmt.Sprintf("%s expired at %s", visible.Line(q.RequestID), q.ExpiresAt.Local().Format(time.RFC3339))
	}
	return fmt.Sprintf("%s %s (%s)", visible.Line(q.RequestID), visible.Line(r.Status), visible.Line(r.Reason))
}

// recordJSON is a record for scripts: the request, its status and (when
// decided) who decided and when.
type recordJSON struct {
	Status    string            `json:"status"`
	Pending   bool              `json:"pending"`
	Request   approvals.Request `json:"request"`
	DecidedBy string            `json:"decidedBy,omitempty"`
	DecidedAt *time.Time        `json:"decidedAt,omitempty"`
	Reason    string            `json:"reason,omitempty"`
}

func recordView(r approvals.Record, now time.Time) recordJSON {
	v := recordJSON{Status: r.Status, Pending: r.Pending(now), Request: r.Request, DecidedBy: r.DecidedBy, Reason: r.Reason}
	if r.Status == approvals.StatusPending && !v.Pending {
		v.Status = approvals.StatusExpired
	}
	if !r.DecidedAt.IsZero() {
		t := r.DecidedAt
		v.DecidedAt = &t
	}
	return v
}

func recordViews(rs []approvals.Record, now time.Time) []recordJSON {
	out := make([]recordJSON, 0, len(rs))
	for _, r := range rs {
		out = append(out, recordView(r, now))
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(escapeHidden(b)))
	return err
}

// answerCmd builds `jazz approvals answer RUN ID RESPONSE`: a signed
// answer to a question a run asks (ask_user_question). The run publishes
// a waiting question again every few seconds; the answer is bound to the
// question exactly as read here, and the run takes it only if that is
// the question it asked.
func (c *approverConn) answerCmd() *cobra.Command {
	var want string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "answer RUN ID RESPONSE",
		Short: "Answer a run's question (signed with your identity)",
		Long: `Wait (at most --wait) for question ID of run RUN, show it on stderr with its
hash, and answer it with RESPONSE, signed with your identity and bound to that
question: the run refuses an answer to any other question, an answer from
anyone it does not admit, and any answer it has already taken.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			run, id, response := args[0], args[1], args[2]
			if len(response) > approvals.MaxAnswer {
				return fmt.Errorf("the answer is %d bytes; at most %d are allowed", len(response), approvals.MaxAnswer)
			}
			if err := c.open(cmd.Context(), true); err != nil {
				return err
			}
			defer c.close()
			ctx, cancel := context.WithTimeout(cmd.Context(), wait)
			defer cancel()
			q, err := c.question(ctx, run, id)
			if err != nil {
				return err
			}
			hash, err := approvals.QuestionHash(run, q)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.d.IO.ErrOut, "❓ question %s in run %s (%s):\n%s\n", visible.Line(q.RequestID), visible.Line(run), hash, visible.Quote("  ", q.Question))
			if want != "" && want != hash {
				return fmt.Errorf("question %s is not the one you were shown (it is %s now, you saw %s); not answering it", id, hash, want)
			}
			env, err := approvals.SignAnswer(c.signer, run, q, response, time.Now(), 0)
			if err != nil {
				return err
			}
			if err := c.conn.Publish(messages.InputSignedSubject(run), env, nil); err != nil {
				return fmt.Errorf("send the answer: %w", err)
			}
			if err := c.conn.Flush(ctx); err != nil {
				return fmt.Errorf("send the answer: %w", err)
			}
			fmt.Fprintf(c.d.IO.Out, "answered %s in run %s\n", visible.Line(q.RequestID), visible.Line(run))
			return nil
		},
	}
	cmd.Flags().StringVar(&want, "question", "", "the question hash you were shown: refuse if the question differs")
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the question")
	return cmd
}

// question waits for the run to publish question id.
func (c *approverConn) question(ctx context.Context, run, id string) (messages.UserInputRequired, error) {
	got := make(chan messages.UserInputRequired, 1)
	sub, err := bus.Subscribe(ctx, c.conn, messages.InputRequiredSubject(run), func(m bus.Msg[messages.UserInputRequired]) {
		if m.Value.RequestID == id {
			select {
			case got <- m.Value:
			default:
			}
		}
	}, bus.Registered())
	if err != nil {
		return messages.UserInputRequired{}, fmt.Errorf("listen for the question: %w", err)
	}
	defer sub.Stop()
	select {
	case q := <-got:
		return q, nil
	case <-ctx.Done():
		return messages.UserInputRequired{}, fmt.Errorf("run %s asked no question %s while waiting (is it running, with --remote-approvals?): %w", run, id, ctx.Err())
	}
}
