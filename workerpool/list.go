package workerpool

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

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

// List asks every live worker (the micro service's STATS verb) for its
// load, and returns those that answer within wait, sorted by pool and
// name; pool "" lists every pool.
func List(ctx context.Context, b *bus.Bus, pool string, wait time.Duration) ([]LiveWorker, error) {
	if wait <= 0 {
		wait = time.Second
	}
	stats, err := b.ServiceStats(ctx, workstore.ServiceName, wait)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	var out []LiveWorker
	for _, st := range stats {
		var ws messages.WorkerStatus
		if err := json.Unmarshal(st.Data, &ws); err != nil {
			continue
		}
		if pool != "" && ws.Pool != pool {
			continue
		}
		out = append(out, LiveWorker{WorkerStatus: ws, ID: st.ID, Started: st.Started})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pool != out[j].Pool {
			return out[i].Pool < out[j].Pool
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Worker < out[j].Worker
	})
	return out, nil
}
