package workerpool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/internal/testutil/syncbuf"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/workstore"
)

// rawConn is a plain NATS connection as one identity, with the server's
// permission violations collected.
type rawConn struct {
	t          *testing.T
	nc         *nats.Conn
	violations chan string
}

func dialAs(t *testing.T, url, seed, inboxPrefix string) *rawConn {
	t.Helper()
	opt, err := nats.NkeyOptionFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	c := &rawConn{t: t, violations: make(chan string, 256)}
	opts := []nats.Option{opt, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case c.violations <- err.Error():
		default:
		}
	})}
	if inboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(inboxPrefix))
	}
	if c.nc, err = nats.Connect(url, opts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.nc.Close)
	return c
}

// refused does act and waits (at most 2 s) for the server to refuse it
// with a violation naming subject.
func (c *rawConn) refused(what, subject string, act func() error) {
	c.t.Helper()
	if err := act(); err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
	_ = c.nc.Flush()
	deadline := time.After(2 * time.Second)
	for {
		select {
		case v := <-c.violations:
			if strings.Contains(v, subject) {
				return
			}
		case <-deadline:
			c.t.Errorf("%s (%s) was allowed", what, subject)
			return
		}
	}
}

func (c *rawConn) pub(subject string, data []byte) func() error {
	return func() error { return c.nc.Publish(subject, data) }
}

func (c *rawConn) sub(subject string) func() error {
	return func() error { _, err := c.nc.SubscribeSync(subject); return err }
}

