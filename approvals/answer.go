package approvals

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/messages"
)

// KindAnswer is the kind of a signed answer to a run's question.
const KindAnswer = "jazz.input.answer/v1"

// MaxAnswer bounds a signed answer's response; a longer one is refused.
const MaxAnswer = 64 << 10

// Answer is what a person elsewhere signs to answer one question of one
// run: bound to the run, the question's id and the hash of the question
// as it was asked (QuestionHash), so it can answer nothing else.
type Answer struct {
	Kind         string    `json:"kind"`
	RunID        string    `json:"runId"`
	RequestID    string    `json:"requestId"`
	QuestionHash string    `json:"questionHash"`
	Response     string    `json:"response"`
	Nonce        string    `json:"nonce"`
	IssuedAt     time.Time `json:"issuedAt"`
	ExpiresAt    time.Time `json:"expiresAt"`
	SignerName   string    `json:"signerName,omitempty"`
}

// QuestionHash is the hash of a question as asked: its run, id, text,
// suggestions, the agent asking and its task. The run hashes the question
// it published; the person signs the hash of the one they read.
func QuestionHash(runID string, q messages.UserInputRequired) (string, error) {
	q.Place.RunID = runID
	q.Trace = nil // routing, not something a person reads
	if q.Suggestions == nil {
		q.Suggestions = []messages.Suggestion{}
	}
	raw, err := json.Marshal(q)
	if err != nil {
		return "", fmt.Errorf("question hash: %w", err)
	}
	canon, err := Canonical(raw)
	if err != nil {
		return "", fmt.Errorf("question hash of %s: %w", q.RequestID, err)
	}
	sum := sha256.Sum256(append([]byte("jazz.input.question/v1\n"), canon...))
	return HashPrefix + hex.EncodeToString(sum[:]), nil
}

// SignAnswer signs response to q (as the signer read it) for runID.
func SignAnswer(kp nkeys.KeyPair, runID string, q messages.UserInputRequired, response string, now time.Time, validity time.Duration) (Envelope, error) {
	if err := checkText("answer", response, MaxAnswer); err != nil {
		return Envelope{}, err
	}
	hash, err := QuestionHash(runID, q)
	if err != nil {
		return Envelope{}, err
	}
	if validity <= 0 {
		validity = DefaultValidity
	}
	issued := now.UTC().Truncate(time.Millisecond)
	return Sign(kp, Answer{Kind: KindAnswer, RunID: runID, RequestID: q.RequestID, QuestionHash: hash, Response: response,
		Nonce: NewNonce(), IssuedAt: issued, ExpiresAt: issued.Add(validity)})
}

// VerifyAnswer accepts e only if its signature verifies, its signer is an
// approver in reg, and it answers exactly q (as this run asked it) of
// runID, unexpired and not seen before; the answer is then the signed
// response, never anything outside the signature. On success the nonce
// is recorded.
func VerifyAnswer(e Envelope, reg *Registry, runID string, q messages.UserInputRequired, now time.Time, seen NonceSet) (Answer, Approver, error) {
	var a Answer
	who, err := opened(e, reg, &a, KindAnswer, func() string { return a.Kind })
	if err != nil {
		return a, who, err
	}
	if a.RunID != runID {
		return a, who, refuse(ReasonOtherRun, "the answer is for run %q, not %q", a.RunID, runID)
	}
	if a.RequestID != q.RequestID {
		return a, who, refuse(ReasonOtherRequest, "the answer is for question %q, not %q", a.RequestID, q.RequestID)
	}
	want, err := QuestionHash(runID, q)
	if err != nil {
		return a, who, refuse(ReasonMalformed, "%v", err)
	}
	if a.QuestionHash != want {
		return a, who, refuse(ReasonShownMismatch, "the answer is to a question that is not the one this run asked (shown %s, asked %s)", a.QuestionHash, want)
	}
	if err := checkTimes(a.IssuedAt, a.ExpiresAt, now); err != nil {
		return a, who, err
	}
	if err := checkText("answer", a.Response, MaxAnswer); err != nil {
		return a, who, refuse(ReasonMalformed, "%v", err)
	}
	return a, who, seen.use(a.Nonce)
}

// MaxAnswerEnvelope bounds the bytes of one signed answer on the bus.
const MaxAnswerEnvelope = 2*MaxAnswer + 4096

