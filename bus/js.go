package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// JetStream is the bus's durable side: key-value buckets and streams, on
// the bus's connection. Every stream and bucket is file-backed.
type JetStream struct {
	js jetstream.JetStream
}

// Errors of the durable side, for errors.Is. The jetstream sentinels they
// stand for are still wrapped inside, so either name matches.
var (
	// ErrNoJetStream: the server runs without JetStream (or nobody
	// answers its API).
	ErrNoJetStream = errors.New("the server has no JetStream")
	// ErrBucketNotFound: the bucket was never created.
	ErrBucketNotFound = jetstream.ErrBucketNotFound
	// ErrStreamNotFound: the stream was never created.
	ErrStreamNotFound = jetstream.ErrStreamNotFound
	// ErrKeyNotFound: the key holds no value (never written, deleted or
	// expired).
	ErrKeyNotFound = errors.New("key not found")
	// ErrWrongRevision: a compare-and-set lost (someone wrote the key
	// first), or Create found the key already there.
	ErrWrongRevision = errors.New("the key was written by someone else first")
)

// JetStream binds the durable side, connecting the bus if nothing did.
func (b *Bus) JetStream(ctx context.Context) (*JetStream, error) {
	conn, err := b.Connect(ctx)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(conn)
	if err != nil {
		return nil, fmt.Errorf("open JetStream: %w", err)
	}
	return &JetStream{js: js}, nil
}

// ServerVersion is the version of the server the bus is connected to
// ("" before it connects).
func (b *Bus) ServerVersion() string {
	conn := b.Conn()
	if conn == nil {
		return ""
	}
	return conn.ConnectedServerVersion()
}

// noJetStream words a server without JetStream.
func noJetStream(err error) error {
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) {
		return fmt.Errorf("%w (%w)", ErrNoJetStream, err)
	}
	return err
}

// BucketConfig is a key-value bucket.
type BucketConfig struct {
	Name, Description string
	// History is how many values of a key are kept (default 1).
	History uint8
	// TTL is how long a value lives; 0 keeps it.
	TTL time.Duration
	// MaxValueSize bounds one value; 0 is the server's limit.
	MaxValueSize int32
	Replicas     int
	// LimitMarkerTTL, when set, turns on per-key TTLs (nats-server ≥
	// 2.11) and keeps the markers of expired keys this long.
	LimitMarkerTTL time.Duration
}

func (c BucketConfig) js() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: c.Name, Description: c.Description, History: c.History, TTL: c.TTL,
		MaxValueSize: c.MaxValueSize, Replicas: c.Replicas, LimitMarkerTTL: c.LimitMarkerTTL,
		Storage: jetstream.FileStorage}
}

// KV is one bound key-value bucket.
type KV struct {
	kv jetstream.KeyValue
	js jetstream.JetStream
	// put is the subject prefix a write of a key is published on
	// ("$KV.<bucket>."), for the writes nats.go's KV cannot make (a
	// compare-and-set with a TTL); "" when the bucket is a mirror or
	// sits in another domain, whose write subjects it does not know.
	put string
	// perKeyTTL: the bucket's stream takes per-message TTLs, read with
	// the same status request as put.
	perKeyTTL bool
	// maxMsg is the largest message the bucket's stream takes (its
	// MaxMsgSize), 0 when it sets none or could not be read.
	maxMsg int64
}

// bindKV wraps a bound bucket. Its stream's config, read once, says
// where its writes go and whether keys expire one by one: jazz creates
// plain buckets, so anything else (a mirror, a bucket sourced from
// another domain) gets no TTL'd updates rather than writes on a guessed
// subject. A bucket whose status cannot be read counts as having no
// per-key TTLs.
func (j *JetStream) bindKV(ctx context.Context, kv jetstream.KeyValue) *KV {
	out := &KV{kv: kv, js: j.js}
	st, err := kv.Status(ctx)
	if err != nil {
		return out
	}
	b, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok || b.StreamInfo() == nil {
		out.perKeyTTL = st.LimitMarkerTTL() > 0
		return out
	}
	out.perKeyTTL = b.StreamInfo().Config.AllowMsgTTL
	if m := b.StreamInfo().Config.MaxMsgSize; m > 0 {
		out.maxMsg = int64(m)
	}
	if b.StreamInfo().Config.Mirror == nil {
		out.put = "$KV." + kv.Bucket() + "."
	}
	return out
}

// kvHeaderRoom is what the headers of one KV write can take (the
// compare-and-set's expected sequence, a TTL, the server's own), kept
// free of the message limit for the value.
const kvHeaderRoom = 256

