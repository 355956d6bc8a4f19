package retry

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jazz-run/jazz/provider"
)

// hang is an attempt that never answers until its ctx ends, reporting
// the end the way a provider does.
func hang(ctx context.Context) (provider.Response, error) {
	<-ctx.Done()
	return provider.Response{}, context.Cause(ctx)
}

func TestCeiling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		_, err := Do(context.Background(), Options{Attempts: 3, Ceiling: 900 * time.Second}, hang)
		var ce *CeilingError
		if !errors.As(err, &ce) {
			t.Fatalf("err = %v, want a CeilingError", err)
		}
		if d := time.Since(start); d != 900*time.Second {
			t.Errorf("ended after %v, want exactly the ceiling", d)
		}
		if !strings.Contains(err.Error(), "900 s") || !strings.Contains(err.Error(), "retries included") {
			t.Errorf("message: %q", err)
		}
	})
}

func TestCeilingCoversRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		failing := func(ctx context.Context) (provider.Response, error) {
			return provider.Response{}, provider.ClassifyStatus(503, "busy")
		}
		start := time.Now()
		// 10 attempts would wait 1+2+4+…+30 s; the ceiling ends it first.
		_, err := DoStream(context.Background(), Options{Attempts: 11, Ceiling: 20 * time.Second}, failing, failing)
		var ce *CeilingError
		if !errors.As(err, &ce) {
			t.Fatalf("err = %v, want a CeilingError", err)
		}
		if d := time.Since(start); d != 20*time.Second {
			t.Errorf("ended after %v", d)
		}
	})
}

func TestCallerCancelIsNoCeiling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := Do(ctx, Options{Ceiling: time.Minute}, hang)
		var ce *CeilingError
		if errors.As(err, &ce) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the caller's deadline", err)
		}
	})
}

func TestSlowHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var slow []int
		var calls atomic.Int32
		call := func(ctx context.Context) (provider.Response, error) {
			switch calls.Add(1) {
			case 1: // slow, then a retryable failure
				time.Sleep(50 * time.Second)
				return provider.Response{}, provider.ClassifyStatus(500, "oops")
			case 2: // fast failure: no hint
				return provider.Response{}, provider.ClassifyStatus(500, "oops")
			}
			time.Sleep(46 * time.Second) // slow success
			return provider.Response{ID: "ok"}, nil
		}
		opts := Options{Attempts: 5, SlowAfter: 45 * time.Second, Slow: func(n int) { mu.Lock(); slow = append(slow, n); mu.Unlock() }}
		resp, err := Do(context.Background(), opts, call)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if err != nil || resp.ID != "ok" {
			t.Fatalf("resp %+v, err %v", resp, err)
		}
		if len(slow) != 2 || slow[0] != 1 || slow[1] != 3 {
			t.Errorf("slow hints for attempts %v, want [1 3]", slow)
		}
		if SlowMessage("dev") != "dev is taking longer than expected… still waiting on the model." {
			t.Error(SlowMessage("dev"))
		}
	})
}
