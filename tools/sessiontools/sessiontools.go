// Package sessiontools are the tools an agent uses on its own session
// rather than the world (tool-schemas.md §8): its todo list, its task
// state (update_task_state, and the seed's name update_work_state as an
// alias), the time, how full its context is, and compacting it on purpose.
// The list and the state live in the conversation's work state
// (workstate); the context tools reach the agent through Env.Context.
package sessiontools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/workstate"
)

// Tool names.
const (
	ManageTodos      = "manage_todos"
	ListTodos        = "list_todos"
	ContextInfo      = "context_info"
	GetTime          = "get_time"
	SummarizeContext = "summarize_context"
	UpdateTaskState  = "update_task_state"
	// UpdateWorkState is the seed's name for update_task_state.
	UpdateWorkState = "update_work_state"
)

// Fixed texts (tool-schemas.md §8).
const (
	NoTodos          = "No todos found. Use manage_todos to create a todo list."
	NoHistory        = "No conversation history to summarize."
	NotEnoughHistory = "Not enough conversation history to summarize — need at least a few messages beyond the system prompt."
	NoAgentContext   = "Summarize tool requires parent agent context. This is a bug — please report it."
	NoConversation   = "No conversation is active, so there is no task state to update."
	NoTaskState      = "No task state recorded yet."
	// UnknownBudget is context_info's maxTokens when the budget is unknown.
	UnknownBudget = 50000
)

// Tools are the session tools. The todo list and the task state are
// low-risk (they write only the conversation's own work state); the rest
// read only.
func Tools() []tools.Tool {
	state := tools.Tool{
		Name: UpdateTaskState,
		Description: "Record the task's state so it survives context compaction and later runs of this conversation: " +
			"goal, constraints, decisions, work items (with how each was verified), files touched, open questions, next step. " +
			"Each field you give replaces the stored one whole (arrays included); fields you leave out stay. " +
			"Call with no fields to read the state back.",
		Schema:  json.RawMessage(stateSchema),
		Level:   messages.LevelLowRisk,
		Handler: updateTaskState,
	}
	alias := state
	alias.Name = UpdateWorkState
	alias.Description = "The same as update_task_state (its older name). " + state.Description
	return []tools.Tool{
		{
			Name: ManageTodos,
			Description: "Save your todo list for this task, replacing the previous one whole. " +
				"Each item: content, status (pending, in_progress, completed, cancelled), priority (high, medium, low; default medium).",
			Schema:  json.RawMessage(todosSchema),
			Level:   messages.LevelLowRisk,
			Handler: manageTodos,
		},
		{Name: ListTodos, Description: "Show your saved todo list with counts per status.", Schema: json.RawMessage(noArgs),
			Level: messages.LevelReadOnly, Handler: listTodos},
		{Name: ContextInfo, Description: "How full your context window is: tokens used, the budget, what is left, and a recommendation.",
			Schema: json.RawMessage(noArgs), Level: messages.LevelReadOnly, Handler: contextInfo},
		{Name: GetTime, Description: "The current date and time, in the run's timezone and as UTC.", Schema: json.RawMessage(noArgs),
			Level: messages.LevelReadOnly, Handler: getTime},
		{Name: SummarizeContext, Description: "Compact your context now: the older part of this conversation is replaced by a summary " +
			"and the recent part kept. Use it before a long new phase of work; it happens automatically when the context fills up.",
			Schema: json.RawMessage(noArgs), Level: messages.LevelReadOnly, LongRunning: true, Handler: summarizeContext},
		state,
		alias,
	}
}

const noArgs = `{"type": "object", "properties": {}, "additionalProperties": false}`

const todosSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["todos"],
  "properties": {
    "todos": {"type": "array", "maxItems": 200, "items": {
      "type": "object",
      "additionalProperties": false,
      "required": ["content", "status"],
      "properties": {
        "content": {"type": "string", "maxLength": 2000},
        "status": {"enum": ["pending", "in_progress", "completed", "cancelled"]},
        "priority": {"enum": ["high", "medium", "low"]}
      }
    }}
  }
}`

const strList = `{"type": "array", "maxItems": 200, "items": {"type": "string", "maxLength": 4000}}`

const stateSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "goal": {"type": "string", "maxLength": 4000},
    "constraints": ` + strList + `,
    "decisions": ` + strList + `,
    "workItems": {"type": "array", "maxItems": 200, "items": {
      "type": "object",
      "additionalProperties": false,
      "required": ["description", "status"],
      "properties": {
        "description": {"type": "string", "minLength": 1, "maxLength": 4000},
        "status": {"enum": ["pending", "in_progress", "unverified", "done", "failing"]},
        "verifiedBy": {"type": "string", "maxLength": 4000}
      }
    }},
    "filesTouched": ` + strList + `,
    "openQuestions": ` + strList + `,
    "nextStep": {"type": "string", "maxLength": 4000}
  }
}`

// store is the work state of env's conversation.
func store(env *tools.Env) workstate.Store {
	return workstate.Store{Home: env.JazzHome, AgentID: env.AgentID, ConversationID: env.ConversationID, Redact: env.Secrets.RedactJSON}
}

// redact hides the run's own secrets in text read back from disk.
func redact(env *tools.Env, s string) string {
	if env.Secrets == nil {
		return s
	}
	return env.Secrets.Redact(s)
}

type counts struct {
	TotalItems int `json:"totalItems"`
	Pending    int `json:"pending"`
	InProgress int `json:"inProgress"`
	Completed  int `json:"completed"`
	Cancelled  int `json:"cancelled"`
}

func count(todos []workstate.Todo) counts {
	c := counts{TotalItems: len(todos)}
	for _, t := range todos {
		switch t.Status {
		case "pending":
			c.Pending++
		case "in_progress":
			c.InProgress++
		case "completed":
			c.Completed++
		case "cancelled":
			c.Cancelled++
		}
	}
	return c
}

