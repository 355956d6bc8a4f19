package approvals

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
)

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
	// Side says who wrote the line: the run, or an approver's CLI.
	Side string `json:"side"`
}

// Audit appends entries to JAZZ_HOME/audit.jsonl and publishes them on
// jazz.audit.<run> (captured by the append-only audit stream). Either
// sink may be absent; a failed write is returned, never hidden.
type Audit struct {
	mu   sync.Mutex
	path string
	bus  *bus.Bus
}

// NewAudit writes under home (empty: no file) and to b (nil: no stream).
func NewAudit(home string, b *bus.Bus) *Audit {
	a := &Audit{bus: b}
	if home != "" {
		a.path = filepath.Join(home, AuditFile)
	}
	return a
}

// Append records e.
func (a *Audit) Append(e AuditEntry) error {
	if a == nil {
		return nil
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	var errs []error
	if a.bus != nil {
		// An entry carries no trace of its own: the stream is the record,
		// and bus.Publish's encoding is the line written to the file.
		if err := a.bus.Publish(AuditSubject+"."+messages.SubjectToken(e.RunID), e, nil); err != nil {
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
