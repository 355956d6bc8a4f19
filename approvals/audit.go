package approvals

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/messages"
)

// AuditFile is the local append-only trail under JAZZ_HOME.
const AuditFile = "audit.jsonl"

// Audit events.
const (
	AuditRequested     = "requested"
	AuditDecided       = "decided"
	AuditRefused       = "refused"
	AuditExpired       = "expired"
	AuditCancelled     = "cancelled"
	AuditPolicy        = "policy_changed"
	AuditPolicyRefused = "policy_refused"
	// AuditAnswered and AuditAnswerRefused are signed answers to a run's
	// questions (ask_user_question) taken or refused.
	AuditAnswered      = "answered"
	AuditAnswerRefused = "answer_refused"
	// AuditSuppressed stands for refusals past MaxRefusalsLogged.
	AuditSuppressed = "refusals_suppressed"
)

// MaxRefusalsLogged is how many refusals (of decisions, policy changes
// and answers) one Audit, one run's, writes one by one. Anyone who may
// publish on the bus can make a run refuse messages as fast as they can
// send them; past this the log gets one AuditSuppressed line each time
// the count of the rest reaches a power of two, so a flood of n costs
// about log2(n) lines and the operator still sees how big it was.
const MaxRefusalsLogged = 100

// maxRefusalText bounds the sender-controlled text of a refusal line
// (its reason quotes what was claimed); maxClaimedKey a claimed signer,
// which a genuine nkey public key (56 characters) fits.
const (
	maxRefusalText = 1024
	maxClaimedKey  = 64
)

// refusal reports whether event records a message the run refused.
func refusal(event string) bool {
	return event == AuditRefused || event == AuditPolicyRefused || event == AuditAnswerRefused
}

// RefusalHint says, for an operator reading the audit log, what a
// refusal for reason most likely is: a person's slip, or someone
// attacking the run.
func RefusalHint(reason string) string {
	switch reason {
	case ReasonMalformed:
		return "not something a jazz client writes (bad JSON, another kind, oversized or not UTF-8): a broken or hand-made client, or probing"
	case ReasonBadSignature:
		return "the signature does not verify over these bytes: a forged or altered message"
	case ReasonUnknownSigner:
		return "signed by a key this run never admitted: an approver of another JAZZ_HOME, one added after the run started, or a forger's own key"
	case ReasonRevoked:
		return "signed by an approver's key removed since the run started: if it was revoked because it leaked, someone is using it"
	case ReasonTier:
		return "an approver approving (or setting a policy) above their --max-tier: usually a slip; a higher-tier approver must decide"
	case ReasonNotAllowed:
		return "an approver without the --policy right changing policy: usually a slip"
	case ReasonActionMismatch:
		return "approves another action than the pending one: a rewritten record, or a decision moved between requests"
	case ReasonShownMismatch:
		return "the signer read another request or question than the one this run wrote: a tampered record, or a client showing something stale"
	case ReasonOtherRun:
		return "signed for another run: a slip, or a replay of a message taken elsewhere"
	case ReasonOtherRequest:
		return "signed for another request or question of the run: a slip (the wrong id), or a replay"
	case ReasonExpired:
		return "arrived after its expiry, or the signer's clock is off: usually a slow answer"
	case ReasonReplay:
		return "a message this run already took, sent again: a replay (the original was acted on once)"
	case ReasonStale:
		return "a policy change older than the one the run applied last: a replay of a change the run never heard, or a signer's clock behind the others'"
	case ReasonCeiling:
		return "a policy above the run's --max-remote-policy: a slip, or an attempt to widen what runs unasked"
	case ReasonUnsigned:
		return "not signed at all: no jazz client sends that; someone with bus access published it by hand"
	case ReasonNote:
		return "a note too long or not UTF-8: a broken or hand-made client"
	}
	return "a refusal of an unknown kind"
}

