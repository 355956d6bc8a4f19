// Package remoteapproval is the run's side of remote approvals: it takes
// each call the gate asks a person about, records it as a pending request
// in the approvals bucket, and hands the gate a decision only once that
// decision's signature, signer, tier, run, request, action hash, expiry
// and nonce all check out. It also applies signed policy changes, capped
// at the run's ceiling. One goroutine owns all of its state.
package remoteapproval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/messages"
)

// DecidedByPrefix starts the DecidedBy of a verified remote decision:
// "remote:<approver name>".
const DecidedByPrefix = messages.DecidedByRemote + ":"

// DecidedByTimeout is the DecidedBy of a call nobody answered in time.
const DecidedByTimeout = "timeout"

// Notice is something the run should tell its user (a refused decision,
// a policy change, a timeout); Kind is an approvals.Audit* event.
type Notice struct {
	Kind    string
	Message string
}

// Config is one run's remote approvals.
type Config struct {
	Bus   *bus.Bus
	Store *approvals.Store
	RunID string
	// Registry is who may decide (and change policy).
	Registry *approvals.Registry
	// Timeout declines a request nobody answers (--approval-timeout).
	Timeout time.Duration
	// Policy is the policy the run started with; Ceiling the highest a
	// signed change may set (--max-remote-policy).
	Policy  string
	Ceiling string
	WorkDir string
	// LocalHuman: a person at this run (a terminal or a bridge) is asked
	// each request too. A request too large for the bucket is then left
	// to them, not declined: what cannot go to approvers whole goes to
	// nobody on the bus, and the gate still waits for the person.
	LocalHuman bool
	// Deliver hands a verified decision (or a decline) to the gate.
	Deliver func(messages.ApprovalDecided)
	// SetPolicy hands a verified policy change to the gate.
	SetPolicy func(messages.PolicyChanged)
	// Report tells the user; may be nil.
	Report func(Notice)
	Audit  *approvals.Audit
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// CheckEvery is how often each pending record is read back, so one
	// that vanished (deleted, or rewritten to expire, by another client)
	// is written again; default 2 s.
	CheckEvery time.Duration
}

// Remote runs the loop.
type Remote struct {
	cfg  Config
	in   chan any
	done chan struct{}
	subs []*bus.Subscription
	// stopPolicy ends the reading of the run's policy changes.
	stopPolicy func()
	// unhook removes the connection-state listeners.
	unhook []func()
}

type pending struct {
	req approvals.Request
	// shown is the ShownHash of req: a decision must be for exactly the
	// request this run wrote.
	shown   string
	ask     messages.ApprovalRequired
	timer   *time.Timer
	written bool
	writing bool
}

// Messages of the loop.
type (
	asked   struct{ m messages.ApprovalRequired }
	written struct {
		key string
		err error
	}
	hint struct {
		key string
		// after is the revision the write expected to replace: the value
		// it wrote, if stored, has a higher one.
		after uint64
	}
	fetched struct {
		key string
		rec approvals.Record
		err error
	}
	expired   struct{ key string }
	settled   struct{ d messages.ApprovalDecided }
	policyMsg struct{ data []byte }
	connUp    struct{}
	connLost  struct{}
	closeReq  struct{ done chan struct{} }
)