// AnswerChecker verifies the signed answers a run receives for its
// questions: one per run, safe for concurrent questions, remembering
// every nonce it accepted (single use across all of them). With an
// audit (WithAudit) it logs each answer taken and each one refused.
// Each question is open from Ask (or its first Check) until the done
// Ask returned, and takes at most one answer while open.
type AnswerChecker struct {
	reg    *Registry
	runID  string
	now    func() time.Time
	audit  *Audit
	failed func(error)
	mu     sync.Mutex
	seen   NonceSet
	// asked are the questions checked against: an answer signed for one
	// still open is that question's to log.
	asked map[string]questionState
	// fanout holds, for each answer taken (by nonce), the questions that
	// were open when it was: each of their subscriptions receives that
	// one message too, which is no refusal of theirs. Any other sighting
	// of a taken answer is a replay.
	fanout map[string]fan
	// early are the questions that saw an answer (by nonce) before its
	// own question took it: their copy of that delivery is already used.
	early map[string]fan
	// logged are the refused messages already logged: each open question
	// checks every message, and one refusal is one line.
	logged map[[sha256.Size]byte]struct{}
}

type questionState uint8

const (
	questionOpen questionState = iota + 1
	questionAnswered
	// questionClosed: the run stopped waiting (answered at hand, or the
	// wait ended) with no answer from the bus.
	questionClosed
)

type fan struct {
	at   time.Time
	left map[string]bool
}

// fanoutWindow bounds how long after an answer is taken another open
// question may still see the same delivery without it being a replay.
const fanoutWindow = 5 * time.Second

// pruneFans drops the entries older than fanoutWindow.
func pruneFans(m map[string]fan, now time.Time) {
	for n, f := range m {
		if now.Sub(f.at) > fanoutWindow {
			delete(m, n)
		}
	}
}

// maxLoggedSeen bounds AnswerChecker.logged; when full it starts over
// (a message logged twice then is the worst of it).
const maxLoggedSeen = 4 * MaxRefusalsLogged

// NewAnswerChecker accepts answers signed by reg's approvers for runID;
// now is the clock (nil: time.Now).
func NewAnswerChecker(reg *Registry, runID string, now func() time.Time) *AnswerChecker {
	if now == nil {
		now = time.Now
	}
	return &AnswerChecker{reg: reg, runID: runID, now: now, seen: NonceSet{}, asked: map[string]questionState{},
		fanout: map[string]fan{}, early: map[string]fan{}, logged: map[[sha256.Size]byte]struct{}{}}
}

// Ask opens q before anything is checked against it (call it before
// subscribing for its answers); done closes it when the run stops
// waiting, answered or not. Once closed a question takes no answer, and
// what is signed for it is logged by the questions still open.
func (c *AnswerChecker) Ask(q messages.UserInputRequired) (done func()) {
	if c == nil {
		return func() {}
	}
	c.mu.Lock()
	if _, ok := c.asked[q.RequestID]; !ok {
		c.asked[q.RequestID] = questionOpen
	}
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			if c.asked[q.RequestID] == questionOpen {
				c.asked[q.RequestID] = questionClosed
			}
			c.mu.Unlock()
		})
	}
}

// WithAudit logs every answer c takes or refuses to a (the run's audit,
// shared with its decisions so its refusals are bounded together);
// failed hears a line that could not be written (nil: ignored).
func (c *AnswerChecker) WithAudit(a *Audit, failed func(error)) *AnswerChecker {
	c.audit, c.failed = a, failed
	return c
}

// Check decodes raw (an Envelope, strictly, at most MaxAnswerEnvelope
// bytes) and verifies it answers q; the response is the signed one.
func (c *AnswerChecker) Check(raw []byte, q messages.UserInputRequired) (Answer, Approver, error) {
	if c == nil {
		return Answer{}, Approver{}, refuse(ReasonUnknownSigner, "this run admits no approvers, so no answer from the bus is taken")
	}
	env, a, who, err := c.check(raw, q)
	c.record(raw, q, env, a, who, err)
	return a, who, err
}

