package e2e

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hlStop is the part of an envelope that says how a run ended.
type hlStop struct {
	OK         bool   `json:"ok"`
	Error      string `json:"error"`
	StopReason string `json:"stopReason"`
	TokenUsage *struct {
		PromptTokens, CompletionTokens, TotalTokens int
	} `json:"tokenUsage"`
	ToolCalls []struct{ Name string } `json:"toolCalls"`
	Declined  []struct{ Name string } `json:"declinedToolCalls"`
}

func (r hlResult) stop(t *testing.T) hlStop {
	t.Helper()
	r.envelope(t) // exactly one object
	var s hlStop
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func hlTurn(text string, calls ...map[string]any) map[string]any {
	t := map[string]any{"usage": map[string]any{"promptTokens": 10, "completionTokens": 2}}
	if text != "" {
		t["text"] = text
	}
	if len(calls) > 0 {
		t["toolCalls"] = calls
	}
	return t
}

func hlReplayCall(name string, args map[string]any) map[string]any {
	return map[string]any{"name": name, "arguments": args}
}

// Every way a run ends has its stopReason, on the envelope and on the
// run_end event; a failure carries the tokens and calls it had so far.
func TestStopReasons(t *testing.T) {
	t.Parallel()
	ls := hlReplayCall("ls", map[string]any{"path": "."})
	write := hlReplayCall("write_file", map[string]any{"path": "out.txt", "content": "x\n"})
	cases := []struct {
		name     string
		turns    []any
		args     []string
		code     int
		reason   string
		calls    int // toolCalls in the envelope
		declined int
		errHas   string
	}{
		{name: "completed", turns: []any{hlTurn("done")}, reason: "completed"},
		{name: "max iterations stays ok", turns: []any{hlTurn("", ls), hlTurn("", ls)},
			args: []string{"--max-iterations", "1"}, reason: "max_iterations", calls: 1},
		{name: "max iterations fails when asked", turns: []any{hlTurn("", ls), hlTurn("", ls)},
			args: []string{"--max-iterations", "1", "--fail-on-max-iterations"}, code: 1, reason: "max_iterations", calls: 1,
			errHas: "iteration limit (1) and --fail-on-max-iterations is set"},
		{name: "declined", turns: []any{hlTurn("", write), hlTurn("I could not write it.")}, reason: "declined", calls: 1, declined: 1},
		{name: "declined fails when asked", turns: []any{hlTurn("", write), hlTurn("I could not write it.")},
			args: []string{"--fail-on-decline"}, code: 1, reason: "declined", calls: 1, declined: 1, errHas: "--fail-on-decline"},
		{name: "timeout keeps what was spent", turns: []any{hlTurn("", ls), map[string]any{"text": "late", "delayMs": 20000}},
			args: []string{"--timeout", "1500"}, code: 1, reason: "timeout", calls: 1, errHas: "Run exceeded the 1500ms timeout."},
		{name: "model error", turns: []any{hlTurn("", ls), map[string]any{"error": map[string]any{"status": 400, "message": "bad request"}}},
			code: 1, reason: "error", calls: 1, errHas: "bad request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := hlNewEnv(t)
			e.writeConfig(map[string]any{"maxRetries": 0})
			e.replayAgent("sr", map[string]any{"turns": c.turns}, "ls", "write_file")
			args := append([]string{"run", "--json", "--agent", "sr", "--events", "tools"}, c.args...)
			r := e.run(hlRunOpts{args: append(args, "go")})
			s := r.stop(t)
			if r.code != c.code || s.OK != (c.code == 0) || s.StopReason != c.reason {
				t.Fatalf("exit %d ok %v stopReason %q, want exit %d stopReason %q\nstdout: %s\nstderr: %s", r.code, s.OK, s.StopReason, c.code, c.reason, r.stdout, r.stderr)
			}
			if !strings.Contains(s.Error, c.errHas) {
				t.Errorf("error %q lacks %q", s.Error, c.errHas)
			}
			if s.TokenUsage == nil || s.TokenUsage.PromptTokens < 10 || s.TokenUsage.TotalTokens != s.TokenUsage.PromptTokens+s.TokenUsage.CompletionTokens {
				t.Errorf("tokenUsage %+v: want the tokens spent so far", s.TokenUsage)
			}
			if len(s.ToolCalls) != c.calls || len(s.Declined) != c.declined {
				t.Errorf("toolCalls %v declinedToolCalls %v, want %d and %d", s.ToolCalls, s.Declined, c.calls, c.declined)
			}
			ends := hlOfType(r.events(t), "run_end")
			if len(ends) != 1 || ends[0]["stopReason"] != c.reason || ends[0]["ok"] != (c.code == 0) {
				t.Errorf("run_end events %v, want one with stopReason %q", ends, c.reason)
			}
		})
	}
}

