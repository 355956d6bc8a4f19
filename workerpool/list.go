package workerpool

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/workstore"
)

// LiveWorker is one worker that answered, as `jazz workers` lists it.
type LiveWorker struct {
	messages.WorkerStatus
	// ID is the micro service instance id; Started when it joined.
	ID      string    `json:"id"`
	Started time.Time `json:"started"`
}

// Listing is what List found: the workers whose answers are their own,
// and how many claims could not be confirmed by the worker they name.
type Listing struct {
	Workers []LiveWorker
	// Unverified counts the distinct (pool, key) claims heard on STATS
	// that the named worker's own status subject did not confirm: an
	// impostor, a worker that left between the two questions, or one
	// too slow to answer within the wait.
	Unverified int
}

// verifyParallel bounds the status questions in flight at once.
const verifyParallel = 16

// List finds the live workers of pool ("" lists every pool), sorted by
// pool and name.
//
// STATS (the micro service's verb) is heard by every worker, and any of
// them may answer it with whatever name, key and load it likes; so STATS
// only says who claims to be live. Each claim is then put to the claimed
// worker's own status subject (jazz.work.<pool>.to.<key>.status), which
// the bus server lets only the holder of that key subscribe to
// (busserver.WorkerPermissions), on a fresh reply subject no worker has
// been given: what is shown is what the worker named answered for itself.
// Each phase waits at most wait.
func List(ctx context.Context, b *bus.Bus, pool string, wait time.Duration) (Listing, error) {
	if wait <= 0 {
		wait = time.Second
	}
	stats, err := b.ServiceStats(ctx, workstore.ServiceName, wait)
	if err != nil {
		return Listing{}, fmt.Errorf("list workers: %w", err)
	}
	type claim struct{ pool, key string }
	seen := map[claim]bool{}
	var claims []claim
	for _, st := range stats {
		var ws messages.WorkerStatus
		if err := json.Unmarshal(st.Data, &ws); err != nil {
			continue
		}
		c := claim{ws.Pool, ws.Worker}
		if (pool != "" && c.pool != pool) || seen[c] {
			continue
		}
		seen[c] = true
		claims = append(claims, c)
	}
	var (
		mu  sync.Mutex
		out Listing
		wg  sync.WaitGroup
		sem = make(chan struct{}, verifyParallel)
	)
	unverified := func() {
		mu.Lock()
		out.Unverified++
		mu.Unlock()
	}
	vctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for _, c := range claims {
		// A key that is not an nkey names no identity the server
		// admits; and since subject tokens are sanitized, a key with
		// other characters could alias a real worker's subject.
		if !nkeys.IsValidPublicUserKey(c.key) {
			unverified()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-vctx.Done():
				unverified()
				return
			}
			w, ok := confirm(vctx, b, c.pool, c.key, wait)
			if !ok {
				unverified()
				return
			}
			mu.Lock()
			out.Workers = append(out.Workers, w)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(out.Workers, func(i, j int) bool {
		a, b := out.Workers[i], out.Workers[j]
		if a.Pool != b.Pool {
			return a.Pool < b.Pool
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Worker < b.Worker
	})
	return out, nil
}

// confirm asks the worker with key, at its own status subject, for its
// status in pool; ok only when it answers for that very key and pool.
func confirm(ctx context.Context, b *bus.Bus, pool, key string, wait time.Duration) (LiveWorker, bool) {
	st, err := b.AskInstance(ctx, messages.WorkStatusSubject(pool, key), wait)
	if err != nil {
		return LiveWorker{}, false
	}
	var ws messages.WorkerStatus
	if err := json.Unmarshal(st.Data, &ws); err != nil || ws.Worker != key || ws.Pool != pool {
		return LiveWorker{}, false
	}
	return LiveWorker{WorkerStatus: ws, ID: st.ID, Started: st.Started}, true
}