// MaxValue is the largest value a write of this bucket can carry: the
// smaller of the bucket's own largest message and what the server the
// connection reached takes, less room for the write's headers. Both are
// measured (the bucket's when it was bound, the connection's now, which
// changes when it reconnects to another server), never assumed. 0 when
// neither is known (not connected).
func (kv *KV) MaxValue() int64 {
	limit := kv.maxMsg
	if conn := kv.js.Conn(); conn != nil {
		if p := conn.MaxPayload(); p > 0 && (limit == 0 || p < limit) {
			limit = p
		}
	}
	if limit <= kvHeaderRoom {
		return 0
	}
	return limit - kvHeaderRoom
}

// fitsValue refuses a value the bucket or the server would refuse, before
// it is sent: the server's own refusal names no sizes.
func (kv *KV) fitsValue(what string, value []byte) error {
	if limit := kv.MaxValue(); limit > 0 && int64(len(value)) > limit {
		return &TooLargeError{What: what, Size: int64(len(value)), Limit: limit}
	}
	return nil
}

// Bucket binds the bucket name; ErrBucketNotFound when it was never
// created.
func (j *JetStream) Bucket(ctx context.Context, name string) (*KV, error) {
	kv, err := j.js.KeyValue(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("bind bucket %s: %w", name, noJetStream(err))
	}
	return j.bindKV(ctx, kv), nil
}

// CreateBucket creates the bucket, or binds it as it is when it exists
// already (someone else's settings are left alone).
func (j *JetStream) CreateBucket(ctx context.Context, cfg BucketConfig) (*KV, error) {
	kv, err := j.js.CreateKeyValue(ctx, cfg.js())
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = j.js.KeyValue(ctx, cfg.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("create bucket %s: %w", cfg.Name, noJetStream(err))
	}
	return j.bindKV(ctx, kv), nil
}

// EnsureBucket creates the bucket or updates its settings to cfg.
func (j *JetStream) EnsureBucket(ctx context.Context, cfg BucketConfig) (*KV, error) {
	kv, err := j.js.CreateOrUpdateKeyValue(ctx, cfg.js())
	if err != nil {
		return nil, fmt.Errorf("create bucket %s: %w", cfg.Name, noJetStream(err))
	}
	return j.bindKV(ctx, kv), nil
}

// PerKeyTTL reports whether the bucket expires keys one by one (it was
// created with a LimitMarkerTTL on a server that supports it: its stream
// takes per-message TTLs), as its stream said when it was bound.
func (kv *KV) PerKeyTTL() bool { return kv.perKeyTTL }

// ForbidRollups makes the stream of bucket refuse roll-ups and purges.
// A KV bucket's stream takes them by default, and a roll-up is only a
// header: anyone who may write one key (`Nats-Rollup: all` on it) would
// erase every key of the bucket, and the server's delete markers for
// expired keys (LimitMarkerTTL) need roll-ups, so they go too. Keys still
// expire one by one where the stream takes per-message TTLs.
func (j *JetStream) ForbidRollups(ctx context.Context, bucket string) error {
	st, err := j.js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return fmt.Errorf("bind bucket %s: %w", bucket, noJetStream(err))
	}
	cfg := st.CachedInfo().Config
	if !cfg.AllowRollup && cfg.DenyPurge && cfg.SubjectDeleteMarkerTTL == 0 {
		return nil
	}
	cfg.AllowRollup, cfg.DenyPurge, cfg.SubjectDeleteMarkerTTL = false, true, 0
	if _, err := j.js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("bucket %s: forbid roll-ups: %w", bucket, noJetStream(err))
	}
	return nil
}

// Entry is one value of a key.
type Entry struct {
	Key      string
	Value    []byte
	Revision uint64
	Created  time.Time
}

func entry(e jetstream.KeyValueEntry) Entry {
	return Entry{Key: e.Key(), Value: e.Value(), Revision: e.Revision(), Created: e.Created()}
}

// Get reads key; ErrKeyNotFound when it holds nothing.
func (kv *KV) Get(ctx context.Context, key string) (Entry, error) {
	e, err := kv.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return Entry{}, fmt.Errorf("read %s: %w (%w)", key, ErrKeyNotFound, err)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("read %s: %w", key, err)
	}
	return entry(e), nil
}

// Put writes value at key whatever was there, and returns its revision.
func (kv *KV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	if err := kv.fitsValue("write "+key, value); err != nil {
		return 0, err
	}
	rev, err := kv.kv.Put(ctx, key, value)
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", key, err)
	}
	return rev, nil
}

