// Package workerpool runs agents on other machines with the guarantees of
// a local child: a runner's Dispatcher queues spawn_subagent children (and
// whole `jazz run --remote` runs) on a pool's JetStream work queue, and a
// Worker takes them, runs them with its own model credentials, and reports
// back. The root run stays in charge:
//
//   - Approvals: a remote agent's gated calls go to the root run's gate
//     (and so to its human, bridge or remote approver); a worker never
//     decides one, and runs a twin, or a single-phase gated tool
//     (manage_todos), only on the gate's approval, which the runner sends
//     after it has recorded durably that a gated action started. The
//     runner judges a relayed request by its own record of the task (the
//     ceiling, the schemas and tiers of its registry, its policy); what
//     the worker reports of its machine may only make it stricter
//     (remote.check says field by field). A decision names the one call
//     it decided (WorkDecision.Action): the worker's gate runs no other
//     call under it, and the runner answers a re-ask under its number
//     only for that call. A worker's agent may not start sub-agents of
//     its own: spawn_subagent is refused there.
//   - Ceiling: the task carries the agent's tool names and the worker
//     offers only those of its own tools; the runner checks again what a
//     remote call asks to be approved for.
//   - Liveness: the worker heartbeats its lease (JetStream InProgress; the
//     pool's lease is its consumer's AckWait, which the bus server sets:
//     workers only bind the consumer, see busserver.PoolLeases); a
//     worker lost mid-task is noticed within the lease, and its task runs
//     once more elsewhere only if no gated action had started; a gated
//     action never runs twice.
//   - Cancellation: the runner writes a durable cancel record per task; a
//     worker watches them, and reads them again when it reconnects.
//   - Accounting and traces: usage and calls roll up into the run's ledger,
//     events into its stream, spans under the caller's.
//
// The runner believes a report about a task only from the worker that
// claimed it, and only when it is sealed with the task's key, which only
// the runner and the workers the task was delivered to hold (seal.go):
// each worker may publish only under its own key
// (busserver.WorkerPermissions), but the server also delivers stored
// messages to any subject a consumer or a request names, so the subject
// alone proves nothing. Workers take the runner's decisions and records
// on the same terms.
package workerpool

// mark is a timeline hook: stage names a step of a task's trip (see
// BenchmarkRemoteChildTimeline); nil outside that benchmark, so a task
// pays one load and compare per step.
var mark func(task, stage string)

func stamp(task, stage string) {
	if f := mark; f != nil {
		f(task, stage)
	}
}
