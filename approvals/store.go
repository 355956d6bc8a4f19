package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/messages"
)

// Names of the JetStream assets remote approvals use.
const (
	Bucket       = "jazz_approvals"
	AuditStream  = "jazz_audit"
	AuditSubject = "jazz.audit"
	// PolicyStream keeps every signed policy change published on a run's
	// policy subject, so a run reads them all, in the order the server
	// took them, including those sent while its connection was away: it
	// then holds the nonce of every change before any replay of it can
	// come (PolicyMaxAge outlives every change's validity).
	PolicyStream = "jazz_policy"
	PolicyMaxAge = 2 * time.Hour
	// maxPolicyMsg bounds one message there (a signed change is about
	// 600 bytes) and maxPolicyBytes the whole stream, which refuses new
	// changes rather than drop old ones when full: a flood must not push
	// a change out before a run has read it.
	maxPolicyMsg   = 16 << 10
	maxPolicyBytes = 256 << 20
	// RecordMaxAge bounds how long any record is kept: all of them when
	// the server cannot expire keys one by one (nats-server before 2.11),
	// else those written with no expiry. Where it can, a record's key
	// lives as long as pendingTTL and settledTTL say.
	RecordMaxAge = 24 * time.Hour
	// MaxRecord bounds one record (request + diff + decision).
	MaxRecord = 4 << 20
)

// Status of a record.
const (
	StatusPending   = "pending"
	StatusApproved  = "approved"
	StatusDenied    = "denied"
	StatusExpired   = "expired"
	StatusCancelled = "cancelled"
)