// Start subscribes to the run's keys in the approvals bucket and to its
// policy subject, and starts the loop. ctx bounds the loop's life.
func Start(ctx context.Context, cfg Config) (*Remote, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if cfg.CheckEvery <= 0 {
		cfg.CheckEvery = 2 * time.Second
	}
	r := &Remote{cfg: cfg, in: make(chan any, 1024), done: make(chan struct{})}
	prefix := approvals.KeySubject(messages.SubjectToken(cfg.RunID)) + "."
	s1, err := bus.SubscribeRaw(ctx, cfg.Bus, prefix+"*", func(m bus.Raw) {
		// A write on one of our keys. Our own pending writes are skipped
		// here; anything else is only a hint: the stored value, read
		// back, is what counts (a write that lost its compare-and-set is
		// still delivered to subscribers).
		var peek struct {
			Status string `json:"status"`
		}
		if json.Unmarshal(m.Value, &peek) == nil && peek.Status == approvals.StatusPending {
			return
		}
		after, _ := strconv.ParseUint(m.Header.Get("Nats-Expected-Last-Subject-Sequence"), 10, 64)
		r.send(hint{key: strings.TrimPrefix(m.Subject, "$KV."+approvals.Bucket+"."), after: after})
	})
	if err != nil {
		return nil, fmt.Errorf("watch approvals: %w", err)
	}
	r.subs = []*bus.Subscription{s1}
	// Policy changes are read from the stream that keeps them, never from
	// the subject alone: one sent while this connection was away would be
	// unheard, its nonce unknown, and anyone who may publish there could
	// replay it later (within its validity) over a newer change. Read in
	// the server's order, every change is seen before any copy of it.
	stopPolicy, err := approvals.FollowPolicy(ctx, cfg.Bus, cfg.RunID, func(data []byte) { r.send(policyMsg{data: data}) })
	if err != nil {
		// No change is taken, which is the starting policy kept: the
		// run goes on, and its user is told why changes will not apply.
		if cfg.Report != nil {
			cfg.Report(Notice{Kind: approvals.AuditPolicyRefused, Message: "signed policy changes will not be taken by this run: " + err.Error()})
		}
		stopPolicy = func() {}
	}
	r.stopPolicy = stopPolicy
	if err := cfg.Bus.Flush(ctx); err != nil {
		s1.Stop()
		stopPolicy()
		return nil, fmt.Errorf("watch approvals: %w", err)
	}
	r.unhook = []func(){
		cfg.Bus.OnReconnect(func() { r.send(connUp{}) }),
		cfg.Bus.OnClosed(func() { r.send(connLost{}) }),
	}
	go r.loop(ctx)
	return r, nil
}

// Ask records one gate request for remote approval. It never blocks the
// gate: the loop does the work.
func (r *Remote) Ask(m messages.ApprovalRequired) {
	select {
	case r.in <- asked{m}:
	case <-r.done:
		// The loop is gone (the run is ending): never leave the gate
		// waiting.
		r.cfg.Deliver(messages.ApprovalDecided{Place: m.Place, Trace: m.Trace, RequestID: m.RequestID, ToolCallID: m.ToolCallID, ToolName: m.ToolName,
			DecidedBy: messages.DecidedByCancel, Note: "The run was ending, so this call was declined."})
	}
}

// Withdraw tells the loop the gate resolved one of the requests it was
// handed, whoever answered (a bridge, the terminal, a cancel): the record
// is closed, so approvers no longer see it as something to decide and no
// decision written on it afterwards is taken. d names the gate's request
// id; a request this loop already settled is left alone.
func (r *Remote) Withdraw(d messages.ApprovalDecided) {
	if d.RequestID == "" {
		return
	}
	r.send(settled{d})
}

func (r *Remote) send(m any) {
	select {
	case r.in <- m:
	case <-r.done:
	}
}

// Close withdraws what is still pending (marked cancelled for approvers)
// and stops the loop; it waits at most until ctx ends.
func (r *Remote) Close(ctx context.Context) {
	for _, s := range r.subs {
		s.Stop()
	}
	r.stopPolicy()
	for _, remove := range r.unhook {
		remove()
	}
	c := closeReq{done: make(chan struct{})}
	select {
	case r.in <- c:
		select {
		case <-c.done:
		case <-ctx.Done():
		}
	case <-r.done:
	case <-ctx.Done():
	}
}

