package tools

import (
	"context"
	"encoding/json"
)

// judgementKey carries the gate's judgement of an approved call in the
// context of its execute twin.
type judgementKey struct{}

// WithJudgement gives an approved twin's handler the gate's judgement
// (messages.ApprovalDecided.Judgement, a shellguard.Judgement as JSON).
// Only the tool actor sets it, from the gate's decision: it travels beside
// the arguments, never in them, so the model cannot supply one.
func WithJudgement(ctx context.Context, j json.RawMessage) context.Context {
	return context.WithValue(ctx, judgementKey{}, j)
}

// JudgementFrom is the judgement WithJudgement put in ctx, or nil.
func JudgementFrom(ctx context.Context) json.RawMessage {
	j, _ := ctx.Value(judgementKey{}).(json.RawMessage)
	return j
}
