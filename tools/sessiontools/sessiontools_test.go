package sessiontools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/tools"
)

func env(t *testing.T) *tools.Env {
	t.Helper()
	return &tools.Env{AgentID: "dev", ConversationID: "conv", JazzHome: t.TempDir()}
}

func run(t *testing.T, name string, e *tools.Env, args string) (tools.Result, map[string]any) {
	t.Helper()
	reg, err := tools.NewRegistry(Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Validate(name, json.RawMessage(args)); err != nil {
		return tools.Result{Error: err.Error()}, nil
	}
	tool, _ := reg.Lookup(name)
	r := tool.Handler(context.Background(), e, json.RawMessage(args))
	var m map[string]any
	if b, err := json.Marshal(r.Value); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	return r, m
}

func TestLevels(t *testing.T) {
	want := map[string]string{ManageTodos: messages.LevelLowRisk, UpdateTaskState: messages.LevelLowRisk, UpdateWorkState: messages.LevelLowRisk,
		ListTodos: messages.LevelReadOnly, ContextInfo: messages.LevelReadOnly, GetTime: messages.LevelReadOnly, SummarizeContext: messages.LevelReadOnly}
	for _, tool := range Tools() {
		if want[tool.Name] != tool.Level {
			t.Errorf("%s: level %s, want %s", tool.Name, tool.Level, want[tool.Name])
		}
		delete(want, tool.Name)
	}
	if len(want) > 0 {
		t.Errorf("missing: %v", want)
	}
}

func TestTodos(t *testing.T) {
	e := env(t)
	if _, m := run(t, ListTodos, e, `{}`); m["totalItems"] != 0.0 || m["message"] != NoTodos {
		t.Fatalf("empty list: %v", m)
	}
	r, m := run(t, ManageTodos, e, `{"todos": [{"content": "read a", "status": "completed"}, {"content": "read b", "status": "in_progress", "priority": "high"}, {"content": "c", "status": "pending"}, {"content": "d", "status": "cancelled"}]}`)
	if !r.Success || m["message"] != "Todo list saved (4 items: 1 done, 1 in progress, 1 pending, 1 cancelled)" || m["totalItems"] != 4.0 {
		t.Fatalf("manage: %+v %v", r, m)
	}
	_, m = run(t, ListTodos, e, `{}`)
	todos, _ := m["todos"].([]any)
	if m["totalItems"] != 4.0 || m["inProgress"] != 1.0 || len(todos) != 4 || todos[0].(map[string]any)["priority"] != "medium" {
		t.Fatalf("list: %v", m)
	}
	if r, _ := run(t, ManageTodos, e, `{"todos": [{"content": "x", "status": "done"}]}`); r.Success {
		t.Error("a bad status passed the schema")
	}
	// A write that cannot happen says which file.
	ro := &tools.Env{AgentID: "dev", ConversationID: "conv", JazzHome: filepath.Join(e.JazzHome, "file")}
	if err := os.WriteFile(ro.JazzHome, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r, _ := run(t, ManageTodos, ro, `{"todos": []}`); r.Success || !strings.HasPrefix(r.Error, "Failed to write todo file "+filepath.Join(ro.JazzHome, "work")) {
		t.Errorf("unwritable: %+v", r)
	}
}

func TestTaskState(t *testing.T) {
	for _, name := range []string{UpdateTaskState, UpdateWorkState} {
		e := env(t)
		if _, m := run(t, name, e, `{}`); m["formatted"] != NoTaskState {
			t.Fatalf("%s read-back of nothing: %v", name, m)
		}
		r, m := run(t, name, e, `{"goal": "ship", "workItems": [{"description": "tests", "status": "failing", "verifiedBy": "go test"}]}`)
		if !r.Success || m["formatted"] != "**Goal:** ship\n\n**Work items:**\n- [failing] tests (verified by: go test)" {
			t.Fatalf("%s: %+v %v", name, r, m)
		}
		_, m = run(t, name, e, `{"nextStep": "fix"}`)
		st, _ := m["state"].(map[string]any)
		if st["goal"] != "ship" || st["nextStep"] != "fix" || st["updatedAt"] == "" {
			t.Errorf("%s: fields must patch one by one: %v", name, st)
		}
		if r, _ := run(t, name, e, `{"status": "x"}`); r.Success {
			t.Errorf("%s: an unknown field passed", name)
		}
	}
	if r, _ := run(t, UpdateTaskState, &tools.Env{AgentID: "dev", JazzHome: t.TempDir()}, `{"goal": "g"}`); r.Error != NoConversation {
		t.Errorf("no conversation: %+v", r)
	}
}

// TestReadBackRedacts: whatever the state holds, the run's own secrets
// never come back out of it.
func TestReadBackRedacts(t *testing.T) {
	e := env(t)
	e.Secrets = secrets.NewSet([]string{"sk-live-0123456789abcdef"})
	run(t, UpdateTaskState, e, `{"goal": "use sk-live-0123456789abcdef", "decisions": ["key is sk-live-0123456789abcdef"]}`)
	run(t, ManageTodos, e, `{"todos": [{"content": "rotate sk-live-0123456789abcdef", "status": "pending"}]}`)
	for _, name := range []string{UpdateTaskState, ListTodos} {
		r, _ := run(t, name, e, `{}`)
		b, _ := json.Marshal(r.Value)
		if strings.Contains(string(b), "sk-live-0123456789abcdef") {
			t.Errorf("%s leaked the secret: %s", name, b)
		}
	}
}

type fakeWindow struct {
	used, budget int
	result       tools.Compaction
	err          error
}

func (f fakeWindow) Usage() (int, int) { return f.used, f.budget }
func (f fakeWindow) Compact(context.Context) (tools.Compaction, error) {
	return f.result, f.err
}

func TestContextInfo(t *testing.T) {
	tests := []struct {
		w           tools.ContextWindow
		max, pct    float64
		rec         string
		remainingOK float64
	}{
		{fakeWindow{used: 1000, budget: 10000}, 10000, 10, "Context budget is healthy. Proceed normally.", 9000},
		{fakeWindow{used: 6000, budget: 10000}, 10000, 60, "Context is moderately used. Consider being concise.", 4000},
		{fakeWindow{used: 9500, budget: 10000}, 10000, 95, "Context is limited. Complete current task or consider summarizing earlier context.", 500},
		{fakeWindow{used: 5000}, UnknownBudget, 10, "Context budget is healthy. Proceed normally.", 45000},
		{nil, UnknownBudget, 0, "Context budget is healthy. Proceed normally.", UnknownBudget},
	}
	for _, tt := range tests {
		e := env(t)
		e.Context = tt.w
		_, m := run(t, ContextInfo, e, `{}`)
		if m["maxTokens"] != tt.max || m["percentUsed"] != tt.pct || m["recommendation"] != tt.rec || m["remainingTokens"] != tt.remainingOK {
			t.Errorf("%+v: %v", tt.w, m)
		}
	}
}

func TestSummarizeContext(t *testing.T) {
	tests := []struct {
		w    tools.ContextWindow
		want string
		ok   bool
	}{
		{nil, NoAgentContext, false},
		{fakeWindow{result: tools.Compaction{Empty: true}}, NoHistory, true},
		{fakeWindow{result: tools.Compaction{Nothing: true}}, NotEnoughHistory, true},
		{fakeWindow{result: tools.Compaction{Before: 40, After: 9, Summarized: 31}}, "Context compacted from 40 to 9 messages (summarized 31 older messages).", true},
		{fakeWindow{err: errors.New("summarizer down")}, "Could not compact the context: summarizer down", false},
	}
	for _, tt := range tests {
		e := env(t)
		e.Context = tt.w
		r, _ := run(t, SummarizeContext, e, `{}`)
		got := r.Error
		if r.Success {
			got, _ = r.Value.(string)
		}
		if r.Success != tt.ok || got != tt.want {
			t.Errorf("%+v: %+v", tt.w, r)
		}
	}
}

func TestGetTime(t *testing.T) {
	at := time.Date(2026, 12, 31, 23, 30, 0, 0, time.UTC)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	r := TimeAt(at, paris)
	m := r.Value.(map[string]any)
	if m["iso"] != "2026-12-31T23:30:00.000Z" || m["timestamp"] != at.UnixMilli() || m["dayOfWeek"] != "Friday" ||
		m["localDate"] != "2027-01-01" || m["localTime"] != "00:30:00" || m["timezone"] != "Europe/Paris" {
		t.Errorf("%v", m)
	}
	if Location(&tools.Env{Timezone: "Europe/Paris"}) != paris && Location(&tools.Env{Timezone: "Europe/Paris"}).String() != "Europe/Paris" {
		t.Error("the run's timezone is not honoured")
	}
	if Location(&tools.Env{}) != time.UTC || Location(&tools.Env{Timezone: "Mars/Olympus"}) != time.UTC {
		t.Error("unset or unknown must be UTC")
	}
	_, m2 := run(t, GetTime, &tools.Env{Timezone: "Asia/Tokyo"}, `{}`)
	if m2["timezone"] != "Asia/Tokyo" {
		t.Errorf("handler: %v", m2)
	}
}

// TestNothingSecretOnDisk: the run's secrets are replaced before the
// task state and the todos are written, as they are in the envelope and
// the saved conversation: a later run (with other secrets known, or none)
// and whoever reads JAZZ_HOME/work never find one there.
func TestNothingSecretOnDisk(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	e := env(t)
	e.Secrets = secrets.NewSet([]string{key})
	if r, _ := run(t, UpdateTaskState, e, `{"goal": "use `+key+`", "decisions": ["key is `+key+`"]}`); !r.Success {
		t.Fatalf("update_task_state: %+v", r)
	}
	if r, _ := run(t, ManageTodos, e, `{"todos": [{"content": "rotate `+key+`", "status": "pending"}]}`); !r.Success {
		t.Fatalf("manage_todos: %+v", r)
	}
	files := 0
	_ = filepath.WalkDir(filepath.Join(e.JazzHome, "work"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), key) || !json.Valid(b) {
			t.Errorf("%s holds the secret or is no longer JSON: %s", p, b)
		}
		return nil
	})
	if files != 2 {
		t.Errorf("%d work-state files written, want 2", files)
	}
}