// Create writes value at key only if the key holds nothing
// (ErrWrongRevision otherwise). ttl > 0 expires this key on its own,
// where the bucket has per-key TTLs.
func (kv *KV) Create(ctx context.Context, key string, value []byte, ttl time.Duration) (uint64, error) {
	if err := kv.fitsValue("create "+key, value); err != nil {
		return 0, err
	}
	var opts []jetstream.KVCreateOpt
	if ttl > 0 {
		opts = append(opts, jetstream.KeyTTL(ttl))
	}
	rev, err := kv.kv.Create(ctx, key, value, opts...)
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", key, wrongRevision(err))
	}
	return rev, nil
}

// Update writes value at key only if its revision is still rev (a
// compare-and-set); ErrWrongRevision when someone wrote first. ttl > 0
// expires the new value on its own, where the bucket has per-key TTLs:
// a value's TTL is its own, so a write without one over a key created
// with one keeps the key until the bucket's MaxAge.
//
// nats.go's KV Update sends no TTL, so a TTL'd update is published on
// the key's subject by hand, with the two headers the server checks:
// Nats-Expected-Last-Subject-Sequence (the compare-and-set, exactly as
// KV Update sends it) and Nats-TTL. A bucket whose write subject is not
// known (see bindKV), or that takes no TTLs, gets the plain
// compare-and-set: at worst the value lives until the bucket's MaxAge.
func (kv *KV) Update(ctx context.Context, key string, value []byte, rev uint64, ttl time.Duration) (uint64, error) {
	if err := kv.fitsValue("update "+key, value); err != nil {
		return 0, err
	}
	if ttl <= 0 || kv.put == "" {
		next, err := kv.kv.Update(ctx, key, value, rev)
		if err != nil {
			return 0, fmt.Errorf("update %s: %w", key, wrongRevision(err))
		}
		return next, nil
	}
	if !validKey(key) {
		return 0, fmt.Errorf("update %s: %w", key, jetstream.ErrInvalidKey)
	}
	m := &nats.Msg{Subject: kv.put + key, Header: nats.Header{}, Data: value}
	ack, err := kv.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(wholeSeconds(ttl)))
	var api *jetstream.APIError
	if errors.As(err, &api) && api.ErrorCode == msgTTLDisabled {
		// The bucket takes no per-key TTLs (made without LimitMarkerTTL,
		// or changed since): the write is refused whole, so the plain
		// compare-and-set at the same revision is still the right one,
		// and the value stays until the bucket's MaxAge, as it would
		// have without a TTL asked for.
		return kv.Update(ctx, key, value, rev, 0)
	}
	if err != nil {
		return 0, fmt.Errorf("update %s: %w", key, wrongRevision(err))
	}
	return ack.Sequence, nil
}

// msgTTLDisabled is the server's error code for a message with a
// Nats-TTL on a stream that does not allow them (nats-server 2.11+;
// older servers keep the header and ignore it).
const msgTTLDisabled jetstream.ErrorCode = 10166

// wholeSeconds rounds ttl up to whole seconds, at least one: the server
// keeps a message's TTL in whole seconds (it truncates a fraction) and
// refuses one under a second.
func wholeSeconds(ttl time.Duration) time.Duration {
	return max(((ttl+time.Second-1)/time.Second)*time.Second, time.Second)
}

// validKey is nats.go's rule for a KV key (its own check is not
// exported): dot-separated tokens of letters, digits and -_/=., none
// empty, no leading or trailing dot. A key that is not one must never
// become a subject with wildcards in it.
func validKey(key string) bool {
	if key == "" || key[0] == '.' || key[len(key)-1] == '.' {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '/', c == '=':
		case c == '.':
			if key[i-1] == '.' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func wrongRevision(err error) error {
	var api *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) ||
		errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return fmt.Errorf("%w (%w)", ErrWrongRevision, err)
	}
	return err
}

// Keys lists the keys matching filter (wildcards allowed).
func (kv *KV) Keys(ctx context.Context, filter string) ([]string, error) {
	lister, err := kv.kv.ListKeysFiltered(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("list keys %s: %w", filter, err)
	}
	defer func() { _ = lister.Stop() }()
	var keys []string
	for {
		select {
		case k, ok := <-lister.Keys():
			if !ok {
				return keys, nil
			}
			keys = append(keys, k)
		case <-ctx.Done():
			return keys, fmt.Errorf("list keys %s: %w", filter, ctx.Err())
		}
	}
}

