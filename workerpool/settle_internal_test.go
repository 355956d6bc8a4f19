package workerpool

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/workstore"
)

// keptKV keeps the keys written to it.
type keptKV struct {
	mu   sync.Mutex
	keys []string
}

func (k *keptKV) Put(_ context.Context, key string, _ []byte) (uint64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys = append(k.keys, key)
	return 1, nil
}

func (k *keptKV) written() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.keys...)
}

// A finished task's "done" record is written unless its worker says,
// sealed with the task's key and naming the attempt that finished, that
// the server holds its acknowledgement; a notice that is not sealed with
// the key, names another attempt or comes from another worker changes
// nothing. Close writes the records still waiting, and waits for them.
func TestDoneRecordOnlyWithoutTheWorkersAck(t *testing.T) {
	kv := &keptKV{}
	d := &Dispatcher{o: DispatcherOptions{RunID: "r", Pool: "p"}, kv: kv, closing: make(chan struct{}), tasks: map[string]*remote{}}
	notice := func(worker, task, key string, attempt int) bus.Raw {
		subject := messages.WorkerSubject("p", worker, "r", task, kindAcked)
		data, err := messages.Encode(workAcked{TaskID: task, Attempt: attempt})
		if err != nil {
			t.Fatal(err)
		}
		h, v := sealer(key)(subject, data)
		return bus.Raw{Subject: subject, Value: data, Header: bus.Header{h: {v}}}
	}
	finish := func(task string) {
		tk := &remote{d: d, id: task, key: "k-" + task, worker: "w", attempt: 1, lease: 400 * time.Millisecond}
		tk.markDone()
	}
	finish("t1") // acknowledged: no record
	d.route(notice("w", "t1", "k-t1", 1))
	finish("t2") // a notice the key did not seal
	d.route(notice("w", "t2", "forged", 1))
	finish("t3") // another attempt's notice
	d.route(notice("w", "t3", "k-t3", 2))
	finish("t4") // another worker's notice
	d.route(notice("v", "t4", "k-t4", 1))
	// Each waits a quarter of its lease (100 ms) for the notice.
	deadline := time.Now().Add(10 * time.Second)
	for len(kv.written()) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	d.mu.Lock()
	waiting := len(d.settling)
	d.mu.Unlock()
	got := map[string]bool{}
	for _, k := range kv.written() {
		got[k] = true
	}
	if waiting != 0 || len(got) != 3 || got[workstore.CancelKey("t1")] ||
		!got[workstore.CancelKey("t2")] || !got[workstore.CancelKey("t3")] || !got[workstore.CancelKey("t4")] {
		t.Fatalf("records written %v (%d still waiting), want those of t2, t3 and t4 only", kv.written(), waiting)
	}

	// A record still waiting when the run ends is written by Close.
	tk := &remote{d: d, id: "t5", key: "k-t5", worker: "w", attempt: 1, lease: time.Minute}
	tk.markDone()
	start := time.Now()
	d.Close()
	if took := time.Since(start); took > closeSettle {
		t.Fatalf("Close took %s", took)
	}
	if w := kv.written(); len(w) != 4 || w[3] != workstore.CancelKey("t5") {
		t.Fatalf("after Close, records written %v, want t5's last", w)
	}
}
