package busserver

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/workstore"
)

// Roles of the identities the server creates on first start. Approvers
// are people, added one by one (approvals.AddApprover).
const (
	RoleRunner   = "runner"
	RoleObserver = "observer"
	RoleWorker   = "worker"
	RoleApprover = "approver"
)

// roleSeeds are created once and kept in JAZZ_HOME/bus/<role>.nk (0600).
var roleSeeds = []string{RoleRunner, RoleObserver, RoleWorker}

// RoleSeedPath is the seed file of a built-in role.
func RoleSeedPath(home, role string) string {
	return filepath.Join(home, approvals.BusDir, role+".nk")
}

// ensureRoleKeys returns the public key of each built-in role, creating
// the seeds that do not exist yet.
func ensureRoleKeys(home string) (map[string]string, error) {
	pubs := map[string]string{}
	for _, role := range roleSeeds {
		path := RoleSeedPath(home, role)
		kp, err := approvals.LoadSigner(path)
		if errors.Is(err, os.ErrNotExist) {
			if kp, err = nkeys.CreateUser(); err != nil {
				return nil, fmt.Errorf("create %s identity: %w", role, err)
			}
			seed, _ := kp.Seed()
			if err := approvals.WriteSecret(path, append(seed, '\n')); err != nil {
				return nil, err
			}
		} else if err != nil {
			return nil, err
		}
		pub, _ := kp.PublicKey()
		pubs[role] = pub
	}
	return pubs, nil
}

// JetStream API a client needs to read the approvals bucket and watch it:
// bind, get, and ordered consumers. Nothing that creates, edits, purges
// or deletes a stream, and no read of another stream: the pools' task
// stream holds each task's key (messages.WorkTask.Key), which only the
// task's runner and workers may know.
// The audit stream is read too (approvals.ReadAudit): its lines are what
// the bucket's records already show these roles.
var jsRead = append(jsReadOf("KV_"+approvals.Bucket, approvals.AuditStream), "$JS.API.CONSUMER.MSG.NEXT."+approvals.AuditStream+".>")

// jsReadOf is the read side of the JetStream API on the named streams.
func jsReadOf(streams ...string) []string {
	out := []string{"$JS.API.INFO", "$JS.API.STREAM.INFO.*"}
	for _, s := range streams {
		out = append(out, "$JS.API.DIRECT.GET."+s, "$JS.API.DIRECT.GET."+s+".>", "$JS.API.STREAM.MSG.GET."+s,
			"$JS.API.CONSUMER.CREATE."+s+".>", "$JS.API.CONSUMER.DELETE."+s+".>", "$JS.API.CONSUMER.INFO."+s+".>",
			"$JS.FC."+s+".>")
	}
	return out
}

// notWorkerInboxes keeps every other role out of the workers' inboxes,
// where the server delivers their tasks (and so the tasks' keys).
var notWorkerInboxes = []string{"_INBOX.w.>"}

const kvSubjects = "$KV." + approvals.Bucket + ".>"

// Permissions are what each role may publish and subscribe to; the
// server enforces them, so an identity that may read cannot decide.
//
//   - runner: publishes its runs' events and requests (jazz.run.>), writes
//     pending records (KV) and audit lines; may not publish decisions or
//     policy changes.
//   - approver: reads requests, writes decisions (KV compare-and-set),
//     publishes signed policy changes, signed answers to questions and
//     audit lines.
//     A runner also submits pool tasks, answers its workers (decisions,
//     cancel and gated-action records) and hears what they report; it
//     may not speak as a worker, nor read the tasks (their keys).
//   - observer: reads everything an approver reads and writes nothing;
//     it may list the live workers (ask $SRV, and each worker's own
//     status subject).
//   - worker: see WorkerPermissions (each worker key has its own).
//
// An identity appends audit lines only under its own key (key, the
// identity's nkey public key: approvals.AuditWriterSubjects), each signed
// with it, so a line on the audit stream is attributable to its writer:
// no runner can write an approver's line, nor one approver another's.
func Permissions(role, key string) *server.Permissions {
	ownAudit := approvals.AuditWriterSubjects(key)
	read := &server.SubjectPermission{Allow: []string{"_INBOX.>", "jazz.run.>", kvSubjects}, Deny: notWorkerInboxes}
	switch role {
	case RoleRunner:
		return &server.Permissions{
			Publish: &server.SubjectPermission{
				Allow: append([]string{"jazz.run.>", kvSubjects, ownAudit,
					"jazz.work.*.task", "jazz.work.*.to.*.>", workstore.KeySubject("cancel.*"), workstore.KeySubject("gated.*"),
					"$JS.API.CONSUMER.MSG.NEXT." + workstore.OutStream + ".>", "$JS.API.CONSUMER.MSG.NEXT." + approvals.PolicyStream + ".>", "$SRV.>"},
					jsReadOf("KV_"+approvals.Bucket, workstore.OutStream, approvals.PolicyStream)...),
				Deny: []string{"jazz.run.*.approval.decided", "jazz.run.*.policy", "jazz.run.*.policy.>"},
			},
			Subscribe: &server.SubjectPermission{Allow: append(append([]string{}, read.Allow...), "jazz.work.*.w.*.>"), Deny: notWorkerInboxes},
		}
	case RoleApprover:
		return &server.Permissions{
			Publish: &server.SubjectPermission{
				Allow: append([]string{kvSubjects, "jazz.run.*.policy", "jazz.run.*.input.signed", ownAudit}, jsRead...),
			},
			Subscribe: read,
		}
	case RoleObserver:
		return &server.Permissions{
			// A worker's status subject: `jazz workers` confirms there
			// what a worker claimed on $SRV (workerpool.List).
			Publish:   &server.SubjectPermission{Allow: append([]string{"$SRV.>", "jazz.work.*.to.*.status"}, jsRead...)},
			Subscribe: read,
		}
	}
	// An unknown role may do nothing at all.
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Deny: []string{">"}},
		Subscribe: &server.SubjectPermission{Deny: []string{">"}},
	}
}

// users is the server's nkey user list: the built-in roles, every
// approver and worker in JAZZ_HOME, and the server's own admin key (in
// memory only).
func users(roles map[string]string, approvers []approvals.Approver, workers []Worker, adminPub string) []*server.NkeyUser {
	var out []*server.NkeyUser
	for _, role := range roleSeeds {
		p := Permissions(role, roles[role])
		if role == RoleWorker {
			p = WorkerPermissions(roles[role], nil)
		}
		out = append(out, &server.NkeyUser{Nkey: roles[role], Permissions: p})
	}
	for _, a := range approvers {
		out = append(out, &server.NkeyUser{Nkey: a.PublicKey, Permissions: Permissions(RoleApprover, a.PublicKey)})
	}
	for _, w := range workers {
		out = append(out, &server.NkeyUser{Nkey: w.PublicKey, Permissions: WorkerPermissions(w.PublicKey, w.PoolNames())})
	}
	out = append(out, &server.NkeyUser{Nkey: adminPub})
	// In the order nats-server's reload sorts a running server's users
	// into, in place (imposeOrder): a reload then moves none of them
	// under a reader.
	slices.SortFunc(out, func(a, b *server.NkeyUser) int { return cmp.Compare(a.Nkey, b.Nkey) })
	return out
}