func (r *Remote) loop(ctx context.Context) {
	defer close(r.done)
	st := &state{r: r, pending: map[string]*pending{}, nonces: approvals.NonceSet{}, policyNonces: approvals.NonceSet{}, decided: map[string]taken{}}
	check := time.NewTicker(r.cfg.CheckEvery)
	defer check.Stop()
	for {
		select {
		case <-check.C:
			// A record can vanish without a write this run hears (a
			// copy rewritten with a short TTL expires unannounced): each
			// one written is read back.
			if !st.lost {
				for key, p := range st.pending {
					if p.written && !p.writing {
						st.fetch(ctx, key, 0)
					}
				}
			}
		case <-ctx.Done():
			st.closeAll(approvals.StatusCancelled, "the run ended")
			return
		case m := <-r.in:
			if c, ok := m.(closeReq); ok {
				st.closeAll(approvals.StatusCancelled, "the run ended")
				close(c.done)
				return
			}
			st.handle(ctx, m)
		}
	}
}

type state struct {
	r            *Remote
	pending      map[string]*pending
	nonces       approvals.NonceSet
	policyNonces approvals.NonceSet
	// policyIssued is when the policy change applied last was issued:
	// no older one is taken after it.
	policyIssued time.Time
	lost         bool
	// closing counts record closes still on their way: the loop ends
	// only after them, so a run that exits right after an answer leaves
	// no pending record behind.
	closing sync.WaitGroup
	// decided are the requests a remote decision was taken for, with the
	// revision it was read at: any later write there is someone else's
	// (a decision replayed on it, a record rewritten) and is audited.
	decided      map[string]taken
	decidedOrder []string
	// refusals counts the refusals reported (reportRefusal).
	refusals int
}

type taken struct {
	req approvals.Request
	rev uint64
}

// maxDecidedKept bounds state.decided; the oldest go first.
const maxDecidedKept = 1024

func (s *state) handle(ctx context.Context, m any) {
	cfg := s.r.cfg
	switch m := m.(type) {
	case asked:
		s.ask(ctx, m.m)
	case written:
		p := s.pending[m.key]
		if p == nil {
			return
		}
		p.writing = false
		if m.err == nil {
			p.written = true
			return
		}
		var tooLarge *approvals.TooLargeError
		if errors.As(m.err, &tooLarge) {
			// Refused before it was sent (the connection came back to a
			// server that takes less): nothing landed to close.
			note := s.tooLarge(p.req, tooLarge)
			if cfg.LocalHuman {
				p.timer.Stop()
				delete(s.pending, m.key)
				return
			}
			s.decline(m.key, messages.DecidedByNobody, note)
			return
		}
		if !cfg.Bus.Connected() {
			return // retried when the connection is back
		}
		// The write may have landed after all: the record is closed.
		s.closeRecord(p.req, approvals.StatusCancelled, "it could not be recorded")
		s.decline(m.key, messages.DecidedByNobody, "The approval request could not be recorded on the bus ("+m.err.Error()+"), so this call was declined.")
	case hint:
		if _, done := s.decided[m.key]; s.pending[m.key] != nil || done {
			s.fetch(ctx, m.key, m.after)
		}
	case fetched:
		s.fetched(ctx, m)
	case expired:
		if p := s.pending[m.key]; p != nil {
			msg := fmt.Sprintf("No approver answered within %s, so this call was declined. Do not retry it now: continue without it, or say in your answer what still needs approval.", cfg.Timeout)
			s.audit(approvals.AuditEntry{Event: approvals.AuditExpired, RequestID: p.req.RequestID, Tool: p.req.Tool, ActionHash: p.req.ActionHash})
			s.report(approvals.AuditExpired, fmt.Sprintf("approval %s (%s) timed out after %s", p.req.RequestID, p.req.Tool, cfg.Timeout))
			s.closeRecord(p.req, approvals.StatusExpired, "nobody answered in time")
			s.decline(m.key, DecidedByTimeout, msg)
		}
	case settled:
		for key, p := range s.pending {
			if p.ask.RequestID != m.d.RequestID {
				continue
			}
			p.timer.Stop()
			delete(s.pending, key)
			reason := "answered elsewhere (" + m.d.DecidedBy + ")"
			s.audit(approvals.AuditEntry{Event: approvals.AuditCancelled, RequestID: p.req.RequestID, Tool: p.req.Tool, ActionHash: p.req.ActionHash, Reason: reason})
			s.closeRecord(p.req, approvals.StatusCancelled, reason)
		}
	case policyMsg:
		s.policy(m.data)
	case connUp:
		s.lost = false
		// Catch up: write what could not be written, read back what may
		// have been decided while the connection was away.
		for key, p := range s.pending {
			if !p.written && !p.writing {
				s.write(ctx, key, p)
			} else {
				s.fetch(ctx, key, 0)
			}
		}
	case connLost:
		s.lost = true
		// The connection is closed for good: nothing can be written, and
		// the records' own expiry (the approval timeout) removes them.
		for key := range s.pending {
			s.decline(key, messages.DecidedByNobody, "The connection to the approval bus was lost and could not be restored, so this call was declined.")
		}
	}
}

