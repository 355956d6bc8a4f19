package busserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/workstore"
)

func serve(t *testing.T, home string, o busserver.Options) *busserver.Server {
	t.Helper()
	o.Home, o.Port = home, -1
	if o.Reload == 0 {
		o.Reload = 50 * time.Millisecond
	}
	s, err := busserver.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// violations collects the server's permission errors for one connection.
type violations struct {
	mu   sync.Mutex
	errs []string
}

func (v *violations) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.errs = append(v.errs, err.Error())
}

func (v *violations) wait(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		v.mu.Lock()
		for _, e := range v.errs {
			if strings.Contains(e, want) {
				v.mu.Unlock()
				return
			}
		}
		v.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no permission violation mentioning %q (got %v)", want, v.errs)
}

func connectAs(t *testing.T, url, seedFile string, v *violations) *nats.Conn {
	t.Helper()
	o := busclient.Options{URL: url, Nkey: seedFile}
	opts, err := o.Client().NATSOptions(url)
	if err != nil {
		t.Fatal(err)
	}
	if v != nil {
		opts = append(opts, nats.ErrorHandler(v.handler))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("connect with %s: %v", seedFile, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func TestIdentitiesAreWrittenPrivately(t *testing.T) {
	home := t.TempDir()
	serve(t, home, busserver.Options{})
	for _, role := range []string{busserver.RoleRunner, busserver.RoleObserver, busserver.RoleWorker} {
		fi, err := os.Stat(busserver.RoleSeedPath(home, role))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s seed mode %v, want 0600", role, fi.Mode().Perm())
		}
	}
	info, err := busserver.ReadInfo(home)
	if err != nil || !strings.HasPrefix(info.URL, "nats://127.0.0.1:") || info.TLSPin != "" {
		t.Fatalf("server.json: %+v %v", info, err)
	}
}

func TestNoOrWrongCredentialsAreRefused(t *testing.T) {
	home := t.TempDir()
	s := serve(t, home, busserver.Options{})
	if _, err := busclient.Connect(context.Background(), busclient.Options{URL: s.ClientURL()}); err == nil ||
		!strings.Contains(err.Error(), "refused these credentials") {
		t.Fatalf("no credentials: %v", err)
	}
	kp, _ := nkeys.CreateUser()
	seed, _ := kp.Seed()
	stranger := home + "/stranger.nk"
	if err := os.WriteFile(stranger, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := busclient.Connect(context.Background(), busclient.Options{URL: s.ClientURL(), Nkey: stranger}); err == nil {
		t.Fatal("an unknown nkey connected")
	}
}

// Each role can do its job and nothing more; the server, not the client,
// says no.
func TestRolePermissions(t *testing.T) {
	home := t.TempDir()
	a, seed, err := approvals.AddApprover(home, "alice", "high-risk", false)
	if err != nil {
		t.Fatal(err)
	}
	aliceSeed := approvals.ApproverSeedPath(home, "alice")
	if err := approvals.WriteSecret(aliceSeed, seed); err != nil {
		t.Fatal(err)
	}
	s := serve(t, home, busserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var rv violations
	runner := connectAs(t, s.ClientURL(), busserver.RoleSeedPath(home, busserver.RoleRunner), &rv)
	rs, err := approvals.OpenStore(ctx, bus.Wrap(runner), false)
	if err != nil {
		t.Fatal(err)
	}
	req := approvals.Request{RunID: "run-1", RequestID: approvals.NewRequestID(), Tool: "write_file",
		ExecuteTool: "execute_write_file", ExecuteArgs: json.RawMessage(`{"path":"a"}`), RiskTier: "high-risk",
		ExpiresAt: time.Now().Add(time.Minute)}
	req.ActionHash, _ = approvals.ActionHash(req.ExecuteTool, req.ExecuteArgs)
	if _, err := rs.Put(ctx, req); err != nil {
		t.Fatalf("runner records a request: %v", err)
	}
	if err := runner.Publish("jazz.run.run-1.approval.decided", []byte(`{"approved":true}`)); err != nil {
		t.Fatal(err)
	}
	rv.wait(t, "Permissions Violation for Publish to \"jazz.run.run-1.approval.decided\"")

	var ov violations
	observer := connectAs(t, s.ClientURL(), busserver.RoleSeedPath(home, busserver.RoleObserver), &ov)
	os_, err := approvals.OpenStore(ctx, bus.Wrap(observer), false)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := os_.Snapshot(ctx)
	if err != nil || len(recs) != 1 || recs[0].Request.RequestID != req.RequestID {
		t.Fatalf("observer reads pending: %v %+v", err, recs)
	}
	kp, _ := approvals.LoadSigner(aliceSeed)
	env, _ := approvals.SignDecision(kp, approvals.Decision{RunID: "run-1", RequestID: req.RequestID, ActionHash: req.ActionHash, Approved: true}, time.Now(), 0)
	var d approvals.Decision
	_ = env.Open(&d)
	short, done := context.WithTimeout(ctx, time.Second)
	_, err = os_.Decide(short, "run-1", req.RequestID, env, d, time.Now())
	done()
	if err == nil {
		t.Fatal("a read-only identity recorded a decision")
	}
	ov.wait(t, "Permissions Violation for Publish to \"$KV.jazz_approvals.")

	alice := connectAs(t, s.ClientURL(), aliceSeed, nil)
	as, err := approvals.OpenStore(ctx, bus.Wrap(alice), false)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := as.Decide(ctx, "run-1", req.RequestID, env, d, time.Now())
	if err != nil || rec.Status != approvals.StatusApproved {
		t.Fatalf("approver decides: %v %+v", err, rec)
	}
	if a.MaxTier != "high-risk" {
		t.Fatalf("approver %+v", a)
	}
}

func TestAddedApproverConnectsWithoutRestart(t *testing.T) {
	home := t.TempDir()
	s := serve(t, home, busserver.Options{})
	_, seed, err := approvals.AddApprover(home, "bob", "low-risk", false)
	if err != nil {
		t.Fatal(err)
	}
	path := approvals.ApproverSeedPath(home, "bob")
	if err := approvals.WriteSecret(path, seed); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		nc, err := busclient.Connect(context.Background(), busclient.Options{URL: s.ClientURL(), Nkey: path, ReconnectFor: time.Second})
		if err == nil {
			nc.CloseNow()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob never got in: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestTLSIsPinned(t *testing.T) {
	home := t.TempDir()
	s := serve(t, home, busserver.Options{TLS: true})
	info := s.Info()
	if !strings.HasPrefix(info.URL, "tls://") || !strings.HasPrefix(info.TLSPin, "sha256:") {
		t.Fatalf("info %+v", info)
	}
	runner := busserver.RoleSeedPath(home, busserver.RoleRunner)
	nc, err := busclient.Connect(context.Background(), busclient.Options{URL: info.URL, Nkey: runner, TLSPin: info.TLSPin})
	if err != nil {
		t.Fatalf("pinned client: %v", err)
	}
	nc.CloseNow()
	wrong := "sha256:" + strings.Repeat("0", 64)
	if _, err := busclient.Connect(context.Background(), busclient.Options{URL: info.URL, Nkey: runner, TLSPin: wrong}); err == nil ||
		!strings.Contains(err.Error(), "not the pinned") {
		t.Fatalf("wrong pin: %v", err)
	}
	plain := strings.Replace(info.URL, "tls://", "nats://", 1)
	opts, _ := busclient.Options{Nkey: runner}.Client().NATSOptions(plain)
	if nc, err := nats.Connect(plain, append(opts, nats.MaxReconnects(0))...); err == nil {
		nc.Close()
		t.Fatal("a plain-text client connected to a TLS server")
	}
	// Restarting keeps the certificate, so the pin stays valid.
	s.Close()
	s2 := serve(t, home, busserver.Options{TLS: true})
	if s2.Info().TLSPin != info.TLSPin {
		t.Fatal("the certificate changed across restarts")
	}
}

func TestNonLoopbackNeedsTLS(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "::1": true, "localhost": true, "0.0.0.0": false, "10.1.2.3": false, "example.com": false} {
		if got := busserver.IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v", host, got)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"nats://user:secret@host:4222":           "nats://user:***@host:4222",
		"nats://secret@h:1,nats://a:secret@h2:2": "nats://***@h:1,nats://a:***@h2:2",
		"nats://u:se@cret@host":                  "nats://u:***@host",
		"tls://u:%73ecret@host":                  "tls://u:***@host",
		"nats://127.0.0.1:4222":                  "nats://127.0.0.1:4222",
	} {
		got := busclient.Redact(in)
		if got != want || strings.Contains(got, "secret") || strings.Contains(got, "cret") {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	_ = errors.New
}

// A removed approver (jazz bus remove-approver) loses the connection it
// holds, not only new ones: within the reload period the server closes
// it, and it cannot come back; the approver who stays keeps theirs.
func TestRemovedApproverIsDisconnected(t *testing.T) {
	home := t.TempDir()
	for _, name := range []string{"alice", "bob"} {
		if _, seed, err := approvals.AddApprover(home, name, "low-risk", false); err != nil {
			t.Fatal(err)
		} else if err := approvals.WriteSecret(approvals.ApproverSeedPath(home, name), seed); err != nil {
			t.Fatal(err)
		}
	}
	// Bob's seed, as someone who copied it holds it.
	bobSeed, err := os.ReadFile(approvals.ApproverSeedPath(home, "bob"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bob.nk")
	if err := os.WriteFile(path, bobSeed, 0o600); err != nil {
		t.Fatal(err)
	}
	s := serve(t, home, busserver.Options{})
	alice, err := busclient.Connect(context.Background(), busclient.Options{URL: s.ClientURL(), Nkey: approvals.ApproverSeedPath(home, "alice")})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.CloseNow()
	o := busclient.Options{URL: s.ClientURL(), Nkey: path}
	opts, err := o.Client().NATSOptions(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	nc, err := nats.Connect(s.ClientURL(), append(opts, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }))...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := approvals.RemoveApprover(home, "bob"); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	// Either the connection is closed outright, or it is dropped and
	// every reconnect is refused: in both cases it stops being connected.
	deadline := time.After(5 * time.Second)
	for nc.IsConnected() {
		select {
		case <-closed:
		case <-deadline:
			t.Fatal("bob's connection outlived his removal by 5 s")
		case <-time.After(10 * time.Millisecond):
			continue
		}
		break
	}
	t.Logf("disconnected %s after removal (reload every 50 ms)", time.Since(removed).Round(time.Millisecond))
	time.Sleep(300 * time.Millisecond)
	if nc.IsConnected() {
		t.Fatal("bob got back in after his removal")
	}
	if !alice.Connected() {
		t.Error("removing bob disconnected alice")
	}
}

// The bus server, not a worker, makes the pools' consumers: the default
// pool's at start, an added worker's pools (with the longest lease any of
// their workers lists) before the worker is let in, and a worker may take
// from its own pools' consumers only.
func TestServerMakesTheWorkersPools(t *testing.T) {
	home := t.TempDir()
	if _, err := busserver.AddWorker(home, "w0", busserver.Pool{Name: "gpu", LeaseMs: 700}); err != nil {
		t.Fatal(err)
	}
	s := serve(t, home, busserver.Options{})
	admin, err := s.AdminBus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.CloseNow()
	ajs, err := admin.JetStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lease := func(pool string) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		q, err := ajs.BindQueue(ctx, workstore.TaskStream, workstore.ConsumerName(pool))
		if err != nil {
			return 0, err
		}
		return q.AckWait(), nil
	}
	for pool, want := range map[string]time.Duration{"default": workstore.DefaultLease, "gpu": 700 * time.Millisecond} {
		if got, err := lease(pool); err != nil || got != want {
			t.Fatalf("pool %s at start: lease %s, %v; want %s", pool, got, err, want)
		}
	}
	_, err = busserver.AddWorker(home, "w1", busserver.Pool{Name: "gpu", LeaseMs: 3000}, busserver.Pool{Name: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	seed := busserver.WorkerSeedPath(home, "w1")
	deadline := time.Now().Add(5 * time.Second)
	for {
		nc, err := busclient.Connect(context.Background(), busclient.Options{URL: s.ClientURL(), Nkey: seed, ReconnectFor: time.Second})
		if err == nil {
			nc.CloseNow()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("w1 never got in: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Let in means its pools exist already.
	for pool, want := range map[string]time.Duration{"gpu": 3 * time.Second, "cpu": workstore.DefaultLease} {
		if got, err := lease(pool); err != nil || got != want {
			t.Fatalf("pool %s once w1 was let in: lease %s, %v; want %s", pool, got, err, want)
		}
	}
	v := &violations{}
	nc := connectAs(t, s.ClientURL(), seed, v)
	for _, subject := range []string{
		"$JS.API.CONSUMER.MSG.NEXT." + workstore.TaskStream + ".pool_default",
		"$JS.API.CONSUMER.CREATE." + workstore.TaskStream + ".pool_gpu." + messages.WorkTaskSubject("gpu"),
		"$JS.API.CONSUMER.DELETE." + workstore.TaskStream + ".pool_gpu",
	} {
		if err := nc.Publish(subject, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		v.wait(t, subject)
	}
}

func TestWorkersFileRefusesBadPools(t *testing.T) {
	for _, pools := range [][]busserver.Pool{
		{{Name: "a.b"}}, {{Name: ""}}, {{Name: "x"}, {Name: "x"}}, {{Name: "x", LeaseMs: 100}}, {{Name: "x", LeaseMs: 700_000}},
	} {
		if _, err := busserver.AddWorker(t.TempDir(), "w", pools...); err == nil {
			t.Errorf("pools %+v were accepted", pools)
		}
	}
}

// A removed worker (jazz bus remove-worker) loses the connection it
// holds within the reload period and cannot come back; the worker who
// stays keeps theirs, and its seed file is gone.
func TestRemovedWorkerIsDisconnected(t *testing.T) {
	home := t.TempDir()
	for _, name := range []string{"w1", "w2"} {
		if _, err := busserver.AddWorker(home, name); err != nil {
			t.Fatal(err)
		}
	}
	seed, err := os.ReadFile(busserver.WorkerSeedPath(home, "w1"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "w1.nk")
	if err := os.WriteFile(path, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	s := serve(t, home, busserver.Options{})
	connect := func(seedPath string) *nats.Conn {
		o := busclient.Options{URL: s.ClientURL(), Nkey: seedPath}
		opts, err := o.Client().NATSOptions(s.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(s.ClientURL(), append(opts, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	w1, w2 := connect(path), connect(busserver.WorkerSeedPath(home, "w2"))
	if _, err := busserver.RemoveWorker(home, "w3"); err == nil || !strings.Contains(err.Error(), "w1, w2") {
		t.Errorf("removing nobody: %v", err)
	}
	if _, err := busserver.RemoveWorker(home, "w1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(busserver.WorkerSeedPath(home, "w1")); !os.IsNotExist(err) {
		t.Errorf("w1's seed is still there: %v", err)
	}
	removed := time.Now()
	for w1.IsConnected() {
		if time.Since(removed) > 5*time.Second {
			t.Fatal("w1's connection outlived its removal by 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("disconnected %s after removal", time.Since(removed).Round(time.Millisecond))
	time.Sleep(300 * time.Millisecond)
	if w1.IsConnected() {
		t.Fatal("w1 got back in after its removal")
	}
	if !w2.IsConnected() {
		t.Error("removing w1 disconnected w2")
	}
}

// Every runner and approver may write any key of the approvals bucket;
// none may erase other keys with it: a roll-up header (one key, or the
// whole bucket) is refused by the server, and the other runs' records
// stay. A bucket made before (roll-ups on) is hardened when the server
// starts.
func TestNoWriterCanEraseTheApprovalsBucket(t *testing.T) {
	home := t.TempDir()
	_, seed, err := approvals.AddApprover(home, "lou", "read-only", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := approvals.WriteSecret(approvals.ApproverSeedPath(home, "lou"), seed); err != nil {
		t.Fatal(err)
	}
	for round, soften := range []bool{false, true} {
		s := serve(t, home, busserver.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		admin, err := s.AdminBus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conn, _ := admin.Connect(ctx)
		js, _ := jetstream.New(conn)
		if soften {
			// As an older jazz made it: a plain bucket, roll-ups and
			// purges allowed.
			if err := js.DeleteKeyValue(ctx, approvals.Bucket); err != nil {
				t.Fatal(err)
			}
			if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: approvals.Bucket, LimitMarkerTTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s = serve(t, home, busserver.Options{})
			if admin, err = s.AdminBus(ctx); err != nil {
				t.Fatal(err)
			}
			conn, _ = admin.Connect(ctx)
			js, _ = jetstream.New(conn)
		}
		kv, err := js.KeyValue(ctx, approvals.Bucket)
		if err != nil {
			t.Fatal(err)
		}
		victims := []string{fmt.Sprintf("run-a%d.ap-1", round), fmt.Sprintf("run-b%d.ap-2", round)}
		for _, k := range victims {
			if _, err := kv.Put(ctx, k, []byte(`{"status":"pending"}`)); err != nil {
				t.Fatal(err)
			}
		}
		for _, who := range []string{busserver.RoleSeedPath(home, busserver.RoleRunner), approvals.ApproverSeedPath(home, "lou")} {
			nc := connectAs(t, s.ClientURL(), who, nil)
			for _, rollup := range []string{"all", "sub"} {
				for _, key := range []string{"run-x.ap-9", victims[1]} {
					m := nats.NewMsg(approvals.KeySubject(key))
					m.Header.Set("Nats-Rollup", rollup)
					m.Header.Set("KV-Operation", "PURGE")
					reply, err := nc.RequestMsg(m, 2*time.Second)
					if err != nil {
						t.Fatalf("%s: roll-up %s on %s: %v", filepath.Base(who), rollup, key, err)
					}
					var ack struct {
						Error *struct{ Description string } `json:"error"`
					}
					if json.Unmarshal(reply.Data, &ack) != nil || ack.Error == nil {
						t.Errorf("round %d: %s: roll-up %s on %s was stored: %s", round, filepath.Base(who), rollup, key, reply.Data)
					}
				}
			}
		}
		for _, k := range victims {
			if _, err := kv.Get(ctx, k); err != nil {
				t.Errorf("round %d: %s is gone: %v", round, k, err)
			}
		}
		// Keys still expire one by one.
		if _, err := kv.Create(ctx, "run-t.ap-t", []byte(`{}`), jetstream.KeyTTL(time.Second)); err != nil {
			t.Fatalf("round %d: a key with a TTL: %v", round, err)
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if _, err := kv.Get(ctx, "run-t.ap-t"); err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: a key with a 1 s TTL is still there after 5 s", round)
			}
		}
		cancel()
		s.Close()
	}
}

// No identity the server admits reaches the system account's services,
// or any JetStream API that writes, deletes, purges, restores or moves a
// stream; none but a worker reads the task stream, and a worker (whose
// key may leak with its machine) writes nothing a run or an approver
// acts on. The server says no to each (a permissions violation).
func TestNoRoleReachesTheSystemOrWritesStreams(t *testing.T) {
	home := t.TempDir()
	if _, seed, err := approvals.AddApprover(home, "ada", "high-risk", true); err != nil {
		t.Fatal(err)
	} else if err := approvals.WriteSecret(approvals.ApproverSeedPath(home, "ada"), seed); err != nil {
		t.Fatal(err)
	}
	if _, err := busserver.AddWorker(home, "w1", busserver.Pool{Name: "gpu"}); err != nil {
		t.Fatal(err)
	}
	s := serve(t, home, busserver.Options{})
	streams := []string{"KV_" + approvals.Bucket, "KV_" + workstore.Bucket, workstore.TaskStream, workstore.OutStream, approvals.AuditStream, approvals.PolicyStream}
	var everyone []string
	for _, sys := range []string{"$SYS.REQ.SERVER.PING", "$SYS.REQ.SERVER.PING.CONNZ", "$SYS.REQ.ACCOUNT.PING.CONNZ", "$SYS.REQ.ACCOUNT.$G.CONNZ",
		"$SYS.REQ.USER.INFO", "$SYS.REQ.SERVER.x.RELOAD", "$JS.API.ACCOUNT.PURGE.$G", "$JS.API.META.LEADER.STEPDOWN", "$JS.API.SERVER.REMOVE"} {
		everyone = append(everyone, sys)
	}
	for _, st := range streams {
		for _, op := range []string{"STREAM.CREATE", "STREAM.UPDATE", "STREAM.DELETE", "STREAM.PURGE", "STREAM.MSG.DELETE", "STREAM.SNAPSHOT",
			"STREAM.RESTORE", "STREAM.LEADER.STEPDOWN", "STREAM.PEER.REMOVE"} {
			everyone = append(everyone, "$JS.API."+op+"."+st)
		}
		everyone = append(everyone, "$JS.API.CONSUMER.DURABLE.CREATE."+st+".x", "$JS.API.CONSUMER.LEADER.STEPDOWN."+st+".x")
	}
	task := []string{"$JS.API.DIRECT.GET." + workstore.TaskStream, "$JS.API.STREAM.MSG.GET." + workstore.TaskStream,
		"$JS.API.CONSUMER.CREATE." + workstore.TaskStream + ".x", "$JS.API.CONSUMER.DELETE." + workstore.TaskStream + "." + workstore.ConsumerName("default")}
	worker := append(append([]string{}, everyone...), task[2:]...)
	worker = append(worker, "$JS.API.DIRECT.GET.KV_"+approvals.Bucket, "$JS.API.CONSUMER.CREATE.KV_"+approvals.Bucket+".x",
		approvals.KeySubject("run-1.ap-1"), workstore.KeySubject("cancel.t1"), messages.PolicySubject("run-1"),
		messages.InputSignedSubject("run-1"), messages.ApprovalDecidedSubject("run-1"), messages.EventSubject("run-1", "text"),
		approvals.AuditSubject+".run-1")
	// w1 may join gpu alone.
	w1 := append(append([]string{}, worker...), "$JS.API.CONSUMER.MSG.NEXT."+workstore.TaskStream+"."+workstore.ConsumerName("default"))
	for who, subjects := range map[string][]string{
		busserver.RoleSeedPath(home, busserver.RoleRunner):   append(append([]string{}, everyone...), task...),
		busserver.RoleSeedPath(home, busserver.RoleObserver): append(append([]string{}, everyone...), task...),
		approvals.ApproverSeedPath(home, "ada"):              append(append([]string{}, everyone...), task...),
		busserver.WorkerSeedPath(home, "w1"):                 w1,
		busserver.RoleSeedPath(home, busserver.RoleWorker):   worker,
	} {
		var v violations
		nc := connectAs(t, s.ClientURL(), who, &v)
		for _, subj := range subjects {
			if err := nc.PublishRequest(subj, "_INBOX.probe", []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, subj := range subjects {
			v.wait(t, "Permissions Violation for Publish to \""+subj+"\"")
		}
	}
}
