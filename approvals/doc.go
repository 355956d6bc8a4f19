// Package approvals is the trust core of remote approvals: the action hash
// that binds a decision to exactly what the execute twin will run, the
// approver registry, signed decisions and policy changes, their
// verification, the JetStream KV store of pending requests (compare-and-set
// for exactly-once), and the append-only audit trail.
//
// Nothing here trusts the bus: a record read from the KV is only a
// proposal until its signature, signer, action hash, run, request and
// expiry all check out against what the run itself holds.
package approvals
