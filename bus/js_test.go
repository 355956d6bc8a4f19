package bus

import (
	"context"
	"errors"
	"testing"
	"time"

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
	next, err := kv.Update(ctx, "a.1", []byte("two"), rev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(ctx, "a.1", []byte("stale"), rev); !errors.Is(err, ErrWrongRevision) {
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