// Request is everything a person needs to decide one gated call, plus the
// action hash that binds the decision to what will run.
type Request struct {
	RunID      string `json:"runId"`
	RequestID  string `json:"requestId"`
	ToolCallID string `json:"toolCallId"`
	AgentID    string `json:"agentId,omitempty"`
	Agent      string `json:"agent,omitempty"`
	// Subagent is set when a subagent (depth > 0) asked; Persona is the
	// persona it runs as (its name is the model's to choose, the persona
	// says what it really holds) and Task its brief.
	Subagent    string          `json:"subagent,omitempty"`
	Persona     string          `json:"persona,omitempty"`
	Task        string          `json:"task,omitempty"`
	Depth       int             `json:"depth,omitempty"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
	Message     string          `json:"message,omitempty"`
	PreviewDiff string          `json:"previewDiff,omitempty"`
	RiskTier    string          `json:"riskTier"`
	WorkDir     string          `json:"workDir,omitempty"`
	// Worker is the key of the worker whose machine runs the call (one
	// relayed from a remote agent); WorkDir is then empty, as the run
	// does not know the worker's directory.
	Worker string `json:"worker,omitempty"`
	// Policy is the run's policy when it asked.
	Policy      string          `json:"policy"`
	ExecuteTool string          `json:"executeTool"`
	ExecuteArgs json.RawMessage `json:"executeArgs,omitempty"`
	ActionHash  string          `json:"actionHash"`
	CreatedAt   time.Time       `json:"createdAt"`
	ExpiresAt   time.Time       `json:"expiresAt"`
}

// Record is the KV value of one request over its life.
type Record struct {
	Status   string    `json:"status"`
	Request  Request   `json:"request"`
	Decision *Envelope `json:"decision,omitempty"`
	// DecidedBy and DecidedAt are what the signed decision says, copied
	// for readers that do not verify it (a late approver's message).
	DecidedBy string    `json:"decidedBy,omitempty"`
	DecidedAt time.Time `json:"decidedAt,omitempty"`
	// Reason says why an expired or cancelled request closed.
	Reason string `json:"reason,omitempty"`
	// Revision is the KV revision the record was read at (not stored).
	Revision uint64 `json:"-"`
}

// Pending reports whether the record still waits for a decision at now.
func (r Record) Pending(now time.Time) bool {
	return r.Status == StatusPending && (r.Request.ExpiresAt.IsZero() || now.Before(r.Request.ExpiresAt))
}

// Key is the KV key of a request: run and request id, each one subject
// token, so no id can reach another run's keys.
func Key(runID, requestID string) string {
	return messages.SubjectToken(runID) + "." + messages.SubjectToken(requestID)
}

// RunKeys matches every key of one run.
func RunKeys(runID string) string { return messages.SubjectToken(runID) + ".*" }

// KeySubject is the subject a KV write of key is published on.
func KeySubject(key string) string { return "$KV." + Bucket + "." + key }

// NewRequestID is a fresh, unguessable request id.
func NewRequestID() string { return "ap-" + NewNonce()[:24] }

// ErrNoSuchPending: the id never existed, expired or was withdrawn.
var ErrNoSuchPending = errors.New("no such pending approval")

// AlreadyDecidedError is the loser's answer in a race, or a late
// approver's: someone decided first.
type AlreadyDecidedError struct {
	By       string
	At       time.Time
	Approved bool
	Status   string
}

func (e *AlreadyDecidedError) Error() string {
	switch e.Status {
	case StatusExpired, StatusCancelled:
		return fmt.Sprintf("no such pending approval: it %s at %s", e.Status, e.At.UTC().Format(time.RFC3339))
	}
	verdict := "denied"
	if e.Approved {
		verdict = "approved"
	}
	return fmt.Sprintf("already decided by %s at %s (%s)", e.By, e.At.UTC().Format(time.RFC3339), verdict)
}

// Store is the pending-approvals KV bucket.
type Store struct {
	kv *bus.KV
	// keyTTL: the server expires keys one by one (nats-server ≥ 2.11).
	keyTTL bool
}

// OpenStore binds the bucket, creating it (and the audit stream) when it
// is missing and create is set.
func OpenStore(ctx context.Context, b *bus.Bus, create bool) (*Store, error) {
	js, err := b.JetStream(ctx)
	if err != nil {
		return nil, err
	}
	s := &Store{keyTTL: serverAtLeast(b.ServerVersion(), 2, 11)}
	kv, err := js.Bucket(ctx, Bucket)
	if errors.Is(err, bus.ErrBucketNotFound) && create {
		cfg := bus.BucketConfig{
			Name:         Bucket,
			Description:  "jazz pending approvals",
			History:      1,
			TTL:          RecordMaxAge,
			MaxValueSize: MaxRecord,
		}
		if s.keyTTL {
			cfg.LimitMarkerTTL = time.Minute
		}
		if kv, err = js.CreateBucket(ctx, cfg); err == nil {
			err = js.ForbidRollups(ctx, Bucket)
		}
	}
	if errors.Is(err, bus.ErrNoJetStream) {
		return nil, fmt.Errorf("open approvals bucket %s: the server has no JetStream, which remote approvals need (%w)", Bucket, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open approvals bucket %s: %w", Bucket, err)
	}
	if s.keyTTL {
		s.keyTTL = kv.PerKeyTTL()
	}
	s.kv = kv
	if create {
		if err := js.CreateStream(ctx, bus.StreamConfig{
			Name:        AuditStream,
			Description: "jazz approval audit trail (append-only)",
			Subjects:    []string{AuditSubject + ".>"},
			AppendOnly:  true,
		}); err != nil {
			return nil, fmt.Errorf("audit trail: %w", err)
		}
		if err := js.CreateStream(ctx, bus.StreamConfig{
			Name:        PolicyStream,
			Description: "jazz signed policy changes (append-only)",
			Subjects:    []string{messages.PolicyWildcard},
			AppendOnly:  true, DiscardNew: true,
			MaxAge: PolicyMaxAge, MaxMsgSize: maxPolicyMsg, MaxBytes: maxPolicyBytes,
		}); err != nil {
			return nil, fmt.Errorf("policy changes: %w", err)
		}
	}
	return s, nil
}

// ErrNoPolicyStream: the bus keeps no policy changes (a server started
// by an older jazz, or an external one `jazz bus init` has not set up
// since), so a run cannot take any.
var ErrNoPolicyStream = errors.New("the bus has no " + PolicyStream + " stream, so no signed policy change is taken (restart `jazz bus serve`, or run `jazz bus init` on an external deployment)")

// FollowPolicy hands fn every message stored on runID's policy subject
// from now on, in the server's order, the ones stored while the
// connection was away included (an ordered consumer resumes where it
// was). stop ends it.
func FollowPolicy(ctx context.Context, b *bus.Bus, runID string, fn func(data []byte)) (stop func(), err error) {
	js, err := b.JetStream(ctx)
	if err != nil {
		return nil, err
	}
	last, err := js.LastSeq(ctx, PolicyStream)
	if errors.Is(err, bus.ErrStreamNotFound) {
		return nil, ErrNoPolicyStream
	}
	if err != nil {
		return nil, fmt.Errorf("policy changes: %w", err)
	}
	f, err := js.FollowFrom(ctx, PolicyStream, []string{messages.PolicySubject(runID)}, last+1, func(m bus.Raw) { fn(m.Value) })
	if err != nil {
		return nil, fmt.Errorf("policy changes: %w", err)
	}
	return f.Stop, nil
}

// Harden makes an existing approvals bucket refuse roll-ups and purges
// (OpenStore makes a new one so): every runner and approver may write
// any key, and a `Nats-Rollup: all` header on one would erase every
// run's requests. It needs an identity that may update streams (the bus
// server's, `jazz bus init`'s).
func Harden(ctx context.Context, b *bus.Bus) error {
	js, err := b.JetStream(ctx)
	if err != nil {
		return err
	}
	return js.ForbidRollups(ctx, Bucket)
}

func serverAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// recordRoom is what a pending record may grow by over its life, kept
// free under the bucket's limit when it is first written: a decision (the
// signed envelope, whose note alone may take MaxNote bytes six times over
// once escaped, and the signer's name) or a close (status, reason, time).
// A pending record that fits only without them could be shown to an
// approver and then never decided, nor closed.
const recordRoom = 64 << 10

// TooLargeError is a request whose record cannot go on the bus: Size
// bytes, where the approvals bucket, on the server this run reached,
// takes at most Limit for a request (room for its decision kept).
type TooLargeError struct {
	RequestID   string
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("approval request %s is %d bytes; the approvals bucket on this server takes requests of at most %d", e.RequestID, e.Size, e.Limit)
}

// MaxRequest is the largest pending record the bucket takes now: its
// largest value (the bucket's own limit or the server's max_payload,
// whichever is smaller, as measured) less the room its decision or close
// will need. 0 when it cannot be known (not connected).
func (s *Store) MaxRequest() int64 {
	return max(s.kv.MaxValue()-recordRoom, 0)
}

// Fits is nil when req's pending record can be written, else a
// *TooLargeError; it marshals req, so it costs what Put does.
func (s *Store) Fits(req Request) error {
	data, err := json.Marshal(Record{Status: StatusPending, Request: req})
	if err != nil {
		return err
	}
	return s.fits(req, data)
}

// fits checks data, req's record, against MaxRequest. Where no limit is
// known (the connection is away) the write itself decides: it is retried
// once the connection is back, and checked then.
func (s *Store) fits(req Request, data []byte) error {
	if s.kv.MaxValue() == 0 {
		return nil
	}
	if limit := s.MaxRequest(); int64(len(data)) > limit {
		return &TooLargeError{RequestID: req.RequestID, Size: int64(len(data)), Limit: limit}
	}
	return nil
}

// Put records a new pending request (kv.Create: an existing key is an
// error, never overwritten); one whose record does not fit (Fits) is a
// *TooLargeError, and nothing is written. Its TTL is the approval timeout where the
// server supports per-key TTLs; the expiry inside the record holds
// everywhere.
func (s *Store) Put(ctx context.Context, req Request) (uint64, error) {
	data, err := json.Marshal(Record{Status: StatusPending, Request: req})
	if err != nil {
		return 0, err
	}
	if err := s.fits(req, data); err != nil {
		return 0, err
	}
	rev, err := s.kv.Create(ctx, Key(req.RunID, req.RequestID), data, s.pendingTTL(req))
	if err != nil {
		return 0, fmt.Errorf("record pending approval %s: %w", req.RequestID, err)
	}
	return rev, nil
}

// pendingTTL is how long the key of req's pending record lives: until
// the request expires, and a second more (the server counts whole
// seconds). A request already past its expiry still gets a second, never
// "no TTL", which would keep it a day. 0 (no TTL of its own, the bucket's
// MaxAge) where the server cannot expire keys one by one, or req says no
// expiry.
func (s *Store) pendingTTL(req Request) time.Duration {
	if !s.keyTTL || req.ExpiresAt.IsZero() {
		return 0
	}
	return min(max(time.Until(req.ExpiresAt)+time.Second, time.Second), RecordMaxAge)
}

// settledTTL is how long the key of req's closed or decided record
// lives: until the request would have expired, then one approval timeout
// more (its ExpiresAt less its CreatedAt), at most RecordMaxAge.
//
// Until the expiry, the record is what makes a pending write still on
// its way lose its compare-and-set (Put creates only an empty key): it
// must not leave before a pending record could still be taken for one.
// A pending record landing after that is expired by its own ExpiresAt,
// which every reader checks. The timeout more is for late deciders: one
// who read the request just before it closed is told it was settled, and
// why, for as long again as anyone had to decide it; after that a
// decision is told there is no such pending approval.
func (s *Store) settledTTL(req Request) time.Duration {
	if !s.keyTTL || req.ExpiresAt.IsZero() {
		return 0
	}
	timeout := min(max(req.ExpiresAt.Sub(req.CreatedAt), time.Second), RecordMaxAge)
	return min(max(time.Until(req.ExpiresAt), 0)+timeout, RecordMaxAge)
}

// Get reads one record; a missing or deleted key is ErrNoSuchPending.
func (s *Store) Get(ctx context.Context, runID, requestID string) (Record, error) {
	return s.GetKey(ctx, Key(runID, requestID))
}

// GetKey reads the record at key.
func (s *Store) GetKey(ctx context.Context, key string) (Record, error) {
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, bus.ErrKeyNotFound) {
		return Record{}, ErrNoSuchPending
	}
	if err != nil {
		return Record{}, fmt.Errorf("read approval %s: %w", key, err)
	}
	return decodeRecord(e)
}

// MalformedError is a value at an approvals key that is not a record
// (someone with write access wrote garbage); Revision lets the owner
// write the real record back over it.
type MalformedError struct {
	Key      string
	Revision uint64
	Err      error
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("approval %s is not a record: %v", e.Key, e.Err)
}

func (e *MalformedError) Unwrap() error { return e.Err }

func decodeRecord(e bus.Entry) (Record, error) {
	var r Record
	if err := json.Unmarshal(e.Value, &r); err != nil {
		return Record{Revision: e.Revision}, &MalformedError{Key: e.Key, Revision: e.Revision, Err: err}
	}
	// A record is its request's only at that request's key: a copy of
	// another run's request stored elsewhere (closed, or with other text)
	// would be shown, found and taken for the genuine one by readers
	// that know a request by what it says.
	if own := Key(r.Request.RunID, r.Request.RequestID); own != e.Key {
		return Record{Revision: e.Revision}, &MalformedError{Key: e.Key, Revision: e.Revision,
			Err: fmt.Errorf("it holds request %s of run %s, whose key is %s", r.Request.RequestID, r.Request.RunID, own)}
	}
	r.Revision = e.Revision
	return r, nil
}

// Decide records a signed decision exactly once: a compare-and-set on the
// revision the pending record was read at. The loser of a race, and anyone
// after it, gets AlreadyDecidedError; an unknown or expired id gets
// ErrNoSuchPending.
func (s *Store) Decide(ctx context.Context, runID, requestID string, env Envelope, d Decision, now time.Time) (Record, error) {
	return s.DecideRecord(ctx, Record{Request: Request{RunID: runID, RequestID: requestID}}, env, d, now)
}

// DecideRecord is Decide on a record already read (a watcher's): its
// revision is the compare-and-set's, which saves reading it again. A
// record without a revision is read first.
func (s *Store) DecideRecord(ctx context.Context, known Record, env Envelope, d Decision, now time.Time) (Record, error) {
	key := Key(known.Request.RunID, known.Request.RequestID)
	for attempt := 0; attempt < 3; attempt++ {
		r := known
		if attempt > 0 || r.Revision == 0 {
			var err error
			if r, err = s.GetKey(ctx, key); err != nil {
				return Record{}, err
			}
		}
		if err := r.Closed(now); err != nil {
			return r, err
		}
		r.Status = StatusDenied
		if d.Approved {
			r.Status = StatusApproved
		}
		r.Decision = &env
		r.DecidedBy = d.SignerName
		if r.DecidedBy == "" {
			r.DecidedBy = env.Signer
		}
		r.DecidedAt = d.IssuedAt
		data, _ := json.Marshal(r)
		rev, err := s.kv.Update(ctx, key, data, r.Revision, s.settledTTL(r.Request))
		if err == nil {
			r.Revision = rev
			return r, nil
		}
		if !errors.Is(err, bus.ErrWrongRevision) {
			return Record{}, fmt.Errorf("record decision on %s: %w", known.Request.RequestID, err)
		}
		// Someone wrote first: read again, and report what they did.
	}
	return Record{}, fmt.Errorf("record decision on %s: the record kept changing", known.Request.RequestID)
}

// Closed is nil while r waits for a decision, else the error a decision
// on it gets: already decided by X at T, or no such pending approval.
func (r Record) Closed(now time.Time) error {
	switch {
	case r.Status == StatusApproved || r.Status == StatusDenied:
		return &AlreadyDecidedError{By: r.DecidedBy, At: r.DecidedAt, Approved: r.Status == StatusApproved, Status: r.Status}
	case r.Status == StatusExpired || r.Status == StatusCancelled:
		return fmt.Errorf("%w: it %s (%s)", ErrNoSuchPending, r.Status, r.Reason)
	case !r.Pending(now):
		return fmt.Errorf("%w: it expired at %s", ErrNoSuchPending, r.Request.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// Close marks a still-pending record expired or cancelled, so late
// approvers are told it is gone; a decided record is left as it is.
func (s *Store) Close(ctx context.Context, runID, requestID, status, reason string) error {
	key := Key(runID, requestID)
	r, err := s.GetKey(ctx, key)
	if err != nil || r.Status != StatusPending {
		return err
	}
	r.Status, r.Reason, r.DecidedAt = status, reason, time.Now().UTC()
	data, _ := json.Marshal(r)
	if _, err := s.kv.Update(ctx, key, data, r.Revision, s.settledTTL(r.Request)); err != nil && !errors.Is(err, bus.ErrWrongRevision) {
		return fmt.Errorf("close approval %s: %w", requestID, err)
	}
	return nil
}

// Withdraw closes the record of req for good, as its owner (the run that
// wrote it): whatever the key holds that is not already expired or
// cancelled (pending, or a decision the run did not take) becomes a
// closed record saying why, and a key that holds nothing yet gets one, so
// a write of the pending record still on its way can no longer create
// it. Every write is a compare-and-set; a lost race reads again.
func (s *Store) Withdraw(ctx context.Context, req Request, status, reason string) error {
	key := Key(req.RunID, req.RequestID)
	for attempt := 0; attempt < 5; attempt++ {
		closed := Record{Status: status, Request: req, Reason: reason, DecidedAt: time.Now().UTC()}
		data, err := json.Marshal(closed)
		if err != nil {
			return err
		}
		e, err := s.kv.Get(ctx, key)
		switch {
		case errors.Is(err, bus.ErrKeyNotFound):
			_, err = s.kv.Create(ctx, key, data, s.settledTTL(req))
		case err != nil:
			return fmt.Errorf("withdraw approval %s: %w", req.RequestID, err)
		default:
			if r, derr := decodeRecord(e); derr == nil && (r.Status == StatusExpired || r.Status == StatusCancelled) {
				return nil
			}
			_, err = s.kv.Update(ctx, key, data, e.Revision, s.settledTTL(req))
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, bus.ErrWrongRevision) {
			return fmt.Errorf("withdraw approval %s: %w", req.RequestID, err)
		}
	}
	return fmt.Errorf("withdraw approval %s: the record kept changing", req.RequestID)
}

// Snapshot returns every record now in the bucket (one ordered consumer,
// not one request per key), oldest first.
func (s *Store) Snapshot(ctx context.Context) ([]Record, error) {
	w, err := s.kv.Watch(ctx, ">", false)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	defer w.Stop()
	var out []Record
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return out, nil
			}
			if e == nil {
				return out, nil // the initial values are all in
			}
			if r, err := decodeRecord(*e); err == nil {
				out = append(out, r)
			}
		case <-ctx.Done():
			return out, fmt.Errorf("list approvals: %w", ctx.Err())
		}
	}
}

// Watch streams every record as it is written (current values first);
// the channel closes when ctx ends.
func (s *Store) Watch(ctx context.Context) (<-chan Record, error) {
	w, err := s.kv.Watch(ctx, ">", false)
	if err != nil {
		return nil, fmt.Errorf("watch approvals: %w", err)
	}
	out := make(chan Record, 64)
	go func() {
		defer close(out)
		defer w.Stop()
		for {
			select {
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil {
					continue
				}
				r, err := decodeRecord(*e)
				if err != nil {
					continue
				}
				select {
				case out <- r:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// Find reads the record of a request id, which may be given alone
// ("ap-…") or with its run ("run-…/ap-…"). An id no record has is
// ErrNoSuchPending; one that two runs share (only if forged) is an error.
func (s *Store) Find(ctx context.Context, id string) (Record, error) {
	id = strings.TrimSpace(id)
	if run, req, ok := strings.Cut(id, "/"); ok {
		return s.Get(ctx, run, req)
	}
	if id == "" || messages.SubjectToken(id) != id {
		return Record{}, fmt.Errorf("%w: %q is not a request id", ErrNoSuchPending, id)
	}
	keys, err := s.kv.Keys(ctx, "*."+id)
	if err != nil {
		return Record{}, fmt.Errorf("find approval %s: %w", id, err)
	}
	// Only records at their own request's key count: anyone who may write
	// the bucket can store a copy of a request under another run's key,
	// which must neither be found nor make the id ambiguous.
	var found []Record
	var bad error
	for _, k := range keys {
		r, err := s.GetKey(ctx, k)
		var malformed *MalformedError
		switch {
		case errors.As(err, &malformed):
			if bad == nil {
				bad = err
			}
		case errors.Is(err, ErrNoSuchPending):
		case err != nil:
			return Record{}, err
		default:
			found = append(found, r)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		return Record{}, fmt.Errorf("request id %s belongs to %d runs; give it as RUN/%s", id, len(found), id)
	case bad != nil:
		return Record{}, bad
	}
	return Record{}, fmt.Errorf("%w: %s", ErrNoSuchPending, id)
}

// Reopen puts req back as pending over a record the run refused (a
// decision that did not verify), if nobody changed it since rev.
func (s *Store) Reopen(ctx context.Context, req Request, rev uint64) error {
	data, err := json.Marshal(Record{Status: StatusPending, Request: req})
	if err != nil {
		return err
	}
	if _, err := s.kv.Update(ctx, Key(req.RunID, req.RequestID), data, rev, s.pendingTTL(req)); err != nil {
		return fmt.Errorf("reopen approval %s: %w", req.RequestID, err)
	}
	return nil
}

// RawUpdate writes value at key over revision rev, unchecked: for tests
// that play a client writing garbage.
func (s *Store) RawUpdate(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	return s.kv.Update(ctx, key, value, rev, 0)
}
