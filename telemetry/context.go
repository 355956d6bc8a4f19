package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// spanContext names a context-management step: `context clear`,
// `context compact`, `context trim`.
const spanContext = "context"

// errContext is a failed context step (a summarizer that failed).
const errContext = "context_failed"

// ContextInfo describes one context-management step of an agent
// (agent-loop.md §4): which rung, the estimated prompt tokens and the
// message count before and after, and the budget.
type ContextInfo struct {
	Rung                          string
	TokensBefore, TokensAfter     int
	MessagesBefore, MessagesAfter int
	Budget                        int
	// Cleared counts the tool results a clear replaced.
	Cleared int
	// Err is why the step failed, "" when it did not.
	Err string
}

// RecordContext records a `context <rung>` span under ctx (the
// iteration's). It carries only counts, never content.
func (t *Telemetry) RecordContext(ctx context.Context, info ContextInfo) {
	if !t.Enabled() {
		return
	}
	_, span := t.start(ctx, spanContext+" "+info.Rung, time.Time{},
		attribute.String("jazz.event.type", "context_"+info.Rung),
		attribute.String("jazz.context.rung", info.Rung),
		attribute.Int("jazz.context.tokensBefore", info.TokensBefore),
		attribute.Int("jazz.context.tokensAfter", info.TokensAfter),
		attribute.Int("jazz.context.tokensSaved", info.TokensBefore-info.TokensAfter),
		attribute.Int("jazz.context.messagesBefore", info.MessagesBefore),
		attribute.Int("jazz.context.messagesAfter", info.MessagesAfter),
		attribute.Int("jazz.context.budget", info.Budget),
		attribute.Int("jazz.context.cleared", info.Cleared),
	)
	handle{t: t, span: span}.end(errContext, info.Err)
}
