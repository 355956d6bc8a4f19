package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/internal/testutil"
	"github.com/jazz-run/jazz/internal/testutil/syncbuf"
	"github.com/jazz-run/jazz/iostreams"
)

// watchRig is `jazz approvals watch` on a real (embedded) NATS server,
// its stdin a pipe the test types into.
type watchRig struct {
	t        *testing.T
	store    *approvals.Store
	typed    *io.PipeWriter
	out, err *syncbuf.Buffer
	done     chan error
}

func newWatchRig(t *testing.T, jsonOut bool) *watchRig {
	t.Helper()
	srv := testutil.StartNATS(t, testutil.NATSOptions{JetStream: true})
	b := bus.Wrap(srv.Conn(t))
	ctx, cancel := context.WithCancel(context.Background())
	store, err := approvals.OpenStore(ctx, b, true)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	in, typed := io.Pipe()
	r := &watchRig{t: t, store: store, typed: typed, out: &syncbuf.Buffer{}, err: &syncbuf.Buffer{}, done: make(chan error, 1)}
	c := &approverConn{d: Deps{IO: &iostreams.IOStreams{In: in, Out: r.out, ErrOut: r.err}, Getenv: func(string) string { return "" }},
		jsonOut: jsonOut, home: t.TempDir(), conn: b, store: store, signer: kp, signerName: "alice"}
	go func() { r.done <- c.watch(ctx, true) }()
	t.Cleanup(func() {
		cancel()
		_ = typed.Close()
		select {
		case <-r.done:
		case <-time.After(5 * time.Second):
			t.Error("watch did not stop")
		}
	})
	return r
}

// put records a pending request of tool in run r.
func (r *watchRig) put(id, tool string) {
	r.t.Helper()
	args := json.RawMessage(`{"path":"` + id + `.txt"}`)
	hash, err := approvals.ActionHash("execute_"+tool, args)
	if err != nil {
		r.t.Fatal(err)
	}
	now := time.Now()
	req := approvals.Request{RunID: "run-1", RequestID: id, ToolCallID: "call_1", Tool: tool, RiskTier: "high-risk",
		ExecuteTool: "execute_" + tool, ExecuteArgs: args, ActionHash: hash, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
	if _, err := r.store.Put(context.Background(), req); err != nil {
		r.t.Fatal(err)
	}
}

func (r *watchRig) waitFor(buf *syncbuf.Buffer, substr string) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), substr) {
		if time.Now().After(deadline) {
			r.t.Fatalf("never saw %q\nstdout:\n%s\nstderr:\n%s", substr, r.out.String(), r.err.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *watchRig) status(id string) string {
	r.t.Helper()
	rec, err := r.store.Get(context.Background(), "run-1", id)
	if err != nil {
		r.t.Fatal(err)
	}
	return rec.Status
}

func (r *watchRig) waitStatus(id, want string) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.status(id) != want {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s is %s, want %s\nstderr:\n%s", id, r.status(id), want, r.err.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *watchRig) typeLine(s string) {
	r.t.Helper()
	if _, err := io.WriteString(r.typed, s); err != nil {
		r.t.Fatal(err)
	}
}

// TestWatchNeverPrintsARequestBelowAnOpenPrompt: on a terminal, a request
// that arrives while another is asked is not printed under the open
// prompt (where the next keystroke would seem to answer it); the prompt
// is written again naming its own request, and the newcomer is printed
// in full when it is asked.
func TestWatchNeverPrintsARequestBelowAnOpenPrompt(t *testing.T) {
	r := newWatchRig(t, false)
	r.put("apr-first", "write_file")
	r.waitFor(r.err, "Approve apr-first")
	r.put("apr-second", "delete_file")
	// Seen once it is printed anywhere.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(r.out.String()+r.err.String(), "apr-second") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if strings.Contains(r.out.String(), "apr-second") {
		t.Fatalf("apr-second was printed while apr-first was asked:\n%s", r.out.String())
	}
	r.waitFor(r.err, "(apr-second arrived; it is asked after this one)")
	if tail := r.err.String()[strings.LastIndex(r.err.String(), "\n")+1:]; !strings.HasPrefix(tail, "Approve apr-first") {
		t.Fatalf("the open prompt is %q, not apr-first's", tail)
	}
	r.typeLine("n\n")
	r.waitStatus("apr-first", approvals.StatusDenied)
	r.waitFor(r.err, "Approve apr-second (delete_file in run run-1)?")
	out := r.out.String()
	if i := strings.LastIndex(out, "● apr-second"); i < 0 || strings.Contains(out[i:], "● apr-first") {
		t.Fatalf("apr-second is not the request printed last:\n%s", out)
	}
	if r.status("apr-second") != approvals.StatusPending {
		t.Fatal("apr-second was decided without an answer")
	}
}

// TestWatchTypedAheadLineAnswersNothing: a line read before the asked
// request was on screen answers nothing: the second "y" of a "y" sent
// twice does not approve the request asked next, nor does an answer to a
// request decided elsewhere in the meantime. (--json here: the records
// stream on stdout, the prompts on stderr.)
func TestWatchTypedAheadLineAnswersNothing(t *testing.T) {
	r := newWatchRig(t, true)
	r.put("apr-first", "write_file")
	r.waitFor(r.err, "Approve apr-first")
	r.put("apr-second", "delete_file")
	r.waitFor(r.out, "apr-second")
	r.typeLine("y\ny\n")
	r.waitStatus("apr-first", approvals.StatusApproved)
	r.waitFor(r.err, "Approve apr-second")
	r.waitFor(r.err, "(ignored a line typed before apr-second was shown)")
	time.Sleep(100 * time.Millisecond)
	if got := r.status("apr-second"); got != approvals.StatusPending {
		t.Fatalf("the typed-ahead y decided apr-second: %s", got)
	}
	r.typeLine("n\n")
	r.waitStatus("apr-second", approvals.StatusDenied)
}
