package busserver

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
)

// ClusterOptions configure a local cluster of bus servers: for tests and
// manual trials of worker pools on one machine (`make cluster`), never a
// deployment (no TLS; everything on 127.0.0.1).
type ClusterOptions struct {
	// Home is JAZZ_HOME: the identities (as `jazz bus serve` makes them),
	// each node's store under Home/bus/cluster/<node>, and server.json
	// naming every node.
	Home string
	// Nodes defaults to 3; the pools' assets are replicated on all of
	// them (at most 3 copies).
	Nodes int
	// Ports are the client ports, one per node; empty picks free ones.
	Ports []int
	// Logf receives the servers' notices; nil keeps them quiet.
	Logf func(format string, args ...any)
}

// Cluster is a running local cluster.
type Cluster struct {
	o        ClusterOptions
	roles    map[string]string
	admin    nkeys.KeyPair
	adminPub string
	routeURL func(port int) *url.URL

	mu    sync.Mutex
	nodes []*clusterNode
	ids   identities

	stop chan struct{}
	done chan struct{}
	// placed is when placeConsumers last moved each consumer; only the
	// watch goroutine touches it.
	placed map[string]time.Time
}

type clusterNode struct {
	opts server.Options
	srv  *server.Server
}

// StartCluster starts the nodes, waits for JetStream to have a leader,
// creates the approvals and worker-pool assets (replicated) and writes
// server.json with every node's URL.
func StartCluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	if o.Home == "" {
		return nil, errors.New("bus cluster: no JAZZ_HOME")
	}
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if len(o.Ports) != 0 && len(o.Ports) != o.Nodes {
		return nil, fmt.Errorf("bus cluster: %d ports for %d nodes", len(o.Ports), o.Nodes)
	}
	roles, admin, adminPub, err := serverKeys(o.Home)
	if err != nil {
		return nil, err
	}
	ids, err := readIdentities(o.Home)
	if err != nil {
		return nil, err
	}
	// Routes authenticate with a password made for this cluster, so
	// nothing else on the machine can join it as a node.
	var pw [16]byte
	if _, err := rand.Read(pw[:]); err != nil {
		return nil, err
	}
	routeUser, routePass := "route", hex.EncodeToString(pw[:])
	c := &Cluster{o: o, roles: roles, admin: admin, adminPub: adminPub, ids: ids, routeURL: func(port int) *url.URL {
		return &url.URL{Scheme: "nats", User: url.UserPassword(routeUser, routePass), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	}}
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	// A clustered JetStream node needs its routes from the start: every
	// route port is chosen before the first node starts. Another process
	// may take one of them meanwhile: then the nodes start again on fresh
	// ports (any other failure is returned at once).
	for attempt := 1; ; attempt++ {
		routePorts, err := freePorts(o.Nodes)
		if err != nil {
			return nil, err
		}
		err = c.startNodes(routePorts, routeUser, routePass)
		if err == nil {
			break
		}
		for i := range c.nodes {
			c.Stop(i)
		}
		c.nodes = nil
		if attempt == 3 || ctx.Err() != nil || !portTaken(routePorts) {
			return nil, err
		}
	}
	if err := c.ensureAssets(ctx); err != nil {
		return nil, err
	}
	info := Info{URL: c.URL(), PID: os.Getpid()}
	data, _ := json.MarshalIndent(info, "", "  ")
	if err := approvals.WriteSecret(InfoPath(o.Home), append(data, '\n')); err != nil {
		return nil, err
	}
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	c.placed = map[string]time.Time{}
	go c.watch()
	ok = true
	return c, nil
}

