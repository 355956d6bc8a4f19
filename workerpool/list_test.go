package workerpool_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/workerpool"
	"github.com/jazz-run/jazz/workstore"
)

// TestListShowsOnlyWhatWorkersSayForThemselves: a registered worker may
// answer the micro service's STATS as it likes; `jazz workers` must list
// only what each named worker confirms at its own status subject, which
// the server lets no other identity hear.
func TestListShowsOnlyWhatWorkersSayForThemselves(t *testing.T) {
	f := newFixture(t, 1, fanOut(0, nil))
	lease := 5 * time.Second
	a := f.worker("list-a", 2, lease)
	b := f.worker("list-b", 1, lease)
	aKey, bKey := a.Status().Worker, b.Status().Worker

	// The impostor holds list-c's identity: a real worker of the pool.
	c, err := busserver.AddWorker(f.home, "list-c")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cluster.Reload(); err != nil {
		t.Fatal(err)
	}
	seed, err := nats.NkeyOptionFromSeed(busserver.WorkerSeedPath(f.home, "list-c"))
	if err != nil {
		t.Fatal(err)
	}
	violations := make(chan error, 16)
	nc, err := nats.Connect(f.cluster.URL(), seed, nats.CustomInboxPrefix(busserver.WorkerInboxPrefix(c.PublicKey)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ghost, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	ghostKey, _ := ghost.PublicKey()
	pool := workerpool.DefaultPool
	forged := []messages.WorkerStatus{
		// list-a's key with a load and name of the impostor's choosing.
		{Worker: aKey, Name: "list-a", Pool: pool, Capacity: 64, Running: 63, Done: 1000, Version: "v9.9.9"},
		// A key no one holds.
		{Worker: ghostKey, Name: "ghost", Pool: pool, Capacity: 8},
		// Not a key: sanitized to a subject token, it could alias one.
		{Worker: "U.*", Name: "alias", Pool: pool, Capacity: 8},
	}
	for i, ws := range forged {
		svc, err := micro.AddService(nc, micro.Config{Name: workstore.ServiceName, Version: "0.0.1",
			StatsHandler: func(*micro.Endpoint) any { return ws }})
		if err != nil {
			t.Fatalf("forged service %d: %v", i, err)
		}
		defer svc.Stop()
		// STATS lists only instances with an endpoint; the impostor may
		// serve its own status subject, and tries list-a's.
		if err := svc.AddEndpoint("status", micro.HandlerFunc(func(r micro.Request) { _ = r.RespondJSON(ws) }),
			micro.WithEndpointSubject(messages.WorkStatusSubject(pool, c.PublicKey))); err != nil {
			t.Fatal(err)
		}
	}
	stolen, err := micro.AddService(nc, micro.Config{Name: "not-a-worker", Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer stolen.Stop()
	_ = stolen.AddEndpoint("status", micro.HandlerFunc(func(r micro.Request) { _ = r.RespondJSON(forged[0]) }),
		micro.WithEndpointSubject(messages.WorkStatusSubject(pool, aKey)))
	_ = nc.Flush()
	select {
	case err := <-violations:
		t.Logf("the server refused the impostor: %v", err)
	case <-time.After(2 * time.Second):
		t.Fatal("the server let another worker subscribe to list-a's status subject")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	observer, err := busclient.Connect(ctx, busclient.Options{URL: f.cluster.URL(),
		Nkey: busserver.RoleSeedPath(f.home, busserver.RoleObserver), Name: "jazz-workers"})
	if err != nil {
		t.Fatal(err)
	}
	defer observer.CloseNow()
	got, err := workerpool.List(ctx, observer, pool, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]messages.WorkerStatus{aKey: a.Status(), bKey: b.Status()}
	if len(got.Workers) != len(want) {
		t.Fatalf("listed %d workers, want list-a and list-b only: %+v", len(got.Workers), got.Workers)
	}
	for _, w := range got.Workers {
		if w.WorkerStatus != want[w.Worker] {
			t.Errorf("listed %+v, want what the worker says: %+v", w.WorkerStatus, want[w.Worker])
		}
		if w.ID == "" || w.Started.IsZero() {
			t.Errorf("%s: no instance id or start: %+v", w.Name, w)
		}
	}
	// The ghost and the alias are unconfirmed; the forged list-a claim is
	// answered by list-a itself.
	if got.Unverified != 2 {
		t.Errorf("unverified claims = %d, want 2 (the ghost key and the alias)", got.Unverified)
	}
}
