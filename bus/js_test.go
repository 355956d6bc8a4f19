package bus

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jazz-run/jazz/internal/testutil"
)

func jsBus(t *testing.T) *Bus {
	t.Helper()
	return inProcessBus(t, testutil.NATSOptions{JetStream: true})
}

// inProcessBus is a bus on its own in-process server, closed when the
// test ends.
func inProcessBus(t *testing.T, o testutil.NATSOptions) *Bus {
	t.Helper()
	srv := testutil.StartNATS(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := Start(ctx, Options{InProcess: srv.Server})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.CloseNow)
	return b
}

// TestBucketCompareAndSet: Create refuses a key that is there, Update
// refuses a stale revision, both as ErrWrongRevision; a missing key is
// ErrKeyNotFound; a watch sees the current values, the end marker, then
// new writes.
func TestBucketCompareAndSet(t *testing.T) {
	b := jsBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	js, err := b.JetStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Bucket(ctx, "nope"); !errors.Is(err, ErrBucketNotFound) {
		t.Fatalf("binding a missing bucket: %v", err)
	}
	kv, err := js.CreateBucket(ctx, BucketConfig{Name: "t", History: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateBucket(ctx, BucketConfig{Name: "t", History: 1}); err != nil {
		t.Fatalf("creating an existing bucket binds it: %v", err)
	}
	if _, err := kv.Get(ctx, "a.1"); !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("missing key: %v", err)
	}
	rev, err := kv.Create(ctx, "a.1", []byte("one"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, "a.1", []byte("again"), 0); !errors.Is(err, ErrWrongRevision) {
		t.Fatalf("create over an existing key: %v", err)
	}
	next, err := kv.Update(ctx, "a.1", []byte("two"), rev, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(ctx, "a.1", []byte("stale"), rev, 0); !errors.Is(err, ErrWrongRevision) {
		t.Fatalf("update at a stale revision: %v", err)
	}
	e, err := kv.Get(ctx, "a.1")
	if err != nil || string(e.Value) != "two" || e.Revision != next || e.Key != "a.1" {
		t.Fatalf("read back %+v, %v", e, err)
	}
	if _, err := kv.Put(ctx, "b.1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(ctx, "a.*")
	if err != nil || len(keys) != 1 || keys[0] != "a.1" {
		t.Fatalf("keys a.*: %v, %v", keys, err)
	}

	w, err := kv.Watch(ctx, "a.*", false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next1 := func() *Entry {
		select {
		case e := <-w.Updates():
			return e
		case <-ctx.Done():
			t.Fatal("watch delivered nothing")
		}
		return nil
	}
	if e := next1(); e == nil || string(e.Value) != "two" {
		t.Fatalf("current value: %+v", e)
	}
	if e := next1(); e != nil {
		t.Fatalf("want the end-of-current marker, got %+v", e)
	}
	if _, err := kv.Put(ctx, "a.2", []byte("three")); err != nil {
		t.Fatal(err)
	}
	if e := next1(); e == nil || e.Key != "a.2" || string(e.Value) != "three" {
		t.Fatalf("new write: %+v", e)
	}
}

// TestStreams: CreateStream leaves an existing stream alone, EnsureStream
// updates it, StreamExists tells a missing one.
func TestStreams(t *testing.T) {
	b := jsBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	js, err := b.JetStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.StreamExists(ctx, "S"); !errors.Is(err, ErrStreamNotFound) {
		t.Fatalf("missing stream: %v", err)
	}
	cfg := StreamConfig{Name: "S", Subjects: []string{"s.>"}, AppendOnly: true}
	if err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatalf("again: %v", err)
	}
	if err := js.EnsureStream(ctx, StreamConfig{Name: "W", Subjects: []string{"w.>"}, WorkQueue: true, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := js.StreamExists(ctx, "W"); err != nil {
		t.Fatal(err)
	}
}

// TestNoJetStream: a server without JetStream is named as such.
func TestNoJetStream(t *testing.T) {
	b := inProcessBus(t, testutil.NATSOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := b.JetStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Bucket(ctx, "x"); !errors.Is(err, ErrNoJetStream) {
		t.Fatalf("want ErrNoJetStream, got %v", err)
	}
}

// TestUpdateWithTTL: an update given a TTL is still a compare-and-set (a
// stale revision, or "nothing there" over a value, loses as
// ErrWrongRevision) and its value leaves the bucket by itself, while a
// key updated without one stays.
func TestUpdateWithTTL(t *testing.T) {
	ctx, kv := newBucket(t, 30*time.Second, BucketConfig{Name: "ttl", History: 1, TTL: time.Hour, LimitMarkerTTL: time.Minute})
	if !kv.PerKeyTTL() {
		t.Fatal("the embedded server's bucket has no per-key TTLs")
	}
	// Both keys were created with a TTL far off, as a pending record is:
	// only the update's own TTL can make one leave soon.
	revA, err := kv.Create(ctx, "a.1", []byte("pending"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	revB, err := kv.Create(ctx, "b.1", []byte("pending"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	next, err := kv.Update(ctx, "a.1", []byte("closed"), revA, 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(ctx, "a.1", []byte("stale"), revA, time.Second); !errors.Is(err, ErrWrongRevision) {
		t.Fatalf("a TTL'd update at a stale revision: %v", err)
	}
	if _, err := kv.Update(ctx, "a.1", []byte("create"), 0, time.Second); !errors.Is(err, ErrWrongRevision) {
		t.Fatalf("a TTL'd update expecting an empty key, over a value: %v", err)
	}
	if _, err := kv.Update(ctx, "b.1", []byte("closed"), revB, 0); err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(ctx, "a.1"); err != nil || string(e.Value) != "closed" || e.Revision != next {
		t.Fatalf("read back before the TTL: %+v, %v", e, err)
	}
	// 1.5 s is rounded up to 2 s (the server counts whole seconds);
	// expiry is checked about once a second.
	deadline := time.Now().Add(6 * time.Second)
	for {
		_, err := kv.Get(ctx, "a.1")
		if errors.Is(err, ErrKeyNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a value updated with a 2 s TTL is still there after 6 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if e, err := kv.Get(ctx, "b.1"); err != nil || string(e.Value) != "closed" {
		t.Fatalf("the key updated without a TTL: %+v, %v", e, err)
	}
}

// TestValidKeyIsNatsGosRule: the key check in front of a hand-made
// publish accepts exactly the keys nats.go's KV accepts (a differential
// oracle: its Get refuses the rest with ErrInvalidKey before any round
// trip), so no key Update takes can become a subject with wildcards or
// empty tokens.
func TestValidKeyIsNatsGosRule(t *testing.T) {
	ctx, kv := newBucket(t, 60*time.Second, BucketConfig{Name: "keys", History: 1})
	alphabet := []string{"a", "Z", "0", "-", "_", "/", "=", ".", ".", "*", ">", " ", "\t", "é", "$", "\x00", "\n"}
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"", ".", "..", "a..b", ".a", "a.", "a.b", "a.*", ">", "a.>", "run-1.ap-x", "a b"}
	for range 3000 {
		var k strings.Builder
		for range rng.IntN(6) {
			k.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		keys = append(keys, k.String())
	}
	var valid int
	for _, k := range keys {
		_, err := kv.kv.Get(ctx, k)
		theirs := !errors.Is(err, jetstream.ErrInvalidKey)
		if ours := validKey(k); ours != theirs {
			t.Fatalf("key %q: validKey says %v, nats.go says %v (%v)", k, ours, theirs, err)
		}
		if theirs {
			valid++
		}
	}
	if valid < 100 || valid > len(keys)-100 {
		t.Fatalf("only %d of %d keys valid: the sample does not test both sides", valid, len(keys))
	}
}

// TestUpdateWithTTLOnABucketWithout: a bucket that takes no per-key TTLs
// (created without LimitMarkerTTL) refuses a message carrying one; the
// update is still made, as a plain compare-and-set, and stays.
func TestUpdateWithTTLOnABucketWithout(t *testing.T) {
	ctx, kv := newBucket(t, 20*time.Second, BucketConfig{Name: "nottl", History: 1})
	if kv.PerKeyTTL() {
		t.Fatal("a bucket made without LimitMarkerTTL has per-key TTLs")
	}
	rev, err := kv.Create(ctx, "a.1", []byte("pending"), 0)
	if err != nil {
		t.Fatal(err)
	}
	next, err := kv.Update(ctx, "a.1", []byte("closed"), rev, time.Second)
	if err != nil {
		t.Fatalf("an update asking a TTL of a bucket without them: %v", err)
	}
	if _, err := kv.Update(ctx, "a.1", []byte("stale"), rev, time.Second); !errors.Is(err, ErrWrongRevision) {
		t.Fatalf("a stale update, retried without its TTL: %v", err)
	}
	time.Sleep(2500 * time.Millisecond)
	if e, err := kv.Get(ctx, "a.1"); err != nil || string(e.Value) != "closed" || e.Revision != next {
		t.Fatalf("read back after the TTL it could not have: %+v, %v", e, err)
	}
}

// newBucket is a bucket made by cfg on a fresh embedded server, and a
// context that ends after timeout (or with the test).
func newBucket(t *testing.T, timeout time.Duration, cfg BucketConfig) (context.Context, *KV) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	js, err := jsBus(t).JetStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateBucket(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, kv
}
