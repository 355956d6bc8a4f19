package gateactor_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/shellguard"
)

func judgingChecks() gateactor.CommandChecks {
	return gateactor.CommandChecks{AllowlistApproves: shellguard.AllowlistApproves, StaticClassify: shellguard.StaticClassify,
		Keys: shellguard.Keys, Judge: shellguard.JudgeJSON, Why: shellguard.RefusalReason}
}

func judgementOf(t *testing.T, d messages.ApprovalDecided) shellguard.Judgement {
	t.Helper()
	var j shellguard.Judgement
	if err := json.Unmarshal(d.Judgement, &j); err != nil {
		t.Fatalf("decision %+v carries no judgement: %v", d, err)
	}
	return j
}

// Every approved command carries the judgement of the step that approved
// it, for the execute twin's run-time check.
func TestDecisionsCarryTheJudgement(t *testing.T) {
	t.Run("allowlist", func(t *testing.T) {
		h := newHarness(t, gateactor.Config{AutoApprovedCommands: []string{"git status", "ls"}, Checks: judgingChecks()})
		h.request("c1", "execute_command", messages.LevelUnknown, "git status && ls -la")
		j := judgementOf(t, h.expectDecision("c1"))
		if j.By != shellguard.ByAllowlist || j.Command != "git status && ls -la" || !slices.Equal(j.Entries, []string{"git status", "ls"}) {
			t.Fatalf("judgement %+v", j)
		}
		if err := j.CheckExec([]string{"rm", "x"}); err == nil {
			t.Fatal("the judgement admits a program the allowlist did not")
		}
	})
	t.Run("static", func(t *testing.T) {
		h := newHarness(t, gateactor.Config{Policy: messages.PolicyReadOnly, Checks: judgingChecks()})
		h.request("c1", "execute_command", messages.LevelUnknown, "sort -n f")
		j := judgementOf(t, h.expectDecision("c1"))
		if j.By != shellguard.ByStatic || j.Level != messages.LevelReadOnly {
			t.Fatalf("judgement %+v", j)
		}
		if err := j.CheckExec([]string{"sort", "-o", "f"}); err == nil {
			t.Fatal("the judgement admits an argv the static pass did not judge")
		}
	})
	t.Run("classifier", func(t *testing.T) {
		h := newHarness(t, gateactor.Config{Policy: messages.PolicyLowRisk, Reachable: true, ModelContext: true, Checks: judgingChecks(),
			Classify: func(context.Context, string) (string, error) { return "low-risk", nil }})
		h.request("c1", "execute_command", messages.LevelUnknown, "make docs")
		if j := judgementOf(t, h.expectDecision("c1")); j.By != shellguard.ByClassifier || j.Level != messages.LevelLowRisk {
			t.Fatalf("judgement %+v", j)
		}
	})
	t.Run("policy", func(t *testing.T) {
		h := newHarness(t, gateactor.Config{Policy: messages.PolicyHighRisk, Checks: judgingChecks()})
		h.request("c1", "execute_command", messages.LevelUnknown, "rm x")
		if j := judgementOf(t, h.expectDecision("c1")); j.By != shellguard.ByPolicy {
			t.Fatalf("judgement %+v", j)
		}
	})
	t.Run("tool allowlist", func(t *testing.T) {
		h := newHarness(t, gateactor.Config{AutoApproveTools: []string{"execute_command"}, Checks: judgingChecks()})
		h.request("c1", "execute_command", messages.LevelUnknown, "rm x")
		if j := judgementOf(t, h.expectDecision("c1")); j.By != shellguard.ByTool {
			t.Fatalf("judgement %+v", j)
		}
	})
	t.Run("human", func(t *testing.T) {
		h := newHarness(t, gateactor.Config{Reachable: true, Checks: judgingChecks()})
		h.request("c1", "execute_command", messages.LevelUnknown, "rm x")
		h.expectAsked("c1")
		h.answer("c1", true, "")
		if j := judgementOf(t, h.expectDecision("c1")); j.By != shellguard.ByHuman {
			t.Fatalf("judgement %+v", j)
		}
	})
	t.Run("declined: none, and the reason", func(t *testing.T) {
		h := newHarness(t, gateactor.Config{Policy: messages.PolicyReadOnly, AutoApprovedCommands: []string{"git status"}, Checks: judgingChecks()})
		h.request("c1", "execute_command", messages.LevelUnknown, "git -C status tag x")
		d := h.expectDecision("c1")
		if d.Approved || d.Judgement != nil {
			t.Fatalf("decision %+v", d)
		}
		if !strings.Contains(d.Note, "not auto-approved: ") || !strings.Contains(d.Note, "-C") {
			t.Fatalf("the refusal does not say why: %q", d.Note)
		}
	})
}

