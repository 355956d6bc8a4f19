// Package workstore names and creates the JetStream assets of worker
// pools: the work-queue stream of tasks, the stream of what workers
// report durably (claims, approval requests, results), and the KV bucket
// of per-task records (cancelled, gated action started). The bus server
// creates them; runners and workers only bind.
package workstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/messages"
)

// Names of the assets.
const (
	// TaskStream holds queued tasks of every pool (work-queue retention:
	// a task is gone once a worker acknowledges it).
	TaskStream = "JAZZ_WORK"
	// OutStream holds what workers report that must not be lost while a
	// runner reconnects: claims, approval requests and results.
	OutStream = "JAZZ_WORK_OUT"
	// Bucket holds per-task records: cancel.<task> (runners write) and
	// gated.<task> (workers write).
	Bucket = "jazz_work"
	// ServiceName is the nats micro service every worker registers as.
	ServiceName = "jazz-worker"
)

// Retention: longer than the longest subagent timeout (24 h), so a
// record outlives every task it speaks of.
const (
	MaxAge = 25 * time.Hour
	// DedupWindow is how long a message id (Nats-Msg-Id) is remembered.
	DedupWindow = 10 * time.Minute
	// MaxOutBytes bounds the out stream; the oldest reports go first.
	MaxOutBytes = 1 << 30
	// MaxTaskBytes bounds one task (a run's history rides in it).
	MaxTaskBytes = 8 << 20
)

// TaskSubjects are the subjects TaskStream captures.
var TaskSubjects = []string{"jazz.work.*.task"}

// OutSubjects are the subjects OutStream captures.
var OutSubjects = []string{
	"jazz.work.*.w.*.*.*." + messages.WorkKindClaim,
	"jazz.work.*.w.*.*.*." + messages.WorkKindApproval,
	"jazz.work.*.w.*.*.*." + messages.WorkKindResult,
}

// CancelKey and GatedKey are the bucket keys of one task.
func CancelKey(taskID string) string { return "cancel." + messages.SubjectToken(taskID) }

// GatedKey is where a worker records that a task started a gated action.
func GatedKey(taskID string) string { return "gated." + messages.SubjectToken(taskID) }

// KeySubject is the subject a write of key is published on.
func KeySubject(key string) string { return "$KV." + Bucket + "." + key }

// ConsumerName is the durable consumer every worker of pool shares.
func ConsumerName(pool string) string { return "pool_" + messages.SubjectToken(pool) }

// Ensure creates (or updates) the assets with replicas copies each
// (1 on a single server, 3 on a cluster). It needs an identity allowed
// to manage streams: the bus server's own, or `jazz bus init`'s.
func Ensure(ctx context.Context, b *bus.Bus, replicas int) error {
	if replicas < 1 {
		replicas = 1
	}
	js, err := b.JetStream(ctx)
	if err != nil {
		return err
	}
	if err := js.EnsureStream(ctx, bus.StreamConfig{
		Name: TaskStream, Description: "jazz worker pools: queued tasks",
		Subjects: TaskSubjects, WorkQueue: true,
		Replicas: replicas, MaxAge: MaxAge, Duplicates: DedupWindow, MaxMsgSize: MaxTaskBytes,
	}); err != nil {
		return err
	}
	if err := js.EnsureStream(ctx, bus.StreamConfig{
		Name: OutStream, Description: "jazz worker pools: claims, approval requests and results",
		Subjects: OutSubjects,
		Replicas: replicas, MaxAge: MaxAge, Duplicates: DedupWindow, MaxBytes: MaxOutBytes, MaxMsgSize: MaxTaskBytes,
	}); err != nil {
		return err
	}
	if _, err := js.EnsureBucket(ctx, bus.BucketConfig{
		Name: Bucket, Description: "jazz worker pools: cancelled tasks and started gated actions",
		TTL: MaxAge, History: 1, Replicas: replicas,
	}); err != nil {
		return err
	}
	return nil
}

// ErrMissing is returned when the assets were never created.
var ErrMissing = errors.New("the worker pool streams do not exist on this bus (start it with `jazz bus serve`, or run `jazz bus init` on an external deployment)")

// Handles are the bound assets.
type Handles struct {
	JS     *bus.JetStream
	Bucket *bus.KV
}

// Open binds the task stream and the bucket.
func Open(ctx context.Context, b *bus.Bus) (Handles, error) {
	js, err := b.JetStream(ctx)
	if err != nil {
		return Handles{}, err
	}
	if err := js.StreamExists(ctx, TaskStream); errors.Is(err, bus.ErrStreamNotFound) {
		return Handles{}, ErrMissing
	} else if err != nil {
		return Handles{}, err
	}
	kv, err := js.Bucket(ctx, Bucket)
	if errors.Is(err, bus.ErrBucketNotFound) {
		return Handles{}, ErrMissing
	}
	if err != nil {
		return Handles{}, err
	}
	return Handles{JS: js, Bucket: kv}, nil
}

// Pool consumer settings. The bus server creates every pool's consumer
// (EnsurePools), never a worker: a consumer's settings are the whole
// pool's (a worker that could change its lease or pending limit could
// stall every other worker's tasks), and a consumer delivers to any
// subject its creator names.
const (
	// DefaultLease is how long a task stays with a worker that stopped
	// heartbeating before JetStream hands it to another (AckWait).
	DefaultLease = 10 * time.Second
	// MinLease and MaxLease bound a pool's configured lease.
	MinLease = 500 * time.Millisecond
	MaxLease = 10 * time.Minute
	// MaxAttempts is how many workers may take a task (MaxDeliver): the
	// first, and one retry when it was lost before any gated action.
	MaxAttempts = 2
	// DefaultPool is the pool a worker joins and a run names by default.
	DefaultPool = "default"
)

// PoolQueue is the durable consumer of pool, with lease as its AckWait.
func PoolQueue(pool string, lease time.Duration) bus.QueueConfig {
	return bus.QueueConfig{
		Durable:       ConsumerName(pool),
		Description:   "jazz worker pool " + pool,
		FilterSubject: messages.WorkTaskSubject(pool),
		AckWait:       lease,
		MaxDeliver:    MaxAttempts,
		MaxAckPending: -1,
		MaxWaiting:    4096,
	}
}

// EnsurePools creates (or updates) the consumer of every pool in leases
// (pool name -> lease). It needs an identity allowed to manage
// consumers: the bus server's own, or `jazz bus init`'s.
func EnsurePools(ctx context.Context, b *bus.Bus, leases map[string]time.Duration) error {
	js, err := b.JetStream(ctx)
	if err != nil {
		return err
	}
	for pool, lease := range leases {
		if _, err := js.Queue(ctx, TaskStream, PoolQueue(pool, lease)); err != nil {
			return fmt.Errorf("pool %s: %w", pool, err)
		}
	}
	return nil
}
