package approvals

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/messages"
)

// Kinds of signed payloads: the kind is inside what is signed, so a
// signature over a decision can never pass as a policy change.
const (
	KindDecision = "jazz.approval.decision/v1"
	KindPolicy   = "jazz.policy.change/v1"
)

// signDomain prefixes every signed byte string: jazz signatures cannot be
// replayed as nonce answers to a NATS server, nor the other way round.
const signDomain = "jazz-signed/v1\n"

// MaxNote bounds a decision's note; a longer one is refused, not cut.
const MaxNote = 4096

// DefaultValidity is how long a signed decision may take to arrive.
const DefaultValidity = 5 * time.Minute

// maxSkew is how far in the future an issued-at may be (clock drift).
const maxSkew = time.Minute

// Envelope is a signed payload: the exact bytes signed, who signed them,
// and the signature (base64url of the ed25519 signature).
type Envelope struct {
	Payload   json.RawMessage `json:"payload"`
	Signer    string          `json:"signer"`
	Signature string          `json:"sig"`
}

// Decision is what an approver signs: one verdict on one request of one
// run, bound to the action hash of what will run and to the hash of the
// whole request the approver was shown (ShownHash).
type Decision struct {
	Kind       string    `json:"kind"`
	RunID      string    `json:"runId"`
	RequestID  string    `json:"requestId"`
	ActionHash string    `json:"actionHash"`
	ShownHash  string    `json:"shownHash"`
	Approved   bool      `json:"approved"`
	Note       string    `json:"note,omitempty"`
	Nonce      string    `json:"nonce"`
	IssuedAt   time.Time `json:"issuedAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
	// SignerName is the name the approver goes by; the run shows the name
	// its own registry gives the key, never this one.
	SignerName string `json:"signerName,omitempty"`
}

// DecisionFor is the decision an approver signs on req as it read and
// showed it: for its run and request, bound to its action hash (first
// recomputed: a record whose hash does not match what it says will run
// is refused) and to its ShownHash.
func DecisionFor(req Request, approved bool, note string) (Decision, error) {
	hash, err := ActionHash(req.ExecuteTool, req.ExecuteArgs)
	if err != nil || hash != req.ActionHash {
		return Decision{}, fmt.Errorf("request %s is inconsistent: its action hash does not match the action it shows; not signing it", req.RequestID)
	}
	shown, err := ShownHash(req)
	if err != nil {
		return Decision{}, err
	}
	return Decision{RunID: req.RunID, RequestID: req.RequestID, ActionHash: hash, ShownHash: shown, Approved: approved, Note: note}, nil
}

// PolicyChange is a signed request to set a run's approval policy.
type PolicyChange struct {
	Kind       string    `json:"kind"`
	RunID      string    `json:"runId"`
	Policy     string    `json:"policy"`
	Nonce      string    `json:"nonce"`
	IssuedAt   time.Time `json:"issuedAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
	SignerName string    `json:"signerName,omitempty"`
}

// NewNonce is 128 random bits, hex.
func NewNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Sign marshals v and signs it with kp.
func Sign(kp nkeys.KeyPair, v any) (Envelope, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return Envelope{}, fmt.Errorf("sign: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return Envelope{}, fmt.Errorf("sign: %w", err)
	}
	sig, err := kp.Sign(append([]byte(signDomain), payload...))
	if err != nil {
		return Envelope{}, fmt.Errorf("sign: %w", err)
	}
	return Envelope{Payload: payload, Signer: pub, Signature: base64.RawURLEncoding.EncodeToString(sig)}, nil
}

// SignDecision fills in the kind, nonce and times, checks the note, and
// signs.
func SignDecision(kp nkeys.KeyPair, d Decision, now time.Time, validity time.Duration) (Envelope, error) {
	if err := checkText("note", d.Note, MaxNote); err != nil {
		return Envelope{}, err
	}
	if validity <= 0 {
		validity = DefaultValidity
	}
	d.Kind = KindDecision
	d.Nonce = NewNonce()
	d.IssuedAt = now.UTC().Truncate(time.Millisecond)
	d.ExpiresAt = d.IssuedAt.Add(validity)
	return Sign(kp, d)
}