// An allowlist approval of a program no inspect-only grammar holds says
// so on its approval_resolved event; one of an inspecting command says
// nothing more.
func TestAllowlistApprovalSaysWhatItAdmittedWhole(t *testing.T) {
	checks := judgingChecks()
	checks.AllowlistNote = shellguard.AllowlistNote
	h := newHarness(t, gateactor.Config{AutoApprovedCommands: []string{"npm test", "git diff"}, Checks: checks})
	resolvedMessage := func(id string) string {
		t.Helper()
		deadline := time.After(3 * time.Second)
		for {
			select {
			case ev := <-h.eventsCh:
				if ev.Type == messages.EventApprovalResolved && ev.ToolCallID == id {
					return ev.Message
				}
			case <-deadline:
				t.Fatalf("no approval_resolved for %s", id)
			}
		}
	}
	h.request("c1", "execute_command", messages.LevelUnknown, "npm test")
	h.expectDecision("c1")
	if m := resolvedMessage("c1"); !strings.Contains(m, "`npm test`") || !strings.Contains(m, "allowlisting a program that can write lets it write") {
		t.Fatalf("approval_resolved message %q", m)
	}
	h.request("c2", "execute_command", messages.LevelUnknown, "git diff --stat")
	h.expectDecision("c2")
	if m := resolvedMessage("c2"); m != "" {
		t.Fatalf("approval_resolved message of an inspecting command %q", m)
	}
}

// A call whose propose half found what no automatic step may approve
// (NotAutomatic) passes neither the command allowlist nor the static
// pass: unattended it is declined with the reason, under the high-risk
// policy the policy approves it.
func TestNotAutomaticSkipsTheAutomaticSteps(t *testing.T) {
	send := func(h *harness, id string) {
		h.engine.Send(h.probe, messages.ApprovalRequired{
			Place: messages.Place{RunID: runID, ToolCallID: id}, ToolCallID: id, ToolName: "execute_command",
			RiskLevel: messages.LevelUnknown, Message: "m", ExecuteToolName: "execute_execute_command",
			ExecuteArgs: json.RawMessage(`{}`), Command: "git status",
			NotAutomatic: "the repository's config runs programs: core.fsmonitor (.git/config)"})
	}
	h := newHarness(t, gateactor.Config{Policy: messages.PolicyReadOnly, AutoApprovedCommands: []string{"git status"}, Checks: judgingChecks()})
	send(h, "c1")
	d := h.expectDecision("c1")
	if d.Approved || !strings.Contains(d.Note, "not auto-approved: the repository's config runs programs: core.fsmonitor") {
		t.Fatalf("decision %+v", d)
	}
	h = newHarness(t, gateactor.Config{Policy: messages.PolicyHighRisk, AutoApprovedCommands: []string{"git status"}, Checks: judgingChecks()})
	send(h, "c2")
	if d := h.expectDecision("c2"); !d.Approved || d.DecidedBy != messages.DecidedByPolicy || judgementOf(t, d).By != shellguard.ByPolicy {
		t.Fatalf("decision %+v", d)
	}
}

// A call whose propose half found it changes what decides later calls or
// runs (HumanOnly) is approved by no automatic step, in every
// combination of policy, tool allowlist, command allowlist and a
// remembered "always": unattended it is declined with the reason, with a
// person reachable it is asked, and an "always" answered on it approves
// no later human-only call.
func TestHumanOnlyIsDecidedByAPersonOnly(t *testing.T) {
	send := func(h *harness, id string) {
		h.engine.Send(h.probe, messages.ApprovalRequired{
			Place: messages.Place{RunID: runID, ToolCallID: id}, ToolCallID: id, ToolName: "write_file",
			RiskLevel: messages.LevelHighRisk, Message: "m", ExecuteToolName: "execute_write_file",
			ExecuteArgs: json.RawMessage(`{}`), HumanOnly: "it writes .git/hooks/pre-commit"})
	}
	policies := []string{messages.PolicyNone, messages.PolicyReadOnly, messages.PolicyLowRisk, messages.PolicyHighRisk}
	for _, policy := range policies {
		for _, tools := range [][]string{nil, {"write_file"}} {
			cfg := gateactor.Config{Policy: policy, AutoApproveTools: tools, AutoApprovedCommands: []string{"git status"}, Checks: judgingChecks()}
			h := newHarness(t, cfg)
			send(h, "c1")
			if d := h.expectDecision("c1"); d.Approved || !strings.Contains(d.Note, "only a person may approve it: it writes .git/hooks/pre-commit") {
				t.Fatalf("policy %q tools %v, unattended: decision %+v", policy, tools, d)
			}
			cfg.Reachable = true
			h = newHarness(t, cfg)
			send(h, "c2")
			h.expectAsked("c2")
			h.answer("c2", true, messages.RememberTool)
			if d := h.expectDecision("c2"); !d.Approved || d.Auto {
				t.Fatalf("policy %q tools %v: decision %+v", policy, tools, d)
			}
			send(h, "c3")
			h.expectAsked("c3")
			h.answer("c3", false, "")
			if d := h.expectDecision("c3"); d.Approved {
				t.Fatalf("policy %q tools %v: a remembered answer approved a human-only call: %+v", policy, tools, d)
			}
		}
	}
}