// Watcher delivers the values written to the keys it watches.
type Watcher struct {
	w    jetstream.KeyWatcher
	ch   chan *Entry
	stop chan struct{}
	once sync.Once
}

// Updates delivers each value written; a nil entry marks the end of the
// values already there (when the watch began with them). It closes when
// the watch stops or its ctx ends.
func (w *Watcher) Updates() <-chan *Entry { return w.ch }

// Stop ends the watch.
func (w *Watcher) Stop() {
	w.once.Do(func() {
		close(w.stop)
		_ = w.w.Stop()
	})
}

// Watch delivers the current value of every key matching pattern, then a
// nil, then each write as it happens; with updatesOnly, only the writes.
// Deletes are not delivered. It ends when ctx does or Stop is called.
func (kv *KV) Watch(ctx context.Context, pattern string, updatesOnly bool) (*Watcher, error) {
	opts := []jetstream.WatchOpt{jetstream.IgnoreDeletes()}
	if updatesOnly {
		opts = append(opts, jetstream.UpdatesOnly())
	}
	w, err := kv.kv.Watch(ctx, pattern, opts...)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", pattern, err)
	}
	out := &Watcher{w: w, ch: make(chan *Entry), stop: make(chan struct{})}
	go func() {
		defer close(out.ch)
		for e := range w.Updates() {
			var v *Entry
			if e != nil {
				ent := entry(e)
				v = &ent
			}
			select {
			case out.ch <- v:
			case <-ctx.Done():
				out.Stop()
				return
			case <-out.stop:
				return
			}
		}
	}()
	return out, nil
}

// StreamConfig is a file-backed stream.
type StreamConfig struct {
	Name, Description string
	Subjects          []string
	// WorkQueue removes each message once acknowledged (else messages
	// stay until a limit drops the oldest).
	WorkQueue bool
	Replicas  int
	MaxAge    time.Duration
	// Duplicates is the window in which a repeated message id is dropped.
	Duplicates time.Duration
	MaxBytes   int64
	MaxMsgSize int32
	// AppendOnly refuses deleting and purging messages.
	AppendOnly bool
	// DiscardNew refuses a message once a limit is reached, instead of
	// dropping the oldest: a log whose every message a reader must see
	// (none pushed out by a flood before it was read).
	DiscardNew bool
}

func (c StreamConfig) js() jetstream.StreamConfig {
	sc := jetstream.StreamConfig{Name: c.Name, Description: c.Description, Subjects: c.Subjects,
		Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: c.Replicas, MaxAge: c.MaxAge,
		Duplicates: c.Duplicates, MaxBytes: c.MaxBytes, MaxMsgSize: c.MaxMsgSize, Discard: jetstream.DiscardOld,
		DenyDelete: c.AppendOnly, DenyPurge: c.AppendOnly}
	if c.DiscardNew {
		sc.Discard = jetstream.DiscardNew
	}
	if c.WorkQueue {
		sc.Retention = jetstream.WorkQueuePolicy
	}
	return sc
}

// EnsureStream creates the stream or updates its settings to cfg.
func (j *JetStream) EnsureStream(ctx context.Context, cfg StreamConfig) error {
	if _, err := j.js.CreateOrUpdateStream(ctx, cfg.js()); err != nil {
		return fmt.Errorf("create stream %s: %w", cfg.Name, noJetStream(err))
	}
	return nil
}

// CreateStream creates the stream when it is missing and leaves an
// existing one as it is.
func (j *JetStream) CreateStream(ctx context.Context, cfg StreamConfig) error {
	_, err := j.js.Stream(ctx, cfg.Name)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("open stream %s: %w", cfg.Name, noJetStream(err))
	}
	_, err = j.js.CreateStream(ctx, cfg.js())
	if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return fmt.Errorf("create stream %s: %w", cfg.Name, noJetStream(err))
	}
	return nil
}

// LastSeq is the sequence of the last message stream has stored (0 when
// none yet).
func (j *JetStream) LastSeq(ctx context.Context, stream string) (uint64, error) {
	st, err := j.js.Stream(ctx, stream)
	if err != nil {
		return 0, fmt.Errorf("bind stream %s: %w", stream, noJetStream(err))
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", stream, noJetStream(err))
	}
	return info.State.LastSeq, nil
}

// StreamExists is nil when the stream is there, ErrStreamNotFound when it
// was never created.
func (j *JetStream) StreamExists(ctx context.Context, name string) error {
	if _, err := j.js.Stream(ctx, name); err != nil {
		return fmt.Errorf("bind stream %s: %w", name, noJetStream(err))
	}
	return nil
}
