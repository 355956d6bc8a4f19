package busserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/workstore"
)

// Files of the worker identities `jazz bus add-worker` creates.
const (
	WorkersFile = "workers.json"
	WorkerSeeds = "workers"
)

// Worker is one worker identity: a name for people, and the public key
// the server knows it by and its subjects are named after.
type Worker struct {
	Name      string `json:"name"`
	PublicKey string `json:"publicKey"`
	// Pools are the pools it may join, with their settings; none is the
	// default pool alone.
	Pools []Pool `json:"pools,omitempty"`
}

// Pool is one pool a worker may join. The bus server creates each pool's
// consumer with these settings (workers only take from it): a pool's
// lease is the longest any of its workers lists.
type Pool struct {
	Name string `json:"name"`
	// LeaseMs is how long a task stays with a worker that stopped
	// heartbeating before another may take it; 0 is 10 s.
	LeaseMs int64 `json:"leaseMs,omitempty"`
}

// PoolNames are the pools w may join.
func (w Worker) PoolNames() []string {
	if len(w.Pools) == 0 {
		return []string{workstore.DefaultPool}
	}
	out := make([]string, 0, len(w.Pools))
	for _, p := range w.Pools {
		out = append(out, p.Name)
	}
	return out
}

// PoolLeases are the pools the bus server keeps a consumer for, with
// their leases: the default pool (any local worker may join it) and every
// pool a worker lists, with the longest lease listed for it.
func PoolLeases(workers []Worker) map[string]time.Duration {
	out := map[string]time.Duration{workstore.DefaultPool: 0}
	for _, w := range workers {
		pools := w.Pools
		if len(pools) == 0 {
			pools = []Pool{{Name: workstore.DefaultPool}}
		}
		for _, p := range pools {
			out[p.Name] = max(out[p.Name], time.Duration(p.LeaseMs)*time.Millisecond)
		}
	}
	for name, lease := range out {
		if lease == 0 {
			out[name] = workstore.DefaultLease
		}
	}
	return out
}

// WorkersPath is JAZZ_HOME/bus/workers.json.
func WorkersPath(home string) string { return filepath.Join(home, approvals.BusDir, WorkersFile) }

// WorkerSeedPath is where a local worker's seed is kept.
func WorkerSeedPath(home, name string) string {
	return filepath.Join(home, approvals.BusDir, WorkerSeeds, name+".nk")
}

// ReadWorkersFile reads workers.json; a missing file is an empty list.
func ReadWorkersFile(home string) ([]Worker, error) {
	data, err := os.ReadFile(WorkersPath(home))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read workers: %w", err)
	}
	var list []Worker
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", WorkersPath(home), err)
	}
	for _, w := range list {
		if err := w.validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", WorkersPath(home), err)
		}
	}
	return list, nil
}

func (w Worker) validate() error {
	if !approvals.ValidName(w.Name) {
		return fmt.Errorf("worker name %q: use letters, digits, '.', '_' or '-' (at most 64)", w.Name)
	}
	if !nkeys.IsValidPublicUserKey(w.PublicKey) {
		return fmt.Errorf("worker %s: %q is not an nkey user public key", w.Name, w.PublicKey)
	}
	seen := map[string]bool{}
	for _, p := range w.Pools {
		if p.Name == "" || messages.SubjectToken(p.Name) != p.Name {
			return fmt.Errorf("worker %s: pool name %q: use letters, digits, '-' or '_'", w.Name, p.Name)
		}
		if seen[p.Name] {
			return fmt.Errorf("worker %s: pool %s is listed twice", w.Name, p.Name)
		}
		seen[p.Name] = true
		lease := time.Duration(p.LeaseMs) * time.Millisecond
		if p.LeaseMs != 0 && (lease < workstore.MinLease || lease > workstore.MaxLease) {
			return fmt.Errorf("worker %s: pool %s: leaseMs must be between %d and %d, got %d", w.Name, p.Name,
				workstore.MinLease.Milliseconds(), workstore.MaxLease.Milliseconds(), p.LeaseMs)
		}
	}
	return nil
}

