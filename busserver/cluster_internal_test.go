package busserver

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/workstore"
)

// A started cluster is ready on every node: each has a meta leader and a
// current copy of the worker-pool streams, so a client may use any node
// at once. The start does not wait out an API request sent before the
// cluster had a leader (it went unanswered for its whole 10 s bound and
// every cluster took over 10 s to start).
func TestClusterReadyOnEveryNode(t *testing.T) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := StartCluster(ctx, ClusterOptions{Home: t.TempDir(), Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	took := time.Since(start)
	for i, n := range c.nodes {
		if h := n.srv.Healthz(&server.HealthzOptions{}); h.StatusCode != http.StatusOK {
			t.Errorf("node %d not healthy after start: %+v", i, h)
		}
		for _, s := range []string{workstore.TaskStream, workstore.OutStream} {
			if !n.srv.JetStreamIsStreamCurrent("$G", s) {
				t.Errorf("node %d: stream %s not current after start", i, s)
			}
		}
	}
	if took > 8*time.Second {
		t.Fatalf("the cluster took %s to start", took)
	}
}

// nats-server's ReloadOptions sorts the running server's own option
// slices in place (imposeOrder) while its goroutines read them (a route
// being solicited reads Routes): a reload that moved an element raced
// with the server, and `go test -race` caught it when a worker was added
// right after a cluster start. Every node's routes and users are built in
// that order, so a reload moves nothing, and a reload right after the
// start, with a new approver, is clean under -race.
func TestReloadMovesNoOptionUnderTheServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	home := t.TempDir()
	c, err := StartCluster(ctx, ClusterOptions{Home: home, Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	check := func(when string) {
		t.Helper()
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, n := range c.nodes {
			if !slices.IsSortedFunc(n.opts.Routes, func(a, b *url.URL) int { return cmp.Compare(a.String(), b.String()) }) {
				t.Errorf("%s: node %d's routes are not in reload order: %v", when, i, n.opts.Routes)
			}
			if !slices.IsSortedFunc(n.opts.Nkeys, func(a, b *server.NkeyUser) int { return cmp.Compare(a.Nkey, b.Nkey) }) {
				t.Errorf("%s: node %d's users are not in reload order", when, i)
			}
		}
	}
	check("after start")
	for _, name := range []string{"alice", "bob", "carol"} {
		if _, _, err := approvals.AddApprover(home, name, "read-only", false); err != nil {
			t.Fatal(err)
		}
		if err := c.Reload(); err != nil {
			t.Fatalf("reload after adding %s: %v", name, err)
		}
	}
	check("after reloads")
}

// A worker pool's consumer is led from the task stream leader's node
// (a follower's copy of a task lags the leader's by a hop): one moved
// elsewhere is moved back by the cluster's watch, within its period and
// the consumer's new election.
func TestPoolConsumerLedFromTaskStreamLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := StartCluster(ctx, ClusterOptions{Home: t.TempDir(), Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := c.AdminBus(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.CloseNow()
	js, err := b.JetStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	name := workstore.ConsumerName("p")
	if _, err := js.Queue(ctx, workstore.TaskStream, bus.QueueConfig{Durable: name, FilterSubject: messages.WorkTaskSubject("p"),
		AckWait: 10 * time.Second, MaxDeliver: 2, MaxAckPending: -1, MaxWaiting: 16}); err != nil {
		t.Fatal(err)
	}
	// leaders names the task stream's and the consumer's leader nodes
	// (-1: none now).
	leaders := func() (stream, consumer int) {
		stream, consumer = -1, -1
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, n := range c.nodes {
			if n.srv.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, workstore.TaskStream) {
				stream = i
			}
			if n.srv.JetStreamIsConsumerLeader(server.DEFAULT_GLOBAL_ACCOUNT, workstore.TaskStream, name) {
				consumer = i
			}
		}
		return stream, consumer
	}
	deadline := time.Now().Add(30 * time.Second)
	s, l := leaders()
	for (s < 0 || l < 0) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		s, l = leaders()
	}
	if s < 0 || l < 0 {
		t.Fatalf("no leaders: stream on node %d, consumer on node %d", s, l)
	}
	// Led from elsewhere (as an election may leave it): moved back.
	other := (s + 1) % 3
	if err := c.stepDown(ctx, c.nodes[other].srv, name); err != nil && l == s {
		t.Fatal(err)
	}
	for time.Now().Before(deadline) {
		if s, l = leaders(); s >= 0 && s == l {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the consumer is led from node %d, the task stream from node %d", l, s)
}
