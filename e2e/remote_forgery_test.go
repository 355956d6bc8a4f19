package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
)

// What the approver reads is what the run wrote: anyone who can write the
// store (every run shares the runner identity) rewrites a pending
// record's diff and message while leaving the action alone; `approvals
// show` prints the forgery, alice approves what she read, and the run
// refuses her decision (nothing is written) and puts its own request
// back (as it does with a forgery nobody signed), on which her next
// decision lands.
func TestForgedDisplayAcrossProcesses(t *testing.T) {
	t.Parallel()
	e := busWithAlice(t)
	e.replayAgent("remote", noteScript, "write_file")
	run := e.start(hlRunOpts{args: []string{"run", "--agent", "remote", "--json", "--remote-approvals", "--approval-timeout", "120000", "write the note"}})
	req := waitPending(t, e, 1, "--as", "alice")[0].Request

	// The forger: a client with the runner identity, as any run has.
	o, err := busclient.Options{}.WithLocal(e.home, busserver.RoleSeedPath(e.home, busserver.RoleRunner))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := busclient.Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.CloseNow()
	store, err := approvals.OpenStore(ctx, nc, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := store.Get(ctx, req.RunID, req.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	honest := rec.Request
	forged := honest
	forged.PreviewDiff = "+a harmless typo fix\n"
	forged.Message = "Fix a typo in the README"
	forgedShown, _ := approvals.ShownHash(forged)
	// The run reads its record back every few seconds and writes its own
	// request over a forgery it finds: the forgery is written again until
	// alice has signed what she read (her --shown pins that it was the
	// forgery, never a request the run put back in between).
	for attempt := 1; ; attempt++ {
		if attempt > 10 {
			t.Fatal("alice never got to sign the forgery (the test would prove nothing)")
		}
		rec, err = store.Get(ctx, req.RunID, req.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(approvals.Record{Status: approvals.StatusPending, Request: forged})
		if _, err := store.RawUpdate(ctx, approvals.Key(req.RunID, req.RequestID), raw, rec.Revision); err != nil {
			continue
		}
		show := e.run(hlRunOpts{args: []string{"approvals", "show", req.RequestID, "--as", "alice"}})
		if show.code != 0 || !strings.Contains(show.stdout, "harmless typo fix") {
			continue // put back already
		}
		if r := e.run(hlRunOpts{args: []string{"approvals", "approve", req.RequestID, "--as", "alice", "--shown", forgedShown}}); r.code == 0 {
			break // alice's approval of what she read is recorded
		}
	}
	// The run refuses it and restores what it wrote.
	deadline := time.Now().Add(30 * time.Second)
	for {
		rec, err = store.Get(ctx, req.RunID, req.RequestID)
		if err == nil && rec.Status == approvals.StatusPending && rec.Request.PreviewDiff == honest.PreviewDiff {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not put its own request back: %+v %v", rec, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "note.txt")); !os.IsNotExist(err) {
		t.Fatalf("the forged approval wrote the file: %v", err)
	}
	// Shown the truth, with `--shown` pinning what she read.
	show := e.run(hlRunOpts{args: []string{"approvals", "show", req.RequestID, "--as", "alice"}})
	want, _ := approvals.ShownHash(rec.Request)
	if !strings.Contains(show.stdout, want) {
		t.Fatalf("show does not print the shown hash %s:\n%s", want, show.stdout)
	}
	if r := e.run(hlRunOpts{args: []string{"approvals", "approve", req.RequestID, "--as", "alice", "--shown", "sha256:" + strings.Repeat("0", 64)}}); r.code != 1 || !strings.Contains(r.stderr, "not the one you were shown") {
		t.Fatalf("a stale --shown: %+v", r)
	}
	if r := e.run(hlRunOpts{args: []string{"approvals", "approve", req.RequestID, "--as", "alice", "--shown", want}}); r.code != 0 {
		t.Fatalf("approve: %+v", r)
	}
	res := run.wait(60 * time.Second)
	if res.code != 0 {
		t.Fatalf("run: %+v", res)
	}
	if got, err := os.ReadFile(filepath.Join(e.cwd, "note.txt")); err != nil || string(got) != "approved remotely\n" {
		t.Fatalf("file %q %v", got, err)
	}
	audit, _ := os.ReadFile(filepath.Join(e.home, "audit.jsonl"))
	if !strings.Contains(string(audit), approvals.ReasonShownMismatch) {
		t.Errorf("audit.jsonl does not record the refusal:\n%s", audit)
	}
}
