package gateactor_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/writetools"
)

// BenchmarkGateDecision is the gate's own cost per decision: a request
// sent to the gate actor and its answer back, decided by policy, by the
// per-tool allowlist, and by the command allowlist (a shell parse).
func BenchmarkGateDecision(b *testing.B) {
	cases := []struct {
		name    string
		cfg     gateactor.Config
		tool    string
		level   string
		command string
	}{
		{"policy", gateactor.Config{Policy: messages.PolicyHighRisk}, "write_file", messages.LevelHighRisk, ""},
		{"tool-allowlist", gateactor.Config{AutoApproveTools: []string{"write_file"}}, "write_file", messages.LevelHighRisk, ""},
		{"command-allowlist", gateactor.Config{AutoApprovedCommands: []string{"git status", "git diff"}}, "execute_command", messages.LevelUnknown, "git status --short && git diff --stat"},
		{"declined-unattended", gateactor.Config{}, "write_file", messages.LevelHighRisk, ""},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			h := newHarness(&testing.T{}, tc.cfg)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.request("c", tc.tool, tc.level, tc.command)
				<-h.decided
			}
			b.StopTimer()
			drain(h)
		})
	}
}

// BenchmarkQueuedApprovals sends 100 requests at once and waits for all:
// the cost per decision when calls queue behind each other.
func BenchmarkQueuedApprovals(b *testing.B) {
	h := newHarness(&testing.T{}, gateactor.Config{Policy: messages.PolicyHighRisk})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < 100; j++ {
			h.request("c", "write_file", messages.LevelHighRisk, "")
		}
		for j := 0; j < 100; j++ {
			<-h.decided
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/decision")
	drain(h)
}

func drain(h *harness) {
	for {
		select {
		case <-h.eventsCh:
		default:
			return
		}
	}
}

// BenchmarkProposeGateExecute compares writing a file through the whole
// two-phase path (propose, gate decision by policy, twin) with calling the
// twin directly, as a runtime without a gate would.
func BenchmarkProposeGateExecute(b *testing.B) {
	dir := b.TempDir()
	reg, err := tools.NewRegistry(writetools.Tools()...)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("gated", func(b *testing.B) {
		t := &testing.T{}
		h := newHarness(t, gateactor.Config{Policy: messages.PolicyHighRisk})
		for i := 0; i < b.N; i++ {
			args, _ := json.Marshal(map[string]any{"path": filepath.Join(dir, "g.txt"), "content": "x"})
			r := callThroughGate(t, h, reg, dir, messages.ToolCall{ID: "c1", Name: "write_file", Arguments: string(args)})
			if !r.Result.Success {
				b.Fatalf("%+v", r.Result)
			}
			drain(h)
		}
	})
	b.Run("direct", func(b *testing.B) {
		env := &tools.Env{WorkDir: dir, Home: dir}
		propose, _ := reg.Lookup("write_file")
		twin, _ := reg.Lookup("execute_write_file")
		for i := 0; i < b.N; i++ {
			_ = os.Remove(filepath.Join(dir, "d.txt"))
			args, _ := json.Marshal(map[string]any{"path": filepath.Join(dir, "d.txt"), "content": "x"})
			p := propose.Handler(context.Background(), env, args)
			r := twin.Handler(context.Background(), env, p.Approval.ExecuteArgs)
			if !r.Success {
				b.Fatalf("%+v", r)
			}
		}
	})
}