// SignPolicy signs a policy change.
func SignPolicy(kp nkeys.KeyPair, p PolicyChange, now time.Time, validity time.Duration) (Envelope, error) {
	if validity <= 0 {
		validity = DefaultValidity
	}
	p.Kind = KindPolicy
	p.Nonce = NewNonce()
	p.IssuedAt = now.UTC().Truncate(time.Millisecond)
	p.ExpiresAt = p.IssuedAt.Add(validity)
	return Sign(kp, p)
}

// checkText bounds a signed free-text field (a decision's note, an
// answer's response) to max bytes of valid UTF-8; what names the field
// in the error.
func checkText(what, text string, max int) error {
	if len(text) > max {
		return fmt.Errorf("the %s is %d bytes; at most %d are allowed", what, len(text), max)
	}
	if !utf8.ValidString(text) {
		return fmt.Errorf("the %s is not valid UTF-8", what)
	}
	return nil
}

// Open checks the signature and decodes the payload into v strictly
// (unknown fields refused). It does not say whether the signer is trusted.
func (e Envelope) Open(v any) error {
	if !nkeys.IsValidPublicUserKey(e.Signer) {
		return &RefusedError{Reason: ReasonBadSignature, Detail: "the signer is not an nkey user public key"}
	}
	sig, err := base64.RawURLEncoding.DecodeString(e.Signature)
	if err != nil {
		return &RefusedError{Reason: ReasonBadSignature, Detail: "the signature is not base64url"}
	}
	pk, err := nkeys.FromPublicKey(e.Signer)
	if err != nil {
		return &RefusedError{Reason: ReasonBadSignature, Detail: err.Error()}
	}
	if err := pk.Verify(append([]byte(signDomain), e.Payload...), sig); err != nil {
		return &RefusedError{Reason: ReasonBadSignature, Detail: "the signature does not verify"}
	}
	dec := json.NewDecoder(bytes.NewReader(e.Payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &RefusedError{Reason: ReasonMalformed, Detail: err.Error()}
	}
	return nil
}

// Reasons a signed message is refused.
const (
	ReasonMalformed     = "malformed"
	ReasonBadSignature  = "bad_signature"
	ReasonUnknownSigner = "unknown_signer"
	// ReasonRevoked is a signer the run admitted when it started and
	// approvers.json no longer lists (`jazz bus remove-approver`).
	ReasonRevoked        = "revoked"
	ReasonTier           = "tier"
	ReasonNotAllowed     = "not_allowed"
	ReasonActionMismatch = "action_mismatch"
	ReasonShownMismatch  = "shown_mismatch"
	ReasonOtherRun       = "other_run"
	ReasonOtherRequest   = "other_request"
	ReasonExpired        = "expired"
	ReasonReplay         = "replay"
	// ReasonStale is a signed change issued before the one the run
	// applied last.
	ReasonStale    = "stale"
	ReasonCeiling  = "above_ceiling"
	ReasonUnsigned = "unsigned"
	ReasonNote     = "note"
)

// RefusedError is a signed message the run will not act on, and why.
type RefusedError struct {
	Reason string
	Detail string
}

func (e *RefusedError) Error() string { return "refused (" + e.Reason + "): " + e.Detail }

func refuse(reason, format string, args ...any) error {
	return &RefusedError{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Expect is what the run holds for one pending request: ShownHash is the
// ShownHash of the request as the run itself wrote it.
type Expect struct {
	RunID      string
	RequestID  string
	ActionHash string
	ShownHash  string
	RiskTier   string
}

// NonceSet remembers the nonces a run has accepted; it is owned by one
// goroutine (the run's approval actor), so it needs no lock.
type NonceSet map[string]struct{}

// VerifyDecision accepts e only if the signature verifies, the signer is
// an approver whose tier covers the request, and the decision is for this
// run, this request, this action hash and this request as shown,
// unexpired and not seen before.
// On success the nonce is recorded.
func VerifyDecision(e Envelope, reg *Registry, exp Expect, now time.Time, seen NonceSet) (Decision, Approver, error) {
	var d Decision
	a, err := opened(e, reg, &d, KindDecision, func() string { return d.Kind })
	if err != nil {
		return d, a, err
	}
	if d.RunID != exp.RunID {
		return d, a, refuse(ReasonOtherRun, "the decision is for run %q, not %q", d.RunID, exp.RunID)
	}
	if d.RequestID != exp.RequestID {
		return d, a, refuse(ReasonOtherRequest, "the decision is for request %q, not %q", d.RequestID, exp.RequestID)
	}
	if d.ActionHash != exp.ActionHash {
		return d, a, refuse(ReasonActionMismatch, "the decision approves action %s, but the pending action is %s", d.ActionHash, exp.ActionHash)
	}
	if d.ShownHash == "" || d.ShownHash != exp.ShownHash {
		return d, a, refuse(ReasonShownMismatch, "the approver was shown a request that is not the one this run wrote (its message, diff, tool, tier, agent or directory differ: shown %s, written %s)", d.ShownHash, exp.ShownHash)
	}
	if d.Approved && !TierCovers(a.MaxTier, exp.RiskTier) {
		return d, a, refuse(ReasonTier, "approver %s may approve up to %s, and this call is %s", a.Name, a.MaxTier, exp.RiskTier)
	}
	if err := checkTimes(d.IssuedAt, d.ExpiresAt, now); err != nil {
		return d, a, err
	}
	if err := checkText("note", d.Note, MaxNote); err != nil {
		return d, a, refuse(ReasonNote, "%v", err)
	}
	return d, a, seen.use(d.Nonce)
}

// opened verifies e, decodes it into v, checks the payload's kind (got
// reads it from v) and finds the signer among the approvers.
func opened(e Envelope, reg *Registry, v any, kind string, got func() string) (Approver, error) {
	if err := e.Open(v); err != nil {
		return Approver{}, err
	}
	if k := got(); k != kind {
		return Approver{}, refuse(ReasonMalformed, "payload kind %q is not %s", k, kind)
	}
	a, ok := reg.Lookup(e.Signer)
	if !ok {
		// A key the run started with and approvers.json no longer lists
		// is a revoked one still in use: said apart from a key nobody
		// ever admitted, so the audit log tells a leak from a stranger.
		if old, was := reg.Removed(e.Signer); was {
			return Approver{}, refuse(ReasonRevoked, "signer %s (%s) was an approver when this run started and is no longer in %s: the key was revoked", old.Name, e.Signer, ApproversPath(reg.home))
		}
		return Approver{}, refuse(ReasonUnknownSigner, "signer %s is not an allowed approver", e.Signer)
	}
	return a, nil
}

// use records a nonce, refusing one already used (a replay).
func (seen NonceSet) use(nonce string) error {
	if _, dup := seen[nonce]; dup || nonce == "" {
		return refuse(ReasonReplay, "nonce %q was already used", nonce)
	}
	seen[nonce] = struct{}{}
	return nil
}

func checkTimes(issued, expires, now time.Time) error {
	if expires.IsZero() || !now.Before(expires) {
		return refuse(ReasonExpired, "it expired at %s", expires.UTC().Format(time.RFC3339))
	}
	if issued.After(now.Add(maxSkew)) {
		return refuse(ReasonExpired, "it was issued in the future (%s)", issued.UTC().Format(time.RFC3339))
	}
	if expires.Sub(issued) > time.Hour {
		return refuse(ReasonExpired, "its validity (%s) is longer than an hour", expires.Sub(issued))
	}
	return nil
}

// PolicyExpect is what a run holds against a policy change: its run,
// its ceiling (--max-remote-policy), and when the change it applied last
// was issued (zero before any).
type PolicyExpect struct {
	RunID   string
	Ceiling string
	After   time.Time
}

// VerifyPolicy accepts a policy change signed by an approver allowed to
// change policy, for this run, unexpired, at most the ceiling and at
// most the approver's own tier, never seen before and issued after the
// change the run applied last. A signed change is spent once it is
// seen for this run, taken or not: it never counts a second time. A
// change older than the applied one would set a state a later one
// replaced (a change the run never heard, replayed after a newer one).
func VerifyPolicy(e Envelope, reg *Registry, exp PolicyExpect, now time.Time, seen NonceSet) (PolicyChange, Approver, error) {
	var p PolicyChange
	a, err := opened(e, reg, &p, KindPolicy, func() string { return p.Kind })
	if err != nil {
		return p, a, err
	}
	runID, ceiling := exp.RunID, exp.Ceiling
	if p.RunID != runID {
		return p, a, refuse(ReasonOtherRun, "the change is for run %q, not %q", p.RunID, runID)
	}
	if err := seen.use(p.Nonce); err != nil {
		return p, a, err
	}
	if !exp.After.IsZero() && !p.IssuedAt.After(exp.After) {
		return p, a, refuse(ReasonStale, "it was issued at %s, not after the change this run applied last (issued %s)",
			p.IssuedAt.UTC().Format(time.RFC3339Nano), exp.After.UTC().Format(time.RFC3339Nano))
	}
	if !a.Policy {
		return p, a, refuse(ReasonNotAllowed, "approver %s may not change policy", a.Name)
	}
	if p.Policy != "" && tierRank(p.Policy) == 0 || p.Policy == "unknown" {
		return p, a, refuse(ReasonMalformed, "policy %q: expected read-only, low-risk or high-risk", p.Policy)
	}
	// Unset is no "nothing automatic" at the gate: a run that takes
	// signed changes has people to answer it (its approvers), and there
	// an unset policy is the default, which approves every low-risk call
	// unasked (tools-and-approval.md §4). So setting it is setting
	// low-risk, held to the ceiling and the signer's tier as such; under
	// an unset ceiling (the run started unset) it changes nothing.
	acts, name := p.Policy, p.Policy
	if acts == "" {
		acts, name = UnsetActsAs, "unset (which approves low-risk calls unasked where a person can answer)"
	}
	if !PolicyAtMost(acts, ceiling) && !(p.Policy == "" && ceiling == "") {
		return p, a, refuse(ReasonCeiling, "policy %s is above this run's ceiling (%s)", name, ceilingName(ceiling))
	}
	// A policy approves every call of its tier and below unasked: setting
	// one is approving them all, so no higher than the signer may approve
	// one by one (its tier as approvers.json says now: Lookup narrows it).
	if !PolicyAtMost(acts, a.MaxTier) {
		return p, a, refuse(ReasonTier, "approver %s may approve up to %s, so may not set policy %s (it would approve every %s call unasked)", a.Name, a.MaxTier, name, acts)
	}
	if err := checkTimes(p.IssuedAt, p.ExpiresAt, now); err != nil {
		return p, a, err
	}
	return p, a, nil
}

// UnsetActsAs is what the empty (unset) policy approves at the gate of a
// run a person can answer, as every run that takes signed changes is.
const UnsetActsAs = messages.PolicyLowRisk

// PolicyAtMost reports whether policy p auto-approves no more than ceiling
// does, with the empty policy taken as nothing automatic (below
// everything): what it means where nobody can answer. Where a person
// can, it approves as UnsetActsAs does.
func PolicyAtMost(p, ceiling string) bool {
	if p == "" {
		return true
	}
	return tierRank(p) <= tierRank(ceiling) && tierRank(ceiling) > 0
}

func ceilingName(c string) string {
	if c == "" {
		return "no automatic approval"
	}
	return c
}