// startNodes starts every node with cluster routes on routePorts.
func (c *Cluster) startNodes(routePorts []int, routeUser, routePass string) error {
	for i := 0; i < c.o.Nodes; i++ {
		port := -1
		if len(c.o.Ports) > 0 {
			port = c.o.Ports[i]
		}
		name := fmt.Sprintf("jazz-%d", i+1)
		store := filepath.Join(c.o.Home, approvals.BusDir, "cluster", name)
		if err := os.MkdirAll(store, 0o700); err != nil {
			return fmt.Errorf("create store %s: %w", store, err)
		}
		var routes []*url.URL
		for j, rp := range routePorts {
			if j != i {
				routes = append(routes, c.routeURL(rp))
			}
		}
		cluster := server.ClusterOpts{Name: "jazz", Host: "127.0.0.1", Port: routePorts[i],
			Username: routeUser, Password: routePass}
		if c.o.Nodes == 1 {
			// One node is a standalone server: JetStream refuses a
			// cluster without routes.
			cluster, routes = server.ClusterOpts{}, nil
		}
		// nats-server's ReloadOptions sorts the running server's own
		// option slices in place (imposeOrder) while its route goroutines
		// read them: built in that order, a reload never moves an element.
		sortRoutes(routes)
		so := serverOptions(name, "127.0.0.1", port, store, c.o.Logf == nil, users(c.roles, c.ids.approvers, c.ids.workers, c.adminPub))
		so.Cluster, so.Routes = cluster, routes
		so.PingInterval, so.MaxPingsOut = 2*time.Second, 2
		n := &clusterNode{opts: so}
		if err := c.startNode(n); err != nil {
			return err
		}
		// A restart keeps the node's client port: clients find it where
		// it was.
		n.opts.Port = n.srv.Addr().(*net.TCPAddr).Port
		c.nodes = append(c.nodes, n)
	}
	return nil
}

// watch lets in the approvers and workers added to JAZZ_HOME, as `jazz
// bus serve` does.
func (c *Cluster) watch() {
	defer close(c.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			if err := c.Reload(); err != nil && c.o.Logf != nil {
				c.o.Logf("identities not reloaded: %v", err)
			}
			c.place()
		}
	}
}

// sortRoutes puts routes in the order nats-server's reload imposes.
func sortRoutes(routes []*url.URL) {
	slices.SortFunc(routes, func(a, b *url.URL) int { return cmp.Compare(a.String(), b.String()) })
}

// Reload makes every node know JAZZ_HOME's approvers and workers now.
func (c *Cluster) Reload() error {
	ids, err := readIdentities(c.o.Home)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if reflect.DeepEqual(ids, c.ids) {
		return nil
	}
	// The pools' consumers first, through any running node: a worker let
	// in finds its pool.
	var perr error
	for _, n := range c.nodes {
		if n.srv == nil {
			continue
		}
		if perr = ensurePools(context.Background(), n.srv, c.adminPub, c.admin, PoolLeases(ids.workers)); perr == nil {
			break
		}
	}
	if perr != nil {
		return fmt.Errorf("the workers' pools: %w", perr)
	}
	var errs []error
	for _, n := range c.nodes {
		n.opts.Nkeys = users(c.roles, ids.approvers, ids.workers, c.adminPub)
		if n.srv != nil {
			next := n.opts
			next.Routes = slices.Clone(n.opts.Routes) // the reload sorts what it is given
			if err := n.srv.ReloadOptions(&next); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", n.opts.ServerName, err))
			}
		}
	}
	c.ids = ids
	return errors.Join(errs...)
}

// freePorts finds n ports free on 127.0.0.1 now.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("bus cluster: find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// portTaken reports whether another process listens on one of ports.
func portTaken(ports []int) bool {
	for _, p := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return true
		}
		_ = l.Close()
	}
	return false
}

func (c *Cluster) startNode(n *clusterNode) error {
	opts := n.opts
	srv, err := server.NewServer(&opts)
	if err != nil {
		return fmt.Errorf("create NATS server %s: %w", n.opts.ServerName, err)
	}
	if c.o.Logf != nil {
		name := n.opts.ServerName
		srv.SetLoggerV2(logger{func(f string, a ...any) { c.o.Logf(name+": "+f, a...) }}, false, false, false)
	}
	srv.Start()
	if !srv.ReadyForConnections(15 * time.Second) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return fmt.Errorf("NATS server %s did not start (is port %d in use?)", n.opts.ServerName, n.opts.Port)
	}
	n.srv = srv
	return nil
}

// readyBound bounds the wait for a cluster's JetStream: the meta leader
// is elected within a second on an idle machine, but a loaded one (the
// test suite beside other builds) can take many times that.
const readyBound = 2 * time.Minute

