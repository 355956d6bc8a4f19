package humanio

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/messages"
)

// TestBridgeCallIDOnlyAnswerAfterAnAutomaticOne: a call id the stream
// showed for a call the gate settled itself (here the policy approved
// it) is used: when the model gives a later asked call the same id, an
// answer naming only that id, written for the earlier line, decides
// nothing and says to echo the requestId. The same holds for a request
// the gate settled before the bridge was handed it, which is not shown.
func TestBridgeCallIDOnlyAnswerAfterAnAutomaticOne(t *testing.T) {
	for _, first := range []messages.ApprovalDecided{
		{ToolCallID: "call_1", Approved: true, Auto: true, DecidedBy: messages.DecidedByPolicy},
		{RequestID: "apr-0", ToolCallID: "call_1", DecidedBy: "remote:alice"},
	} {
		pub, out := &recorded{}, &lines{}
		b := NewBridge("r", pub, out)
		b.Settled(first)
		if first.RequestID != "" {
			b.approvalRequired(messages.ApprovalRequired{RequestID: first.RequestID, ToolCallID: "call_1", ToolName: "write_file"})
			if len(out.got) != 0 {
				t.Fatalf("a request settled before it reached the bridge was shown: %v", out.got)
			}
		}
		b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "call_1", ToolName: "delete_file"})
		w := serve(b, `{"type":"approval_decision","toolCallId":"call_1","approved":true}`)
		for _, d := range pub.got {
			if d.Approved {
				t.Fatalf("after %+v, a call-id-only answer approved %s", first, d.RequestID)
			}
		}
		if len(w) != 1 || !strings.Contains(w[0], "2 gated calls") || !strings.Contains(w[0], "echo the requestId") {
			t.Fatalf("warnings %q", w)
		}
	}
	// Told of an automatic call under another id, the bridge still takes
	// a call-id-only answer for an id used once.
	pub := &recorded{}
	b := NewBridge("r", pub, &lines{})
	b.Settled(messages.ApprovalDecided{ToolCallID: "call_2", Approved: true, Auto: true, DecidedBy: messages.DecidedByPolicy})
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "call_1", ToolName: "write_file"})
	if w := serve(b, `{"type":"approval_decision","toolCallId":"call_1","approved":true}`); len(w) != 0 || len(pub.got) != 1 || !pub.got[0].Approved {
		t.Fatalf("published %+v, warnings %v", pub.got, w)
	}
}

// propertyIDs are the call ids the random runs draw from: few, so they
// repeat, and two that differ only in bytes a reader sees as U+FFFD.
var propertyIDs = []string{"c1", "c2", "c3", "c\xff", "c\uFFFD"}

// readAs is a call id as a reader of the run's stream decodes it from an
// approval_required line.
func readAs(t *testing.T, callID string) string {
	t.Helper()
	var ev struct {
		ToolCallID string `json:"toolCallId"`
	}
	line := events.RenderWhole(events.ApprovalRequired(messages.ApprovalRequired{ToolCallID: callID}, ""))
	if err := json.Unmarshal(line, &ev); err != nil {
		t.Fatal(err)
	}
	return ev.ToolCallID
}

// oracle is what a reader of the run's stream could have seen: every
// gated call whose approval lines show each call id, and which asked
// requests it was shown and may still answer.
type oracle struct {
	uses    map[string]map[string]bool // read call id -> calls (request id, or one key per automatic call)
	written map[string]bool            // request ids whose line the bridge wrote
	closed  map[string]bool            // request ids settled, answered or withdrawn
	auto    int
}

func (o *oracle) use(read, key string) {
	if o.uses[read] == nil {
		o.uses[read] = map[string]bool{}
	}
	o.uses[read][key] = true
}

// TestBridgeCallIDOnlyAnswersProperty: over random interleavings of asked
// requests (some with arguments that cannot be shown, some settled
// before they reach the bridge, some delivered twice or replaced),
// calls the gate settles itself, remote settlements, and answers naming
// a request id or only a call id, an answer decides a request exactly
// when a reader could tell which one it answers: a call-id-only answer
// lands only on the one gated call every line under that id was about,
// and only while it is shown and pending; an approval never reaches a
// request whose line was not written.
func TestBridgeCallIDOnlyAnswersProperty(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { callIDProperty(t, seed) })
	}
}