func (s *state) ask(ctx context.Context, m messages.ApprovalRequired) {
	cfg := s.r.cfg
	now := cfg.Now().UTC()
	hash, err := approvals.ActionHash(m.ExecuteToolName, m.ExecuteArgs)
	if err != nil {
		s.deliver(m, false, messages.DecidedByNobody, "This call cannot be approved remotely: "+err.Error())
		return
	}
	if s.lost {
		s.deliver(m, false, messages.DecidedByNobody, "The approval bus is unreachable, so this call was declined.")
		return
	}
	req := approvals.Request{
		RunID: cfg.RunID, RequestID: approvals.NewRequestID(), ToolCallID: m.ToolCallID,
		AgentID: m.Place.AgentID, Agent: m.Place.AgentName, Depth: m.Place.Depth,
		Tool: m.ToolName, Arguments: m.Arguments, Message: m.Message, PreviewDiff: m.PreviewDiff,
		RiskTier: m.RiskLevel, WorkDir: cfg.WorkDir, Policy: cfg.Policy,
		ExecuteTool: m.ExecuteToolName, ExecuteArgs: m.ExecuteArgs, ActionHash: hash,
		CreatedAt: now, ExpiresAt: now.Add(cfg.Timeout),
	}
	if m.Place.Depth > 0 {
		req.Subagent, req.Persona, req.Task = m.Place.AgentName, m.Persona, m.Task
	}
	if m.Worker != "" {
		// It runs on the worker's machine, in a directory of its own: the
		// run's would tell the approver it acts where the run is.
		req.Worker, req.WorkDir = m.Worker, ""
	}
	shown, err := approvals.ShownHash(req)
	if err != nil {
		s.deliver(m, false, messages.DecidedByNobody, "This call cannot be approved remotely: "+err.Error())
		return
	}
	key := approvals.Key(req.RunID, req.RequestID)
	p := &pending{req: req, shown: shown, ask: m}
	var tooLarge *approvals.TooLargeError
	if err := cfg.Store.Fits(req); errors.As(err, &tooLarge) {
		// Never cut: an approver decides exactly what runs, so a request
		// that cannot go on the bus whole goes to nobody there.
		if note := s.tooLarge(req, tooLarge); !cfg.LocalHuman {
			s.deliver(m, false, messages.DecidedByNobody, note)
		}
		return
	}
	p.timer = time.AfterFunc(cfg.Timeout, func() { s.r.send(expired{key}) })
	s.pending[key] = p
	s.audit(approvals.AuditEntry{Event: approvals.AuditRequested, RequestID: req.RequestID, Tool: req.Tool, ActionHash: hash})
	s.write(ctx, key, p)
}

// tooLarge audits and reports req, whose record cannot be written (e),
// and returns what the model is told if the call is declined for it.
func (s *state) tooLarge(req approvals.Request, e *approvals.TooLargeError) string {
	s.audit(approvals.AuditEntry{Event: approvals.AuditCancelled, RequestID: req.RequestID, Tool: req.Tool, ActionHash: req.ActionHash,
		Reason: "not sent: " + e.Error()})
	who := "so it was declined"
	if s.r.cfg.LocalHuman {
		who = "only the person at this run can decide it"
	}
	s.report(approvals.AuditCancelled, fmt.Sprintf("approval %s (%s) was not sent to remote approvers: it is %d bytes, and the approvals bucket takes at most %d; %s",
		req.RequestID, req.Tool, e.Size, e.Limit, who))
	return messages.TooLargeToApprove(e.Size, e.Limit)
}

