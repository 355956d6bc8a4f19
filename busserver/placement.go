package busserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/jazz-run/jazz/workstore"
)

// A worker pool's consumer hands out a task only after reading it from
// the task stream's copy on the consumer leader's own node. On the
// stream leader's node that copy is written as soon as a quorum holds the
// task; on a follower it waits for the leader's next message saying so,
// one more hop before the consumer's own quorum round and the delivery.
// bench/scale (4 children at once, one worker process, load 14-17)
// measured delivery at 2.4/3.3/2.9 ms after the parent sent the task with
// the two leaders on one node against 3.2/4.2/2.7 ms apart. The cluster
// keeps them together: a consumer that is not led from the task stream
// leader's node is asked to hand its leadership there, which keeps its
// replicated state (delivered and pending records), so no task is handed
// out twice.

// placeAgain bounds how often one consumer is moved: a move the cluster
// refused, or a stream leader that keeps changing, must not make the
// consumer change leaders every second.
const placeAgain = 10 * time.Second

// place runs placeConsumers with a bound, from the watch loop.
func (c *Cluster) place() {
	ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	moved, err := c.placeConsumers(ctx, time.Now())
	if c.o.Logf == nil {
		return
	}
	for _, name := range moved {
		c.o.Logf("worker pool consumer %s: its leader moved to the task stream leader's node", name)
	}
	if err != nil {
		c.o.Logf("%v", err)
	}
}

// placeConsumers moves every replicated consumer of the task stream whose
// leader is not on the stream leader's node; it reports what it moved.
func (c *Cluster) placeConsumers(ctx context.Context, now time.Time) ([]string, error) {
	c.mu.Lock()
	var lead *server.Server
	for _, n := range c.nodes {
		if n.srv != nil && n.srv.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, workstore.TaskStream) {
			lead = n.srv
		}
	}
	c.mu.Unlock()
	if lead == nil {
		return nil, nil // no leader now (an election): next time
	}
	jsz, err := lead.Jsz(&server.JSzOptions{Account: server.DEFAULT_GLOBAL_ACCOUNT, Streams: true, Consumer: true})
	if err != nil {
		return nil, fmt.Errorf("bus cluster: read the task stream's consumers: %w", err)
	}
	var moved []string
	for _, acc := range jsz.AccountDetails {
		for _, st := range acc.Streams {
			if st.Name != workstore.TaskStream {
				continue
			}
			for _, ci := range st.Consumer {
				if ci == nil || ci.Cluster == nil || len(ci.Cluster.Replicas) == 0 || ci.Cluster.Leader == "" ||
					ci.Cluster.Leader == lead.Name() || now.Sub(c.placed[ci.Name]) < placeAgain {
					continue
				}
				c.placed[ci.Name] = now
				if err := c.stepDown(ctx, lead, ci.Name); err != nil {
					return moved, err
				}
				moved = append(moved, ci.Name)
			}
		}
	}
	return moved, nil
}

// stepDown asks consumer's leader to hand over to the node to.
func (c *Cluster) stepDown(ctx context.Context, srv *server.Server, consumer string) error {
	to := srv.Name()
	b, err := adminBus(ctx, srv, c.adminPub, c.admin)
	if err != nil {
		return err
	}
	defer b.CloseNow()
	body, err := json.Marshal(map[string]any{"placement": map[string]string{"preferred": to}})
	if err != nil {
		return err
	}
	m, err := b.Conn().RequestWithContext(ctx, "$JS.API.CONSUMER.LEADER.STEPDOWN."+workstore.TaskStream+"."+consumer, body)
	if err != nil {
		return fmt.Errorf("bus cluster: move consumer %s to %s: %w", consumer, to, err)
	}
	var resp struct {
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return fmt.Errorf("bus cluster: move consumer %s to %s: the answer does not decode: %w", consumer, to, err)
	}
	if resp.Error != nil {
		return fmt.Errorf("bus cluster: move consumer %s to %s: %s", consumer, to, resp.Error.Description)
	}
	return nil
}
