package bus

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/internal/testutil"
	"github.com/jazz-run/jazz/messages"
)

// sizesAround are message sizes around limit: well under, just under, at,
// just over, well over, three times.
func sizesAround(limit int) []int {
	return []int{limit - 1024, limit - 1, limit, limit + 1, limit + 1024, 3 * limit}
}

// TestPublishRefusesWhatTheServerWouldRefuse walks message sizes around a
// real server's max_payload, with and without headers: what Publish sends
// arrives whole, what it refuses is a TooLargeError naming both sizes and
// nothing arrives, and its verdict is the server's (nats.go's own check of
// the same message, made on a second connection, agrees at every size).
func TestPublishRefusesWhatTheServerWouldRefuse(t *testing.T) {
	const maxPayload = 64 << 10
	b := inProcessBus(t, testutil.NATSOptions{Configure: func(o *server.Options) { o.MaxPayload = maxPayload }})
	if got := b.MaxPayload(); got != maxPayload {
		t.Fatalf("MaxPayload is %d, the server announced %d", got, maxPayload)
	}
	raw := b.Conn()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan int, 64)
	sub, err := raw.Subscribe("size.>", func(m *nats.Msg) { got <- len(m.Data) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	for _, trace := range []messages.Trace{nil, {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "a=b"}} {
		hdr := 0
		if trace != nil {
			h := nats.Header{}
			for k, v := range trace {
				h.Set(k, v)
			}
			hdr = headerSize(h)
		}
		for _, total := range sizesAround(maxPayload) {
			// A JSON string of n bytes encodes as n+2 (its quotes).
			body := strings.Repeat("x", total-hdr-2)
			err := b.Publish("size.t", body, trace)
			var tooLarge *TooLargeError
			fit := total <= maxPayload
			switch {
			case fit && err != nil:
				t.Fatalf("%d bytes (headers %d): refused under the limit: %v", total, hdr, err)
			case !fit && (!errors.As(err, &tooLarge) || !errors.Is(err, ErrTooLarge)):
				t.Fatalf("%d bytes (headers %d): not refused as too large: %v", total, hdr, err)
			case !fit && (tooLarge.Size != int64(total) || tooLarge.Limit != maxPayload):
				t.Fatalf("%d bytes: the refusal says %d of %d", total, tooLarge.Size, tooLarge.Limit)
			}
			// nats.go's own verdict on the same bytes.
			m := &nats.Msg{Subject: "size.raw", Data: []byte(`"` + body + `"`)}
			if trace != nil {
				m.Header = nats.Header{}
				for k, v := range trace {
					m.Header.Set(k, v)
				}
			}
			rawErr := raw.PublishMsg(m)
			if (rawErr == nil) != fit || rawErr != nil && !errors.Is(rawErr, nats.ErrMaxPayload) {
				t.Fatalf("%d bytes (headers %d): Publish says fit=%v, nats.go says %v", total, hdr, fit, rawErr)
			}
			if err := b.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			for _, want := range []bool{fit, fit} {
				if !want {
					break
				}
				select {
				case n := <-got:
					if n != total-hdr {
						t.Fatalf("%d bytes: %d arrived", total, n)
					}
				case <-ctx.Done():
					t.Fatalf("%d bytes: never arrived", total)
				}
			}
			select {
			case n := <-got:
				t.Fatalf("%d bytes: an extra message of %d arrived", total, n)
			default:
			}
		}
	}
}

// TestBucketRefusesValuesItCannotStore walks value sizes around a
// bucket's largest value, both when the bucket's own MaxValueSize is the
// smaller limit and when the server's max_payload is: MaxValue is
// measured, not assumed (it is the smaller, less room for headers); a
// value of MaxValue bytes is created, updated with a TTL and read back
// whole; a larger one is a TooLargeError from Create, Update and Put
// with nothing written; and a value just past the real limit, sent
// without the check, is refused by the server itself, so the limit is
// the server's.
func TestBucketRefusesValuesItCannotStore(t *testing.T) {
	for _, c := range []struct {
		name               string
		maxPayload, bucket int32
	}{
		{"bucket limit", 256 << 10, 64 << 10},
		{"server limit", 64 << 10, 256 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := inProcessBus(t, testutil.NATSOptions{JetStream: true, Configure: func(o *server.Options) { o.MaxPayload = c.maxPayload }})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			js, err := b.JetStream(ctx)
			if err != nil {
				t.Fatal(err)
			}
			kv, err := js.CreateBucket(ctx, BucketConfig{Name: "big", History: 1, MaxValueSize: c.bucket, LimitMarkerTTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			limit := int64(min(c.maxPayload, c.bucket))
			if got := kv.MaxValue(); got != limit-kvHeaderRoom {
				t.Fatalf("MaxValue is %d; the limits are %d (server) and %d (bucket)", got, c.maxPayload, c.bucket)
			}
			max := int(kv.MaxValue())
			for i, n := range sizesAround(max) {
				key := "k." + string(rune('a'+i))
				value := []byte(strings.Repeat("v", n))
				rev, err := kv.Create(ctx, key, value, time.Minute)
				if n <= max {
					if err != nil {
						t.Fatalf("%d bytes (limit %d): Create: %v", n, max, err)
					}
					if _, err := kv.Update(ctx, key, value, rev, time.Minute); err != nil {
						t.Fatalf("%d bytes: Update with a TTL: %v", n, err)
					}
					if e, err := kv.Get(ctx, key); err != nil || len(e.Value) != n {
						t.Fatalf("%d bytes: read back %d, %v", n, len(e.Value), err)
					}
					continue
				}
				var tooLarge *TooLargeError
				if !errors.As(err, &tooLarge) || tooLarge.Size != int64(n) || tooLarge.Limit != int64(max) {
					t.Fatalf("%d bytes (limit %d): Create: %v", n, max, err)
				}
				if _, err := kv.Put(ctx, key, value); !errors.Is(err, ErrTooLarge) {
					t.Fatalf("%d bytes: Put: %v", n, err)
				}
				if _, err := kv.Update(ctx, "k.a", value, 1, time.Minute); !errors.Is(err, ErrTooLarge) {
					t.Fatalf("%d bytes: Update: %v", n, err)
				}
				if _, err := kv.Get(ctx, key); !errors.Is(err, ErrKeyNotFound) {
					t.Fatalf("%d bytes: something was written: %v", n, err)
				}
			}
			// Past the real limit the server refuses too: the check
			// guards a limit that exists.
			over := make([]byte, limit+1)
			if _, err := kv.kv.Put(ctx, "k.raw", over); err == nil {
				t.Fatalf("the server stored %d bytes past a limit of %d", len(over), limit)
			}
		})
	}
}
