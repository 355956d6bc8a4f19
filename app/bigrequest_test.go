package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/internal/testutil"
	"github.com/jazz-run/jazz/messages"
)

// bigWrite is an agent whose one call writes size bytes to big.txt.
func bigWrite(t *testing.T, dir string, size int) (path, content string) {
	t.Helper()
	content = strings.Repeat("x", size-1) + "\n"
	script, err := json.Marshal(map[string]any{"turns": []any{
		map[string]any{"toolCalls": []any{map[string]any{"name": "write_file", "arguments": map[string]any{"path": "big.txt", "content": content}}}},
		map[string]any{"text": "done"}}})
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "script.json")
	if err := os.WriteFile(path, script, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, content
}

// readLines reads the run's stderr events: each tool result goes to
// results; with answers set, it is a bridge that approves every asked
// request, recording the preview each showed.
func readLines(r io.Reader, answers io.Writer, shown, results chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var ev messages.Event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch {
		case ev.Type == messages.EventToolExecutionComplete && ev.Result != nil:
			results <- *ev.Result
		case ev.Type == messages.EventApprovalRequired && ev.RequestID != "" && answers != nil:
			shown <- ev.PreviewDiff
			_, _ = io.WriteString(answers, `{"type":"approval_decision","requestId":"`+ev.RequestID+`","approved":true}`+"\n")
		}
	}
}

// TestTooLargeForTheBusStillReachesThePersonAtHand: on a shared server
// that takes 256 KiB a message, a write whose approval request is larger
// (but fits the run's own in-process bus) is not sent to remote
// approvers, whole or cut; with a bridge at the run, the person there is
// shown the whole preview and their approval writes the file; with
// remote approvers alone, it is declined and the model is told the size,
// the limit and to split it. A write too large even for the run's own
// bus is declined the same way, the bridge shown nothing. No run hangs.
func TestTooLargeForTheBusStillReachesThePersonAtHand(t *testing.T) {
	n := testutil.StartNATS(t, testutil.NATSOptions{Listen: true, JetStream: true, Configure: func(o *server.Options) { o.MaxPayload = 256 << 10 }})
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	reg, err := approvals.NewRegistry([]approvals.Approver{{Name: "alice", PublicKey: pub, MaxTier: "high-risk"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		size          int
		bridge, wrote bool
	}{
		{"bridge, too large for the shared bus", 100 << 10, true, true},
		{"remote only, too large for the shared bus", 100 << 10, false, false},
		{"bridge, too large for the run's own bus", 3 << 20, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			home, dir := t.TempDir(), t.TempDir()
			script, content := bigWrite(t, dir, c.size)
			o := app.RunOptions{
				Agent: writeAgent(script), Prompt: "write", Config: &config.Config{Home: home, MaxIterations: 10},
				NATSURL: n.URL, Reachable: true, Remote: &app.RemoteApprovals{Timeout: 20 * time.Second, Registry: reg},
				Cwd: dir, Timeout: 60 * time.Second, Events: []string{"tools"},
			}
			shown, results := make(chan string, 4), make(chan string, 4)
			errR, errW := io.Pipe()
			defer errW.Close()
			o.Stderr = errW
			var answers io.Writer
			if c.bridge {
				inR, inW := io.Pipe()
				defer inW.Close()
				o.Bridge, o.Stdin, answers = true, inR, inW
			}
			go readLines(errR, answers, shown, results)
			// No wall-clock bound here: under -race a 3 MiB request takes
			// from 5 s alone to 30 s on a loaded machine. The run's own
			// Timeout bounds it, and the result's reason (its size, below)
			// shows it was not declined at the 20 s approval timeout.
			out, err := app.RunAndWait(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if out.StopReason == messages.StopTimeout {
				t.Fatal("the run ran into its 60 s timeout")
			}
			got, ferr := os.ReadFile(filepath.Join(dir, "big.txt"))
			if c.wrote {
				if ferr != nil || string(got) != content || len(out.Declined) != 0 {
					t.Fatalf("the approved write: %d bytes, %v; declined %d", len(got), ferr, len(out.Declined))
				}
				select {
				case p := <-shown:
					if !strings.Contains(p, content[:1024]) || len(p) < len(content) {
						t.Fatalf("the person was shown %d bytes of preview for %d bytes of content", len(p), len(content))
					}
				default:
					t.Fatal("the person was never shown the request")
				}
				return
			}
			if ferr == nil || len(out.Declined) != 1 || out.Declined[0].DecidedBy != messages.DecidedByNobody {
				t.Fatalf("declined %d, file %v", len(out.Declined), ferr)
			}
			select {
			case r := <-results:
				// The event shows the result's start (cut past its bound).
				if !strings.Contains(r, "This call was declined") || !strings.Contains(r, "too large to send for approval") || !strings.Contains(r, "Split it") {
					t.Fatalf("the model was told %.300q", r)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no tool result was reported")
			}
			select {
			case <-shown:
				t.Fatal("the bridge was shown a request nobody may decide")
			default:
			}
		})
	}
}
