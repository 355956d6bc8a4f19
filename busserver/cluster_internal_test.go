package busserver

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

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