func callIDProperty(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x6a617a7a))
	pub, out := &recorded{}, &lines{}
	b := NewBridge("r", pub, out)
	o := &oracle{uses: map[string]map[string]bool{}, written: map[string]bool{}, closed: map[string]bool{}}
	var reqs []messages.ApprovalRequired
	var trail []string
	warn := func(string) {}
	// seen reads the lines the bridge wrote since the last look.
	nLines := 0
	seen := func() {
		out.mu.Lock()
		defer out.mu.Unlock()
		for _, l := range out.got[nLines:] {
			var ev struct {
				RequestID  string `json:"requestId"`
				ToolCallID string `json:"toolCallId"`
			}
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatalf("seed %d: line %q: %v", seed, l, err)
			}
			o.written[ev.RequestID] = true
		}
		nLines = len(out.got)
	}
	published := func() []messages.ApprovalDecided {
		pub.mu.Lock()
		defer pub.mu.Unlock()
		return append([]messages.ApprovalDecided(nil), pub.got...)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d after %q: %s", seed, trail, fmt.Sprintf(format, args...))
	}
	for step := range 80 {
		callID := propertyIDs[rng.IntN(len(propertyIDs))]
		before := len(published())
		switch op := rng.IntN(10); {
		case op < 3: // the gate asks
			rid := fmt.Sprintf("apr-%d", step)
			req := messages.ApprovalRequired{RequestID: rid, ToolCallID: callID, ToolName: "write_file",
				ExecuteToolName: "execute_write_file", ExecuteArgs: json.RawMessage(`{"path":"a"}`)}
			if rng.IntN(8) == 0 {
				req.ExecuteArgs = json.RawMessage(`{"path":"a","PATH":"b"}`) // cannot be shown exactly
			}
			o.use(readAs(t, callID), rid)
			if rng.IntN(6) == 0 {
				// Settled (a remote approver) before the bus brought it.
				trail = append(trail, "settle-early "+rid+" "+callID)
				o.closed[rid] = true
				b.Settled(messages.ApprovalDecided{RequestID: rid, ToolCallID: callID, DecidedBy: "remote:alice"})
			}
			trail = append(trail, "ask "+rid+" "+callID)
			b.approvalRequired(req)
			reqs = append(reqs, req)
		case op < 4 && len(reqs) > 0: // the same request again, or another under its id
			req := reqs[rng.IntN(len(reqs))]
			if rng.IntN(2) == 0 {
				req.ToolCallID = callID
				req.ExecuteArgs = json.RawMessage(`{"path":"elsewhere"}`)
				o.use(readAs(t, callID), req.RequestID)
				o.closed[req.RequestID] = true // withdrawn, or never shown
			}
			trail = append(trail, "again "+req.RequestID+" "+req.ToolCallID)
			b.approvalRequired(req)
		case op < 6: // the gate settles a call itself
			o.auto++
			o.use(readAs(t, callID), fmt.Sprintf("auto-%d", o.auto))
			trail = append(trail, "auto "+callID)
			b.Settled(messages.ApprovalDecided{ToolCallID: callID, Approved: true, Auto: true, DecidedBy: messages.DecidedByPolicy})
		case op < 7 && len(reqs) > 0: // settled elsewhere
			req := reqs[rng.IntN(len(reqs))]
			trail = append(trail, "settle "+req.RequestID)
			o.closed[req.RequestID] = true
			b.Settled(messages.ApprovalDecided{RequestID: req.RequestID, ToolCallID: req.ToolCallID, DecidedBy: messages.DecidedByCancel})
		case op < 9: // an answer naming only the call, as read
			read := readAs(t, callID)
			trail = append(trail, "answer-call "+read)
			seen()
			want := ""
			if len(o.uses[read]) == 1 {
				for k := range o.uses[read] {
					if o.written[k] && !o.closed[k] {
						want = k
					}
				}
			}
			b.decided(inbound{Type: "approval_decision", ToolCallID: read, Approved: messages.Ptr(true)}, warn)
			got := published()[before:]
			switch {
			case want == "" && len(got) != 0:
				fail("a call-id-only answer for %q decided %+v; the calls shown under it: %v", read, got, o.uses[read])
			case want != "" && (len(got) != 1 || got[0].RequestID != want || !got[0].Approved):
				fail("a call-id-only answer for %q, used once by shown and pending %s, published %+v", read, want, got)
			}
			if want != "" {
				o.closed[want] = true
			}
		case len(reqs) > 0: // an answer naming the request
			req := reqs[rng.IntN(len(reqs))]
			trail = append(trail, "answer "+req.RequestID)
			seen()
			open := o.written[req.RequestID] && !o.closed[req.RequestID]
			b.decided(inbound{Type: "approval_decision", RequestID: req.RequestID, Approved: messages.Ptr(true)}, warn)
			got := published()[before:]
			if open != (len(got) == 1 && got[0].RequestID == req.RequestID && got[0].Approved) || len(got) > 1 {
				fail("an answer to %s (shown and pending: %v) published %+v", req.RequestID, open, got)
			}
			o.closed[req.RequestID] = true
		}
		seen()
		for _, d := range published() {
			if d.Approved && !o.written[d.RequestID] {
				fail("%s was approved, but its line was never written", d.RequestID)
			}
		}
	}
}