// run_start opens and run_end closes every stream; the header names the
// run; warnings carry the run id and the agent.
func TestRunLifecycleEvents(t *testing.T) {
	t.Parallel()
	e := hlNewEnv(t)
	e.writeConfig(map[string]any{"maxRetries": 0})
	e.replayAgent("life", map[string]any{"turns": []any{hlTurn("", hlReplayCall("ls", map[string]any{"path": "."})), hlTurn("ok")}}, "ls")
	r := e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "life", "--events", "usage", "--max-iterations", "1", "go"}})
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	evs := r.events(t)
	if len(evs) < 2 || evs[0]["type"] == "run_end" {
		t.Fatalf("events: %v", evs)
	}
	var start, end map[string]any
	for i, ev := range evs {
		switch ev["type"] {
		case "run_start":
			start = ev
		case "run_end":
			end = ev
			if i != len(evs)-1 && !(i == len(evs)-2 && evs[i+1]["type"] == "status") {
				t.Errorf("run_end is not the run's last event: %v", evs[i+1:])
			}
		}
	}
	runID, _ := start["runId"].(string)
	if start == nil || !strings.HasPrefix(runID, "run-") || start["agentName"] != "life" || start["policy"] != "none" ||
		!strings.HasPrefix(start["model"].(string), "replay/") {
		t.Fatalf("run_start %v", start)
	}
	if end == nil || end["runId"] != runID || end["ok"] != true || end["stopReason"] != "max_iterations" || end["usage"] == nil || end["costUSD"] == nil {
		t.Fatalf("run_end %v", end)
	}
	// The iteration limit's warning names the run and the agent.
	warns := hlOfType(evs, "warning")
	if len(warns) == 0 {
		t.Fatalf("no warning event for the iteration limit: %v", evs)
	}
	for _, w := range warns {
		if w["runId"] != runID || w["agentName"] != "life" {
			t.Errorf("warning without its run and agent: %v", w)
		}
	}
	// The header on a text stderr names the run.
	r = e.run(hlRunOpts{args: []string{"run", "--agent", "life", "go"}})
	if r.code != 0 || !strings.Contains(r.stderr, "◉ life (run run-") {
		t.Fatalf("header without the run id (exit %d):\n%s", r.code, r.stderr)
	}
}

// SIGTERM ends a run as an interrupt: run_end says so, no error event
// (a bridge shows its own "Cancelled", not a failure).
func TestSIGTERMIsAnInterrupt(t *testing.T) {
	t.Parallel()
	e := hlNewEnv(t)
	e.writeConfig(map[string]any{"maxRetries": 0})
	e.replayAgent("slow", map[string]any{"turns": []any{map[string]any{"text": "late", "delayMs": 30000}}})
	started := make(chan struct{}, 1)
	p := e.start(hlRunOpts{args: []string{"run", "--json", "--agent", "slow", "--events", "usage", "go"},
		onStderr: func(l string) {
			if strings.Contains(l, `"type":"stream_start"`) {
				select {
				case started <- struct{}{}:
				default:
				}
			}
		}})
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the run never called the model")
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := p.wait(20 * time.Second)
	s := r.stop(t)
	if r.code != 1 || s.OK || s.StopReason != "interrupted" {
		t.Fatalf("exit %d stopReason %q\nstdout: %s\nstderr: %s", r.code, s.StopReason, r.stdout, r.stderr)
	}
	evs := r.events(t)
	if errs := hlOfType(evs, "error"); len(errs) != 0 {
		t.Errorf("an interrupt wrote error events: %v", errs)
	}
	if ends := hlOfType(evs, "run_end"); len(ends) != 1 || ends[0]["stopReason"] != "interrupted" {
		t.Errorf("run_end: %v", ends)
	}
}