func (s *state) write(ctx context.Context, key string, p *pending) {
	p.writing = true
	store, req := s.r.cfg.Store, p.req
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := store.Put(wctx, req)
		if err == nil {
			s.r.send(written{key: key})
			return
		}
		// A Create that timed out may still have been stored; if the
		// record is there, it is ours.
		if rec, gerr := store.GetKey(wctx, key); gerr == nil && rec.Request.ActionHash == req.ActionHash {
			err = nil
		}
		s.r.send(written{key: key, err: err})
	}()
}

// fetch reads key back. Subscribers see a write as the stream takes it
// in, so a read right after may still find the value before it: it is
// read again (for at most about 50 ms) until its revision is past after.
// A write that lost its compare-and-set never gets there, and the last
// read, still pending, is then what counts.
func (s *state) fetch(ctx context.Context, key string, after uint64) {
	store := s.r.cfg.Store
	go func() {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var rec approvals.Record
		var err error
		for attempt := 1; attempt <= 20; attempt++ {
			rec, err = store.GetKey(fctx, key)
			if err != nil || rec.Revision > after {
				break
			}
			time.Sleep(time.Duration(attempt) * 250 * time.Microsecond)
		}
		s.r.send(fetched{key: key, rec: rec, err: err})
	}()
}

func (s *state) fetched(ctx context.Context, f fetched) {
	cfg := s.r.cfg
	p := s.pending[f.key]
	if p == nil {
		if t, ok := s.decided[f.key]; ok {
			s.afterTaken(t, f)
		}
		return
	}
	var bad *approvals.MalformedError
	if errors.As(f.err, &bad) {
		s.refused(ctx, p, approvals.Record{Revision: bad.Revision}, &approvals.RefusedError{Reason: approvals.ReasonMalformed, Detail: bad.Err.Error()})
		return
	}
	if errors.Is(f.err, approvals.ErrNoSuchPending) && p.written && !p.writing {
		// Deleted (or expired early) by another client: approvers would
		// see nothing to decide. Whoever did it cannot block them; the
		// request is written again.
		s.auditRefused(p, "", &approvals.RefusedError{Reason: approvals.ReasonUnsigned, Detail: "the record was deleted by another client; it is written again"})
		s.write(ctx, f.key, p)
		return
	}
	if f.err != nil {
		return
	}
	rec := f.rec
	if rec.Status == approvals.StatusPending {
		// Pending, but not as this run wrote it (expired early, another
		// action hash or request id, another text): approvers would
		// refuse to sign it, or sign what the run refuses. Whoever wrote
		// it cannot keep them from the request: it is written again.
		if shown, err := approvals.ShownHash(rec.Request); err != nil || shown != p.shown {
			s.refused(ctx, p, rec, &approvals.RefusedError{Reason: approvals.ReasonUnsigned,
				Detail: "the pending record was rewritten by another client to show another request; it is written again"})
		}
		return
	}
	if rec.Decision == nil {
		// Closed by someone else, whatever it says (expired, withdrawn,
		// approved or denied with nothing signed, a status no client
		// writes): no approver decides it any more, which would decline
		// the call for someone not allowed to. It is put back.
		s.refused(ctx, p, rec, &approvals.RefusedError{Reason: approvals.ReasonUnsigned,
			Detail: fmt.Sprintf("the record was closed by another client (status %q, no signed decision)", rec.Status)})
		return
	}
	// p.req is the request as this run wrote it, never as the store now
	// holds it.
	exp := approvals.Expect{RunID: cfg.RunID, RequestID: p.req.RequestID, ActionHash: p.req.ActionHash, ShownHash: p.shown, RiskTier: p.req.RiskTier}
	d, who, err := approvals.VerifyDecision(*rec.Decision, cfg.Registry, exp, cfg.Now(), s.nonces)
	if err != nil {
		s.refused(ctx, p, rec, err)
		return
	}
	approved := d.Approved
	s.audit(approvals.AuditEntry{Event: approvals.AuditDecided, RequestID: p.req.RequestID, Tool: p.req.Tool, ActionHash: p.req.ActionHash,
		Approved: &approved, Approver: who.Name, ApproverKey: who.PublicKey, Note: d.Note})
	note := d.Note
	if !approved && note == "" {
		note = "Denied by " + who.Name + "."
	}
	s.keepDecided(f.key, taken{req: p.req, rev: rec.Revision})
	s.decide(f.key, approved, DecidedByPrefix+who.Name, note)
}