// ensureAssets creates the replicated assets once every node knows the
// cluster's JetStream leader, and returns when every node holds a
// current copy of each: a client may then use any node at once.
func (c *Cluster) ensureAssets(ctx context.Context) error {
	replicas := min(len(c.nodes), 3)
	ctx, cancel := context.WithTimeout(ctx, readyBound)
	defer cancel()
	// An API request sent before there is a meta leader is not answered
	// at all (it waited out its whole timeout): ask only once there is.
	if err := c.waitHealthy(ctx, server.HealthzOptions{JSMetaOnly: true}); err != nil {
		return fmt.Errorf("bus cluster: JetStream has no leader: %w", err)
	}
	var last error
	for {
		last = c.tryAssets(ctx, replicas)
		if last == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bus cluster: JetStream did not become ready: %w", last)
		case <-time.After(250 * time.Millisecond):
		}
	}
	if err := c.waitHealthy(ctx, server.HealthzOptions{}); err != nil {
		return fmt.Errorf("bus cluster: the worker-pool and approvals streams are not current on every node: %w", err)
	}
	return nil
}

// waitHealthy polls every running node's health check (opts) until all
// pass or ctx ends, which returns the last failure.
func (c *Cluster) waitHealthy(ctx context.Context, opts server.HealthzOptions) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		why := ""
		c.mu.Lock()
		for _, n := range c.nodes {
			if n.srv == nil {
				continue
			}
			o := opts
			if h := n.srv.Healthz(&o); h.StatusCode != http.StatusOK {
				why = fmt.Sprintf("%s: %s", n.opts.ServerName, firstNonEmpty(h.Error, h.Status))
				break
			}
		}
		c.mu.Unlock()
		if why == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s (%w)", why, ctx.Err())
		case <-tick.C:
		}
	}
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func (c *Cluster) tryAssets(ctx context.Context, replicas int) error {
	srv, err := c.node(0)
	if err != nil {
		return err
	}
	actx, done := context.WithTimeout(ctx, 10*time.Second)
	defer done()
	c.mu.Lock()
	pools := PoolLeases(c.ids.workers)
	c.mu.Unlock()
	return ensureAssets(actx, srv, c.adminPub, c.admin, replicas, pools)
}

func (c *Cluster) node(i int) (*server.Server, error) {
	c.mu.Lock()
	srv := c.nodes[i].srv
	c.mu.Unlock()
	if srv == nil {
		return nil, fmt.Errorf("node %d is down", i)
	}
	return srv, nil
}

// AdminBus is an in-process connection to node i with every
// permission; the admin key exists only in this process.
func (c *Cluster) AdminBus(ctx context.Context, i int) (*bus.Bus, error) {
	srv, err := c.node(i)
	if err != nil {
		return nil, err
	}
	b, err := adminBus(ctx, srv, c.adminPub, c.admin)
	if err != nil {
		return nil, fmt.Errorf("node %d: %w", i, err)
	}
	return b, nil
}

// URL lists every node's client URL, comma-separated, as clients take
// it (--nats-url): a client fails over to any of them.
func (c *Cluster) URL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	urls := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		urls[i] = c.nodeURL(n)
	}
	return strings.Join(urls, ",")
}

// NodeURL is node i's client URL.
func (c *Cluster) NodeURL(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodeURL(c.nodes[i])
}

func (c *Cluster) nodeURL(n *clusterNode) string {
	return "nats://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(n.opts.Port))
}

// Nodes is how many nodes the cluster has (up or down).
func (c *Cluster) Nodes() int { return len(c.nodes) }

// NodeOf is the index of the node where a client connection named name
// is connected, or -1.
func (c *Cluster) NodeOf(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, n := range c.nodes {
		if n.srv == nil {
			continue
		}
		cz, err := n.srv.Connz(&server.ConnzOptions{})
		if err != nil {
			continue
		}
		for _, ci := range cz.Conns {
			if ci.Name == name {
				return i
			}
		}
	}
	return -1
}

// Stop shuts node i down, as if its machine went away: its clients are
// cut and must fail over.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	n := c.nodes[i]
	srv := n.srv
	n.srv = nil
	c.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// Restart starts a stopped node i again on its ports and store.
func (c *Cluster) Restart(i int) error {
	c.mu.Lock()
	n := c.nodes[i]
	c.mu.Unlock()
	if n.srv != nil {
		return nil
	}
	fresh := &clusterNode{opts: n.opts}
	if err := c.startNode(fresh); err != nil {
		return err
	}
	c.mu.Lock()
	n.srv = fresh.srv
	c.mu.Unlock()
	return nil
}

// Close stops every node.
func (c *Cluster) Close() {
	if c.stop != nil {
		close(c.stop)
		<-c.done
		c.stop = nil
	}
	for i := range c.nodes {
		c.Stop(i)
	}
}