func (c *AnswerChecker) check(raw []byte, q messages.UserInputRequired) (Envelope, Answer, Approver, error) {
	var env Envelope
	c.mu.Lock()
	if _, ok := c.asked[q.RequestID]; !ok {
		c.asked[q.RequestID] = questionOpen
	}
	c.mu.Unlock()
	if c.reg == nil || c.reg.Len() == 0 {
		return env, Answer{}, Approver{}, refuse(ReasonUnknownSigner, "this run admits no approvers, so no answer from the bus is taken")
	}
	if len(raw) > MaxAnswerEnvelope {
		return env, Answer{}, Approver{}, refuse(ReasonMalformed, "the answer is %d bytes; at most %d are allowed", len(raw), MaxAnswerEnvelope)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil || env.Signer == "" && env.Signature == "" {
		return env, Answer{}, Approver{}, refuse(ReasonUnsigned, "answers from the bus must be signed by an approver (jazz approvals answer)")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	a, who, err := VerifyAnswer(env, c.reg, c.runID, q, now, c.seen)
	if err != nil {
		return env, a, who, err
	}
	// Exactly once: a question answered, or no longer waited for, takes
	// no (other) answer.
	switch c.asked[q.RequestID] {
	case questionAnswered:
		return env, a, who, refuse(ReasonReplay, "question %q was already answered", q.RequestID)
	case questionClosed:
		return env, a, who, refuse(ReasonExpired, "question %q is no longer asked: the run stopped waiting for it", q.RequestID)
	}
	c.asked[q.RequestID] = questionAnswered
	pruneFans(c.fanout, now)
	f := fan{at: now, left: map[string]bool{}}
	for id, st := range c.asked {
		if st == questionOpen && !c.early[a.Nonce].left[id] {
			f.left[id] = true
		}
	}
	delete(c.early, a.Nonce)
	c.fanout[a.Nonce] = f
	return env, a, who, nil
}

// record logs the outcome of one check. An answer signed for another
// question of this run that is still open is not a refusal of the run:
// the check against its own question logs it. Nor is an answer taken,
// seen once by each question open when it was taken. Seen again, or by
// a question asked since, it is logged as the replay it is.
func (c *AnswerChecker) record(raw []byte, q messages.UserInputRequired, env Envelope, a Answer, who Approver, err error) {
	if c.audit == nil {
		return
	}
	e := AuditEntry{RunID: c.runID, RequestID: q.RequestID, Side: "run", Approver: who.Name, ApproverKey: env.Signer}
	if err == nil {
		e.Event = AuditAnswered
		c.write(e)
		return
	}
	var r *RefusedError
	reason := ReasonMalformed
	if errors.As(err, &r) {
		reason = r.Reason
	}
	sum := sha256.Sum256(raw)
	c.mu.Lock()
	_, dup := c.logged[sum]
	skip := dup
	if reason == ReasonOtherRequest && !skip {
		_, taken := c.seen[a.Nonce]
		f, fresh := c.fanout[a.Nonce]
		switch {
		case taken && a.Nonce != "" && fresh && f.left[q.RequestID] && c.now().Sub(f.at) <= fanoutWindow:
			// This question's own copy of the delivery that was taken.
			delete(f.left, q.RequestID)
			skip = true
		case taken && a.Nonce != "":
			reason = ReasonReplay
			err = refuse(ReasonReplay, "the answer to question %q was already taken; this is it again", a.RequestID)
		case c.asked[a.RequestID] == questionOpen:
			// Its own question's to take or log; this question's copy
			// of the delivery is spent.
			skip = true
			if a.Nonce != "" {
				now := c.now()
				pruneFans(c.early, now)
				e, ok := c.early[a.Nonce]
				if !ok {
					e = fan{at: now, left: map[string]bool{}}
					c.early[a.Nonce] = e
				}
				e.left[q.RequestID] = true
			}
		}
	}
	if !skip {
		if len(c.logged) >= maxLoggedSeen {
			clear(c.logged)
		}
		c.logged[sum] = struct{}{}
	}
	c.mu.Unlock()
	if skip {
		return
	}
	e.Event, e.Refusal, e.Reason, e.Hint = AuditAnswerRefused, reason, err.Error(), RefusalHint(reason)
	c.write(e)
}

func (c *AnswerChecker) write(e AuditEntry) {
	if err := c.audit.Append(e); err != nil && c.failed != nil {
		c.failed(err)
	}
}