func (s *state) keepDecided(key string, t taken) {
	if len(s.decidedOrder) >= maxDecidedKept {
		delete(s.decided, s.decidedOrder[0])
		s.decidedOrder = s.decidedOrder[1:]
	}
	s.decided[key] = t
	s.decidedOrder = append(s.decidedOrder, key)
}

// afterTaken audits a write on a request already decided: the decision
// was taken once and nothing written there since changes it.
func (s *state) afterTaken(t taken, f fetched) {
	var bad *approvals.MalformedError
	var err error
	var rec approvals.Record
	switch {
	case errors.As(f.err, &bad):
		if bad.Revision <= t.rev {
			return
		}
		err = &approvals.RefusedError{Reason: approvals.ReasonMalformed, Detail: "a decided record was overwritten: " + bad.Err.Error()}
	case f.err != nil:
		return // deleted or unreadable: nothing to act on
	case f.rec.Revision <= t.rev:
		return // the record the decision was taken from
	default:
		rec = f.rec
		err = &approvals.RefusedError{Reason: approvals.ReasonUnsigned, Detail: "a decided record was rewritten (" + rec.Status + ")"}
		if rec.Decision != nil {
			err = &approvals.RefusedError{Reason: approvals.ReasonReplay, Detail: "the request was already decided; a decision written on it again is not taken"}
		}
	}
	signer := ""
	if rec.Decision != nil {
		signer = rec.Decision.Signer
	}
	s.auditRefused(&pending{req: t.req}, signer, err)
}

// refused logs a decision the run will not act on and puts the request
// back up for a genuine one: whoever wrote it cannot block approvers.
func (s *state) refused(ctx context.Context, p *pending, rec approvals.Record, err error) {
	signer := ""
	if rec.Decision != nil {
		signer = rec.Decision.Signer
	}
	s.auditRefused(p, signer, err)
	store, req, rev := s.r.cfg.Store, p.req, rec.Revision
	go func() {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = store.Reopen(rctx, req, rev)
	}()
}

// auditRefused logs and reports a write on p's record the run will not
// act on.
func (s *state) auditRefused(p *pending, signer string, err error) {
	reason := err.Error()
	s.audit(approvals.AuditEntry{Event: approvals.AuditRefused, RequestID: p.req.RequestID, Tool: p.req.Tool, ActionHash: p.req.ActionHash,
		ApproverKey: signer, Reason: reason, Refusal: refusalCode(err)})
	s.reportRefusal(approvals.AuditRefused, fmt.Sprintf("a decision on %s (%s) was refused: %s", p.req.RequestID, p.req.Tool, reason))
}

func (s *state) policy(data []byte) {
	cfg := s.r.cfg
	var env approvals.Envelope
	if err := json.Unmarshal(data, &env); err != nil || env.Signer == "" && env.Signature == "" {
		s.policyRefused("", &approvals.RefusedError{Reason: approvals.ReasonUnsigned, Detail: "policy changes must be signed by an approver allowed to change policy"})
		return
	}
	p, who, err := approvals.VerifyPolicy(env, cfg.Registry, approvals.PolicyExpect{RunID: cfg.RunID, Ceiling: cfg.Ceiling, After: s.policyIssued},
		cfg.Now(), s.policyNonces)
	if err != nil {
		s.policyRefused(env.Signer, err)
		return
	}
	s.policyIssued = p.IssuedAt
	s.audit(approvals.AuditEntry{Event: approvals.AuditPolicy, Policy: p.Policy, Approver: who.Name, ApproverKey: who.PublicKey})
	s.report(approvals.AuditPolicy, fmt.Sprintf("approval policy set to %q by %s", p.Policy, who.Name))
	s.r.cfg.Policy = p.Policy
	if cfg.SetPolicy != nil {
		cfg.SetPolicy(messages.PolicyChanged{Place: messages.Place{RunID: cfg.RunID}, Policy: p.Policy})
	}
}