// AddWorker creates an identity for a worker called name that may join
// pools (none: the default pool), writes its seed to WorkerSeedPath
// (0600) and records it in workers.json; a running `jazz bus serve` lets
// it in, and creates its pools' consumers, within a second.
func AddWorker(home, name string, pools ...Pool) (Worker, error) {
	unlock, err := approvals.LockList(WorkersPath(home))
	if err != nil {
		return Worker{}, err
	}
	defer unlock()
	list, err := ReadWorkersFile(home)
	if err != nil {
		return Worker{}, err
	}
	for _, w := range list {
		if w.Name == name {
			return Worker{}, fmt.Errorf("worker %q already exists (public key %s); to replace it, first run: jazz bus remove-worker %s", name, w.PublicKey, name)
		}
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return Worker{}, fmt.Errorf("create worker key: %w", err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	w := Worker{Name: name, PublicKey: pub, Pools: pools}
	if err := w.validate(); err != nil {
		return Worker{}, err
	}
	if err := approvals.WriteSecret(WorkerSeedPath(home, name), append(seed, '\n')); err != nil {
		return Worker{}, err
	}
	data, _ := json.MarshalIndent(append(list, w), "", "  ")
	if err := approvals.WriteSecret(WorkersPath(home), append(data, '\n')); err != nil {
		return Worker{}, err
	}
	return w, nil
}

// RemoveWorker revokes the worker called name: it is taken out of
// workers.json (a running `jazz bus serve` closes its connections and lets
// the key in no more at its next reload, within a second) and its seed,
// if jazz kept one, is deleted. It returns who was removed. A task it
// held goes back to its pool when its lease runs out.
func RemoveWorker(home, name string) (Worker, error) {
	unlock, err := approvals.LockList(WorkersPath(home))
	if err != nil {
		return Worker{}, err
	}
	defer unlock()
	list, err := ReadWorkersFile(home)
	if err != nil {
		return Worker{}, err
	}
	var gone Worker
	kept := make([]Worker, 0, len(list))
	var names []string
	for _, w := range list {
		if w.Name == name {
			gone = w
			continue
		}
		kept = append(kept, w)
		names = append(names, w.Name)
	}
	if gone.Name == "" {
		if len(names) == 0 {
			return Worker{}, fmt.Errorf("no worker %q: %s lists none", name, WorkersPath(home))
		}
		return Worker{}, fmt.Errorf("no worker %q in %s (it lists: %s)", name, WorkersPath(home), strings.Join(names, ", "))
	}
	data, _ := json.MarshalIndent(kept, "", "  ")
	if err := approvals.WriteSecret(WorkersPath(home), append(data, '\n')); err != nil {
		return Worker{}, err
	}
	// Revoked once the list is written; left behind, the seed reads as live.
	if err := os.Remove(WorkerSeedPath(home, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return gone, fmt.Errorf("worker %s is revoked, but its seed file could not be deleted: %w", name, err)
	}
	return gone, nil
}

// WorkerInboxPrefix is the inbox prefix a worker's connection must use:
// its subscriptions are confined to it, so no worker reads what the
// server delivers to another (tasks, JetStream replies).
func WorkerInboxPrefix(publicKey string) string {
	return "_INBOX.w." + messages.SubjectToken(publicKey)
}

// WorkerPermissions are what the worker with publicKey may do, enforced
// by the server:
//
//   - publish only in its own namespace, jazz.work.*.w.<key>.> (claims,
//     heartbeats, events, approval requests, results), and speak for no
//     run (jazz.run.> is closed to it);
//   - take tasks from the shared durable consumers of the pools it may
//     join (pools; nil is every pool the server made a consumer for),
//     which the bus server creates: it may create, change or delete no
//     consumer on the task stream (a consumer's settings are its whole
//     pool's, and a consumer delivers to any subject its creator
//     names); and answer
//     (acknowledge, hand back, extend) only the deliveries the server
//     made to this connection: no $JS.ACK subject is open to it, only
//     the reply subjects of what it received (Response), so it cannot
//     settle a task another worker holds, whose stream sequence it
//     could otherwise guess;
//   - read the work bucket's records and hear cancel records written,
//     but write nothing there and create no consumer on it: a consumer
//     delivers the stream's messages to any subject its creator names;
//   - receive only what is sent to it (jazz.work.*.to.<key>.>) and its own
//     inbox; answer the micro service requests ($SRV) it receives.
//
// Subject permissions do not say who put a message on a subject (the
// server delivers for consumers and API replies), so runners and
// workers also seal what they say about a task with the task's key
// (workerpool/seal.go): a worker the task was not delivered to cannot
// speak for it, whatever it publishes.
func WorkerPermissions(publicKey string, pools []string) *server.Permissions {
	key := messages.SubjectToken(publicKey)
	kvStream := "KV_" + workstore.Bucket
	pub := []string{
		"jazz.work.*.w." + key + ".>",
		"$JS.API.INFO",
		"$JS.API.STREAM.INFO." + workstore.TaskStream,
		"$JS.API.STREAM.INFO." + kvStream,
		"$JS.API.DIRECT.GET." + kvStream + ".>",
		"$JS.API.STREAM.MSG.GET." + kvStream,
	}
	consumers := []string{"*"}
	if pools != nil {
		consumers = consumers[:0]
		for _, p := range pools {
			consumers = append(consumers, workstore.ConsumerName(p))
		}
	}
	for _, c := range consumers {
		pub = append(pub, "$JS.API.CONSUMER.INFO."+workstore.TaskStream+"."+c,
			"$JS.API.CONSUMER.MSG.NEXT."+workstore.TaskStream+"."+c)
	}
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: pub},
		Subscribe: &server.SubjectPermission{Allow: []string{
			WorkerInboxPrefix(publicKey) + ".>",
			"jazz.work.*.to." + key + ".>",
			workstore.KeySubject("cancel.*"),
			"$SRV.>",
		}},
		// A delivered task is answered for as long as it may run (its
		// heartbeats and its end), so neither a count nor a short expiry.
		Response: &server.ResponsePermission{MaxMsgs: -1, Expires: workstore.MaxAge},
	}
}
