package approvals

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/messages"
)

// AuditSubjectFor is where the identity whose nkey public key is writer
// appends its audit lines about runID, each signed with that key
// (AuditSigHeader). `jazz bus serve` lets each identity publish under
// its own key only (busserver.Permissions); the signature holds where a
// server is less strict.
func AuditSubjectFor(writer, runID string) string {
	return AuditSubject + "." + messages.SubjectToken(writer) + "." + messages.SubjectToken(runID)
}

// AuditWriterSubjects are the subjects writer may append audit lines on
// (those of every run).
func AuditWriterSubjects(writer string) string {
	return AuditSubject + "." + messages.SubjectToken(writer) + ".*"
}

// AuditSigHeader carries the writer's signature of an audit line: over
// its subject (which names the writer and the run) and its bytes, so
// the line cannot be moved to another writer's or run's subject, nor
// written by anyone but the key's holder. The server's permissions keep
// others off a writer's subject, but not the server itself: a consumer
// delivers a stream's messages (a value anyone wrote into a bucket) to
// any subject its creator names, and the audit stream stores what
// arrives there.
const AuditSigHeader = "Jazz-Audit-Sig"

// auditSignDomain prefixes what an audit signature covers, so it is
// never a signature over a decision, a policy change or a server nonce.
const auditSignDomain = "jazz-audit/v1\n"

func auditSigned(subject string, data []byte) []byte {
	return append([]byte(auditSignDomain+subject+"\n"), data...)
}

// auditSeal signs each audit line with sign (the writer's nkey).
func auditSeal(sign func([]byte) ([]byte, error)) bus.Seal {
	return func(subject string, data []byte) (string, string) {
		sig, err := sign(auditSigned(subject, data))
		if err != nil {
			return AuditSigHeader, ""
		}
		return AuditSigHeader, base64.RawURLEncoding.EncodeToString(sig)
	}
}

// Roles of audit writers.
const (
	AuditByRunner   = "runner"
	AuditByApprover = "approver"
)

// AuditWriter is an identity whose audit lines a reader attributes: a
// runner key (Side "run" lines) or an approver (Side "approver" lines,
// about its own decisions only).
type AuditWriter struct {
	Key, Name, Role string
}

// AuditWriters are reg's approvers and the runner keys given.
func AuditWriters(reg *Registry, runnerKeys ...string) []AuditWriter {
	var out []AuditWriter
	for _, k := range runnerKeys {
		out = append(out, AuditWriter{Key: k, Name: AuditByRunner, Role: AuditByRunner})
	}
	if reg != nil {
		for _, a := range reg.List() {
			out = append(out, AuditWriter{Key: a.PublicKey, Name: a.Name, Role: AuditByApprover})
		}
	}
	return out
}

// AuditRecord is one line of the audit stream as a reader found it:
// Verified when its subject names an identity of writers that signed it
// there, may write what it says, and it was not read before; otherwise
// Unverified says why not. An unverified line may be anyone's forgery.
type AuditRecord struct {
	AuditEntry
	Subject    string `json:"subject"`
	Writer     string `json:"writer,omitempty"`
	WriterName string `json:"writerName,omitempty"`
	Verified   bool   `json:"verified"`
	Unverified string `json:"unverified,omitempty"`
}

// CheckAuditLine attributes one message of the audit stream (its
// subject, data and AuditSigHeader's value) to its writer, for runID.
func CheckAuditLine(subject string, data []byte, sig string, runID string, writers []AuditWriter) AuditRecord {
	rec := AuditRecord{Subject: subject}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec.AuditEntry); err != nil {
		rec.Unverified = "not an audit line: " + err.Error()
		return rec
	}
	tokens := strings.Split(subject, ".")
	if len(tokens) != 4 || tokens[0]+"."+tokens[1] != AuditSubject {
		rec.Unverified = "written on " + subject + ", which any identity allowed to write the audit could use: nothing says who wrote it"
		return rec
	}
	key := tokens[2]
	rec.Writer = key
	if tokens[3] != messages.SubjectToken(runID) || messages.SubjectToken(rec.RunID) != tokens[3] {
		rec.Unverified = fmt.Sprintf("it is about run %q, on another run's subject (%s)", rec.RunID, subject)
		return rec
	}
	if !nkeys.IsValidPublicUserKey(key) {
		rec.Unverified = "its writer " + key + " is not an nkey user key"
		return rec
	}
	if !auditSigOK(key, subject, data, sig) {
		rec.Unverified = "not signed by " + key + ", whose subject it is on: anyone's forgery (the server delivers a consumer's messages to any subject its creator names)"
		return rec
	}
	var w AuditWriter
	for _, c := range writers {
		if c.Key == key {
			w = c
			break
		}
	}
	rec.WriterName = w.Name
	switch {
	case w.Key == "":
		rec.Unverified = "written by " + key + ", neither a runner nor an approver this reader knows"
	case rec.Side == "run" && w.Role != AuditByRunner:
		rec.Unverified = fmt.Sprintf("a run's line written by %s %s, not by a runner", w.Role, w.Name)
	case rec.Side == "approver" && w.Role != AuditByApprover:
		rec.Unverified = "an approver's line written by a runner"
	case rec.Side == "approver" && rec.ApproverKey != key:
		rec.Unverified = fmt.Sprintf("approver %s wrote a line that says approver %s decided", w.Name, rec.ApproverKey)
	case rec.Side != "run" && rec.Side != "approver":
		rec.Unverified = fmt.Sprintf("written by %s %s for an unknown side %q", w.Role, w.Name, rec.Side)
	default:
		rec.Verified = true
	}
	return rec
}

// ReadAudit reads every line the audit stream holds about runID, in the
// order the server took them, each attributed by CheckAuditLine.
func ReadAudit(ctx context.Context, b *bus.Bus, runID string, writers []AuditWriter) ([]AuditRecord, error) {
	js, err := b.JetStream(ctx)
	if err != nil {
		return nil, err
	}
	run := messages.SubjectToken(runID)
	msgs, err := js.ReadAll(ctx, AuditStream, []string{AuditSubject + ".*." + run, AuditSubject + "." + run})
	if err != nil {
		return nil, fmt.Errorf("read the audit of %s: %w", runID, err)
	}
	out := make([]AuditRecord, 0, len(msgs))
	// A genuine signed line can be stored again (a consumer delivering
	// a copy written into a bucket): each line counts once.
	seen := map[string]int{}
	for i, m := range msgs {
		sig := m.Header.Get(AuditSigHeader)
		rec := CheckAuditLine(m.Subject, m.Value, sig, runID, writers)
		if rec.Verified {
			id := m.Subject + "\n" + sig
			if first, dup := seen[id]; dup {
				rec.Verified, rec.Unverified = false, fmt.Sprintf("a copy of line %d, stored again: a replay", first+1)
			} else {
				seen[id] = i
			}
		}
		out = append(out, rec)
	}
	return out, nil
}

// auditSigOK reports whether sig is key's signature of the line data on
// subject.
func auditSigOK(key, subject string, data []byte, sig string) bool {
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || sig == "" {
		return false
	}
	pk, err := nkeys.FromPublicKey(key)
	if err != nil {
		return false
	}
	return pk.Verify(auditSigned(subject, data), raw) == nil
}