func (s *state) policyRefused(signer string, err error) {
	s.audit(approvals.AuditEntry{Event: approvals.AuditPolicyRefused, ApproverKey: signer, Reason: err.Error(), Refusal: refusalCode(err)})
	s.reportRefusal(approvals.AuditPolicyRefused, "a policy change was refused: "+err.Error())
}

// refusalCode is the reason code of a refusal (the audit line's hint
// follows from it); anything else is malformed.
func refusalCode(err error) string {
	var r *approvals.RefusedError
	if errors.As(err, &r) {
		return r.Reason
	}
	return approvals.ReasonMalformed
}

func (s *state) decide(key string, approved bool, by, note string) {
	p := s.pending[key]
	if p == nil {
		return
	}
	p.timer.Stop()
	delete(s.pending, key)
	s.deliver(p.ask, approved, by, note)
}

func (s *state) decline(key, by, note string) { s.decide(key, false, by, note) }

func (s *state) deliver(m messages.ApprovalRequired, approved bool, by, note string) {
	s.r.cfg.Deliver(messages.ApprovalDecided{Place: m.Place, Trace: m.Trace, RequestID: m.RequestID, ToolCallID: m.ToolCallID, ToolName: m.ToolName,
		Approved: approved, DecidedBy: by, Note: note})
}

// closeAll withdraws every pending request, in parallel and within 2 s
// whatever their number.
func (s *state) closeAll(status, reason string) {
	var wg sync.WaitGroup
	for key, p := range s.pending {
		p.timer.Stop()
		delete(s.pending, key)
		s.deliver(p.ask, false, messages.DecidedByCancel, "The run ended before anyone decided.")
		if !s.lost {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.closeRecordSync(p.req, status, reason)
			}()
		}
	}
	wg.Wait()
	s.closing.Wait()
}

func (s *state) closeRecord(req approvals.Request, status, reason string) {
	s.closing.Add(1)
	go func() {
		defer s.closing.Done()
		s.closeRecordSync(req, status, reason)
	}()
}

func (s *state) closeRecordSync(req approvals.Request, status, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.r.cfg.Store.Withdraw(ctx, req, status, reason); err != nil {
		s.report(approvals.AuditCancelled, fmt.Sprintf("approval %s (%s) could not be closed on the bus, so approvers may still see it until it expires: %v", req.RequestID, req.Tool, err))
	}
}

func (s *state) audit(e approvals.AuditEntry) {
	e.RunID, e.Side = s.r.cfg.RunID, "run"
	if err := s.r.cfg.Audit.Append(e); err != nil {
		s.report("audit_failed", err.Error())
	}
}

// reportRefusal tells the user of one refused write or message, as the
// audit logs it (approvals.MaxRefusalsLogged one by one, then one at
// each power of two of the rest): anyone who may write the bucket can
// make the run refuse as fast as they can write, and each notice is a
// line on the run's terminal and an event in its stream.
func (s *state) reportRefusal(kind, msg string) {
	s.refusals++
	n := s.refusals - approvals.MaxRefusalsLogged
	switch {
	case n <= 0:
		s.report(kind, msg)
	case n&(n-1) == 0:
		s.report(kind, fmt.Sprintf("%d more refusals were not shown one by one (the audit log counts them); the latest: %s", n, msg))
	}
}

func (s *state) report(kind, msg string) {
	if s.r.cfg.Report != nil {
		s.r.cfg.Report(Notice{Kind: kind, Message: msg})
	}
}