func manageTodos(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a struct {
		Todos []workstate.Todo `json:"todos"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return tools.Fail("invalid arguments: " + err.Error())
	}
	for i := range a.Todos {
		if a.Todos[i].Priority == "" {
			a.Todos[i].Priority = "medium"
		}
	}
	s := store(env)
	if err := s.SaveTodos(ctx, a.Todos); err != nil {
		return tools.Fail(fmt.Sprintf("Failed to write todo file %s: %v", s.TodosPath(), err))
	}
	c := count(a.Todos)
	return tools.OK(struct {
		counts
		Message string `json:"message"`
	}{c, fmt.Sprintf("Todo list saved (%d items: %d done, %d in progress, %d pending, %d cancelled)",
		c.TotalItems, c.Completed, c.InProgress, c.Pending, c.Cancelled)})
}

func listTodos(ctx context.Context, env *tools.Env, _ json.RawMessage) tools.Result {
	todos, err := store(env).Todos(ctx)
	if err != nil || len(todos) == 0 {
		return tools.OK(map[string]any{"totalItems": 0, "todos": []workstate.Todo{}, "message": NoTodos})
	}
	for i := range todos {
		todos[i].Content = redact(env, todos[i].Content)
	}
	return tools.OK(struct {
		counts
		Todos []workstate.Todo `json:"todos"`
	}{count(todos), todos})
}

func agentContext(env *tools.Env) tools.ContextWindow {
	if env == nil {
		return nil
	}
	return env.Context
}

func contextInfo(_ context.Context, env *tools.Env, _ json.RawMessage) tools.Result {
	used, budget := 0, 0
	if c := agentContext(env); c != nil {
		used, budget = c.Usage()
	}
	if budget <= 0 {
		budget = UnknownBudget
	}
	pct := math.Round(float64(used) / float64(budget) * 100)
	rec := "Context budget is healthy. Proceed normally."
	switch {
	case pct >= 80:
		rec = "Context is limited. Complete current task or consider summarizing earlier context."
	case pct >= 50:
		rec = "Context is moderately used. Consider being concise."
	}
	return tools.OK(map[string]any{"estimatedTokensUsed": used, "maxTokens": budget, "remainingTokens": max(budget-used, 0),
		"percentUsed": int(pct), "recommendation": rec})
}

// Location is the run's timezone, UTC when unset or unknown.
func Location(env *tools.Env) *time.Location {
	if env != nil && env.Timezone != "" {
		if loc, err := time.LoadLocation(env.Timezone); err == nil {
			return loc
		}
	}
	return time.UTC
}

// getTime is get_time: now, in the run's timezone.
func getTime(_ context.Context, env *tools.Env, _ json.RawMessage) tools.Result {
	return TimeAt(time.Now(), Location(env))
}

// TimeAt is get_time's result for instant t in loc.
func TimeAt(t time.Time, loc *time.Location) tools.Result {
	local := t.In(loc)
	return tools.OK(map[string]any{
		"iso":       t.UTC().Format("2006-01-02T15:04:05.000Z"),
		"timestamp": t.UnixMilli(),
		"dayOfWeek": local.Weekday().String(),
		"localDate": local.Format("2006-01-02"),
		"localTime": local.Format("15:04:05"),
		"timezone":  loc.String(),
	})
}

func summarizeContext(ctx context.Context, env *tools.Env, _ json.RawMessage) tools.Result {
	c := agentContext(env)
	if c == nil {
		return tools.Fail(NoAgentContext)
	}
	r, err := c.Compact(ctx)
	if err != nil {
		return tools.Fail("Could not compact the context: " + err.Error())
	}
	switch {
	case r.Empty:
		return tools.OK(NoHistory)
	case r.Nothing:
		return tools.OK(NotEnoughHistory)
	}
	return tools.OK(fmt.Sprintf("Context compacted from %d to %d messages (summarized %d older messages).", r.Before, r.After, r.Summarized))
}

func updateTaskState(ctx context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	if env == nil || strings.TrimSpace(env.ConversationID) == "" {
		return tools.Fail(NoConversation)
	}
	var given map[string]json.RawMessage
	if err := json.Unmarshal(raw, &given); err != nil {
		return tools.Fail("invalid arguments: " + err.Error())
	}
	var patch workstate.State
	if err := json.Unmarshal(raw, &patch); err != nil {
		return tools.Fail("invalid arguments: " + err.Error())
	}
	s := store(env)
	if len(given) == 0 {
		st, err := s.State(ctx)
		if err != nil {
			return tools.Fail("Could not read the task state: " + err.Error())
		}
		if st.Empty() {
			return tools.OK(map[string]any{"formatted": NoTaskState, "state": map[string]any{}})
		}
		return tools.OK(map[string]any{"formatted": redact(env, workstate.Format(st)), "state": redactState(env, st)})
	}
	fields := make([]string, 0, len(given))
	for k := range given {
		fields = append(fields, k)
	}
	st, err := s.Patch(ctx, patch, fields)
	if err != nil && st.UpdatedAt == "" {
		return tools.Fail("Could not update the task state: " + err.Error())
	}
	out := map[string]any{"formatted": redact(env, workstate.Format(st)), "state": redactState(env, st)}
	if err != nil {
		// The repo ignored write errors; a failed write is said here, so
		// nobody believes the state will survive when it will not.
		out["warning"] = err.Error()
	}
	return tools.OK(out)
}

// redactState is st with the run's secrets hidden in every string.
func redactState(env *tools.Env, st workstate.State) workstate.State {
	if env.Secrets == nil {
		return st
	}
	b, err := json.Marshal(st)
	if err != nil {
		return workstate.State{}
	}
	var out workstate.State
	if json.Unmarshal(env.Secrets.RedactJSON(b), &out) != nil {
		return workstate.State{}
	}
	return out
}