// AuditEntry is one line of the trail.
type AuditEntry struct {
	Time        time.Time `json:"time"`
	Event       string    `json:"event"`
	RunID       string    `json:"runId"`
	RequestID   string    `json:"requestId,omitempty"`
	Tool        string    `json:"tool,omitempty"`
	ActionHash  string    `json:"actionHash,omitempty"`
	Approved    *bool     `json:"approved,omitempty"`
	Approver    string    `json:"approver,omitempty"`
	ApproverKey string    `json:"approverKey,omitempty"`
	Note        string    `json:"note,omitempty"`
	Policy      string    `json:"policy,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	// Refusal is the reason code of a refused message (Reason* const)
	// and Hint what it most likely is; ApproverKey then is the key the
	// message claimed, Approver the name this run admits it by, if any.
	Refusal string `json:"refusal,omitempty"`
	Hint    string `json:"hint,omitempty"`
	// Side says who wrote the line: the run, or an approver's CLI.
	Side string `json:"side"`
}

// Audit appends entries to JAZZ_HOME/audit.jsonl and publishes them on
// jazz.audit.<writer>.<run> (captured by the append-only audit stream),
// writer being the nkey public key the bus connection proves itself
// with. Either sink may be absent; a failed write is returned, never
// hidden.
type Audit struct {
	mu   sync.Mutex
	path string
	bus  *bus.Bus
	// writer is the bus connection's nkey identity (nil when it has
	// none: its lines go, unsigned, on the unattributed jazz.audit.<run>).
	writer *bus.NkeyUser
	// refusals counts the refusal entries appended (under mu).
	refusals int
}

// NewAudit writes under home (empty: no file) and to b (nil: no stream).
func NewAudit(home string, b *bus.Bus) *Audit {
	a := &Audit{bus: b, writer: b.User()}
	if home != "" {
		a.path = filepath.Join(home, AuditFile)
	}
	return a
}

// Append records e. A refusal's sender-controlled text is cut to a
// bound, and past MaxRefusalsLogged refusals only AuditSuppressed lines
// are written (see there).
func (a *Audit) Append(e AuditEntry) error {
	if a == nil {
		return nil
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	if refusal(e.Event) {
		e.Reason, e.ApproverKey = cut(e.Reason, maxRefusalText), cut(e.ApproverKey, maxClaimedKey)
		if e.Hint == "" && e.Refusal != "" {
			e.Hint = RefusalHint(e.Refusal)
		}
		a.mu.Lock()
		a.refusals++
		n := a.refusals - MaxRefusalsLogged
		a.mu.Unlock()
		if n > 0 {
			if n&(n-1) != 0 {
				return nil
			}
			e = AuditEntry{Time: e.Time, Event: AuditSuppressed, RunID: e.RunID, Side: e.Side, Refusal: e.Refusal, ApproverKey: e.ApproverKey,
				Note: fmt.Sprintf("%d more refusals after the first %d were not logged one by one (a line at 1, 2, 4, 8… more); the latest: %s", n, MaxRefusalsLogged, e.Reason)}
		}
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	var errs []error
	if a.bus != nil {
		// An entry carries no trace of its own: the stream is the record,
		// and bus.Publish's encoding is the line written to the file.
		subject, seal := AuditSubject+"."+messages.SubjectToken(e.RunID), bus.Seal(nil)
		if a.writer != nil {
			subject, seal = AuditSubjectFor(a.writer.Public, e.RunID), auditSeal(a.writer.Sign)
		}
		if err := a.bus.PublishSealed(subject, e, nil, seal); err != nil {
			errs = append(errs, fmt.Errorf("publish audit entry: %w", err))
		}
	}
	if a.path != "" {
		a.mu.Lock()
		err := appendLine(a.path, line)
		a.mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// cut shortens s to at most max bytes, on a character boundary, marking
// the cut.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max-len("…")], "") + "…"
}

func appendLine(path string, line []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("audit %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("audit %s: %w", path, err)
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("audit %s: %w", path, err)
	}
	return nil
}
