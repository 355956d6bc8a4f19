package workerpool

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

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
func List(ctx context.Context, nc *nats.Conn, pool string, wait time.Duration) ([]LiveWorker, error) {
	if wait <= 0 {
		wait = time.Second
	}
	inbox := nc.NewRespInbox()
	replies := make(chan *nats.Msg, 256)
	sub, err := nc.ChanSubscribe(inbox, replies)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	subject, _ := micro.ControlSubject(micro.StatsVerb, workstore.ServiceName, "")
	if err := nc.PublishRequest(subject, inbox, nil); err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var out []LiveWorker
	for {
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-timer.C:
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
		case m := <-replies:
			var st micro.Stats
			if err := json.Unmarshal(m.Data, &st); err != nil || st.Name != workstore.ServiceName || len(st.Endpoints) == 0 {
				continue
			}
			var ws messages.WorkerStatus
			if err := json.Unmarshal(st.Endpoints[0].Data, &ws); err != nil {
				continue
			}
			if pool != "" && ws.Pool != pool {
				continue
			}
			out = append(out, LiveWorker{WorkerStatus: ws, ID: st.ID, Started: st.Started})
		}
	}
}