// A worker (B) that holds the credentials of the pool but was not given a
// task tries everything it can reach against the task another worker (A)
// runs: its forgeries are ignored by the runner, with a warning, and the
// rest is refused by the server; A's task ends as A ran it. A runner
// cannot read the tasks' keys either.
func TestForeignWorkerCannotTouchAnotherWorkersTask(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	f := newFixture(t, 1, fanOut(1, func(r chatserver.Request) chatserver.Turn {
		once.Do(func() { close(started) })
		select {
		case <-release:
		case <-time.After(30 * time.Second):
		}
		return chatserver.Turn{Text: "done by A " + childTask(r)}
	}))
	a := f.worker("worker-a", 1, 2*time.Second)
	bw, err := busserver.AddWorker(f.home, "worker-b", busserver.Pool{Name: workstore.DefaultPool, LeaseMs: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cluster.Reload(); err != nil {
		t.Fatal(err)
	}
	b := dialAs(t, f.cluster.URL(), busserver.WorkerSeedPath(f.home, "worker-b"), busserver.WorkerInboxPrefix(bw.PublicKey))
	aKey := a.Status().Worker

	// A runner of another run watches what the workers report, and every
	// inbox it may read: a task delivered to a worker must not reach it.
	spy := dialAs(t, f.cluster.URL(), busserver.RoleSeedPath(f.home, busserver.RoleRunner), "")
	claims := make(chan string, 8)
	if _, err := spy.nc.Subscribe("jazz.work.*.w.*.*.*."+messages.WorkKindClaim, func(m *nats.Msg) { claims <- m.Subject }); err != nil {
		t.Fatal(err)
	}
	var leaked sync.Map
	if _, err := spy.nc.Subscribe("_INBOX.>", func(m *nats.Msg) {
		if strings.HasPrefix(m.Subject, "_INBOX.w.") {
			leaked.Store(m.Subject, true)
		}
	}); err != nil {
		t.Fatal(err)
	}
	_ = spy.nc.Flush()

	diag := &syncbuf.Buffer{}
	opts := f.runOptions("fan out", "spawn_subagent")
	opts.Stderr = diag
	type result struct {
		out app.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := app.RunAndWait(context.Background(), opts)
		done <- result{out, err}
	}()
	select {
	case <-started:
	case r := <-done:
		t.Fatalf("the run ended before its child started: %v %+v", r.err, r.out)
	case <-time.After(30 * time.Second):
		t.Fatal("the child never started")
	}
	var claim string
	select {
	case claim = <-claims:
	case <-time.After(10 * time.Second):
		t.Fatal("no claim was heard")
	}
	// jazz.work.<pool>.w.<worker>.<run>.<task>.claim
	tok := strings.Split(claim, ".")
	if tok[4] != messages.SubjectToken(aKey) {
		t.Fatalf("claim %s is not worker A's (%s)", claim, aKey)
	}
	pool, runID, taskID := tok[2], tok[5], tok[6]
	enc := func(v any) []byte {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	forged := messages.WorkResult{TaskID: taskID, Attempt: 2, Finished: messages.RunFinished{OK: true, Answer: "forged by B"}}

	// 1. Results for A's task, under B's own key (the server lets B speak
	// there): a later attempt's claim and result, and the current one's.
	bSays := func(kind string, v any) {
		subject := messages.WorkerSubject(pool, bw.PublicKey, runID, taskID, kind)
		if err := b.nc.Publish(subject, enc(v)); err != nil {
			t.Fatal(err)
		}
	}
	bSays(messages.WorkKindClaim, messages.WorkClaimed{TaskID: taskID, Worker: bw.PublicKey, Attempt: 2, LeaseMs: 2000})
	bSays(messages.WorkKindResult, forged)
	forged.Attempt = 1
	bSays(messages.WorkKindResult, forged)
	_ = b.nc.Flush()

	// 1b. A result the server itself puts on A's subject: any stored
	// message comes back to whatever reply subject a DIRECT.GET names,
	// so a record a runner wrote (here, one that reads as a result) is
	// said "by A" without A.
	injected := messages.WorkResult{TaskID: taskID, Attempt: 1, Finished: messages.RunFinished{OK: true, Answer: "injected as A"}}
	if err := spy.nc.Publish(workstore.KeySubject("cancel.zz"), enc(injected)); err != nil {
		t.Fatal(err)
	}
	_ = spy.nc.Flush()
	time.Sleep(100 * time.Millisecond)
	aResult := messages.WorkerSubject(pool, aKey, runID, taskID, messages.WorkKindResult)
	get := enc(map[string]string{"last_by_subj": workstore.KeySubject("cancel.zz")})
	if err := b.nc.PublishRequest("$JS.API.DIRECT.GET.KV_"+workstore.Bucket, aResult, get); err != nil {
		t.Fatal(err)
	}

	// 2. A's gated-action record, written or deleted.
	gated := workstore.KeySubject(workstore.GatedKey(taskID))
	b.refused("writing A's gated record", gated, b.pub(gated, enc(messages.WorkGated{TaskID: taskID, Attempt: 1, Tool: "write_file"})))

	// 3. Settling A's delivery: its ack subject names the task's stream
	// sequence, which B can read off the stream's state.
	admin, err := f.cluster.AdminBus(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.CloseNow()
	ajs, err := jetstream.New(admin.Conn())
	if err != nil {
		t.Fatal(err)
	}
	ictx, idone := context.WithTimeout(context.Background(), 10*time.Second)
	defer idone()
	stream, err := ajs.Stream(ictx, workstore.TaskStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ictx)
	if err != nil {
		t.Fatal(err)
	}
	ack := fmt.Sprintf("$JS.ACK.%s.%s.1.%d.1.%d.0", workstore.TaskStream, workstore.ConsumerName(pool), info.State.LastSeq, time.Now().UnixNano())
	for _, body := range []string{"+ACK", "-NAK", "+TERM", "+WPI"} {
		b.refused("settling A's task with "+body, ack, b.pub(ack, []byte(body)))
	}
	cons, err := ajs.Consumer(ictx, workstore.TaskStream, workstore.ConsumerName(pool))
	if err != nil {
		t.Fatal(err)
	}
	ci, err := cons.Info(ictx)
	if err != nil {
		t.Fatal(err)
	}
	if ci.NumAckPending != 1 || ci.NumRedelivered != 0 {
		t.Errorf("A's delivery was settled by B: %d pending, %d redelivered", ci.NumAckPending, ci.NumRedelivered)
	}

	// 4. Reading what A reports, or what is sent to A.
	b.refused("hearing A's reports", "jazz.work.*.w."+messages.SubjectToken(aKey)+".>", b.sub("jazz.work.*.w."+messages.SubjectToken(aKey)+".>"))
	b.refused("hearing A's decisions", messages.WorkerInbox(pool, aKey), b.sub(messages.WorkerInbox(pool, aKey)))
	b.refused("A's inbox", busserver.WorkerInboxPrefix(aKey)+".>", b.sub(busserver.WorkerInboxPrefix(aKey)+".>"))
	b.refused("a consumer on the reports", "$JS.API.CONSUMER.CREATE."+workstore.OutStream, b.pub("$JS.API.CONSUMER.CREATE."+workstore.OutStream+".x", []byte("{}")))
	b.refused("reading the reports", "$JS.API.DIRECT.GET."+workstore.OutStream, b.pub("$JS.API.DIRECT.GET."+workstore.OutStream, []byte(`{"seq":1}`)))
	b.refused("reading the reports", "$JS.API.STREAM.MSG.GET."+workstore.OutStream, b.pub("$JS.API.STREAM.MSG.GET."+workstore.OutStream, []byte(`{"seq":1}`)))
	b.refused("reading a queued task", "$JS.API.STREAM.MSG.GET."+workstore.TaskStream, b.pub("$JS.API.STREAM.MSG.GET."+workstore.TaskStream, []byte(`{"seq":1}`)))
	kvCons := "$JS.API.CONSUMER.CREATE.KV_" + workstore.Bucket + ".x"
	b.refused("a consumer on the work bucket (it delivers anywhere)", kvCons, b.pub(kvCons, []byte("{}")))

	// 4b. The pool's consumer: its settings are the whole pool's (a
	// longer lease or a pending limit of one stalls every worker), and a
	// consumer delivers to any subject its creator names. Only the bus
	// server creates, changes or deletes one; a worker takes from its own
	// pools' only.
	poolCons := workstore.ConsumerName(pool)
	for _, c := range []struct{ what, subject, body string }{
		{"changing the pool's consumer", "$JS.API.CONSUMER.CREATE." + workstore.TaskStream + "." + poolCons + "." + messages.WorkTaskSubject(pool),
			fmt.Sprintf(`{"stream_name":%q,"action":"update","config":{"durable_name":%q,"filter_subject":%q,"ack_policy":"explicit","ack_wait":600000000000,"max_deliver":2,"max_ack_pending":1,"max_waiting":4096}}`,
				workstore.TaskStream, poolCons, messages.WorkTaskSubject(pool))},
		{"changing the pool's consumer (durable API)", "$JS.API.CONSUMER.DURABLE.CREATE." + workstore.TaskStream + "." + poolCons,
			fmt.Sprintf(`{"stream_name":%q,"config":{"durable_name":%q,"ack_policy":"explicit","ack_wait":600000000000}}`, workstore.TaskStream, poolCons)},
		{"a consumer for a pool nobody joined", "$JS.API.CONSUMER.CREATE." + workstore.TaskStream + ".pool_fresh." + messages.WorkTaskSubject("fresh"),
			fmt.Sprintf(`{"stream_name":%q,"action":"create","config":{"durable_name":"pool_fresh","filter_subject":%q,"ack_policy":"explicit","deliver_subject":%q}}`,
				workstore.TaskStream, messages.WorkTaskSubject("fresh"), messages.WorkerInbox(pool, aKey))},
		{"deleting the pool's consumer", "$JS.API.CONSUMER.DELETE." + workstore.TaskStream + "." + poolCons, ""},
		{"taking from a pool it may not join", "$JS.API.CONSUMER.MSG.NEXT." + workstore.TaskStream + ".pool_gpu", `{"batch":1}`},
	} {
		b.refused(c.what, c.subject, b.pub(c.subject, []byte(c.body)))
	}
	ci, err = cons.Info(ictx)
	if err != nil {
		t.Fatalf("the pool's consumer after B: %v", err)
	}
	if ci.Config.AckWait != 2*time.Second || ci.Config.MaxAckPending != -1 {
		t.Errorf("B changed the pool's consumer: ack wait %s, max ack pending %d", ci.Config.AckWait, ci.Config.MaxAckPending)
	}

	// 5. Another run's subjects.
	b.refused("hearing the run", messages.RunSubject(runID)+".>", b.sub(messages.RunSubject(runID)+".>"))
	b.refused("ending the run", messages.FinishedSubject(runID), b.pub(messages.FinishedSubject(runID), enc(messages.RunFinished{OK: true})))

	// The runner role reads no task either.
	spy.refused("a runner reading a queued task", "$JS.API.STREAM.MSG.GET."+workstore.TaskStream, spy.pub("$JS.API.STREAM.MSG.GET."+workstore.TaskStream, []byte(`{"seq":1}`)))
	spy.refused("a runner's consumer on the tasks", "$JS.API.CONSUMER.CREATE."+workstore.TaskStream, spy.pub("$JS.API.CONSUMER.CREATE."+workstore.TaskStream+".x", []byte("{}")))

	close(release)
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end")
	}
	if r.err != nil || !r.out.OK || !strings.Contains(r.out.Answer, "done by A task 0") {
		t.Fatalf("run: %v %+v\n%s", r.err, r.out, diag)
	}
	if strings.Contains(r.out.Answer, "forged") || strings.Contains(r.out.Answer, "injected") {
		t.Fatalf("the parent took a forgery: %q", r.out.Answer)
	}
	if !strings.Contains(diag.String(), "did not seal") {
		t.Errorf("the run was not warned of the forgeries:\n%s", diag)
	}
	leaked.Range(func(k, _ any) bool {
		t.Errorf("a runner heard a worker's inbox: %s", k)
		return true
	})
}
