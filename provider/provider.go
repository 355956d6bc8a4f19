// Package provider defines what jazz needs from a language model: one Chat
// call that streams deltas and returns the assistant message, its tool
// calls and usage. Vendors live in subpackages; registry resolves
// `provider/model` ids to one of them.
package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider/httpx"
)

// Request is one model call.
type Request struct {
	Model           string
	Messages        []messages.ChatMessage
	Tools           []messages.ToolSpec
	Stream          bool
	ReasoningEffort string // "", "low", "medium", "high", "disable"
	Temperature     *float64
}

// Delta is one streamed piece of the answer.
type Delta struct {
	Text      string
	Reasoning string
}

// Response is the model's complete answer to one Request.
type Response struct {
	ID      string
	Model   string
	Message messages.ChatMessage // Role assistant
	Usage   messages.Usage
	// UsageReported is false when the server sent no usage at all.
	UsageReported bool
	// StopReason is why the model stopped, in the server's words
	// (end_turn, tool_use, max_tokens, refusal, …); "" when it said none.
	StopReason string
}

// Provider is one model endpoint. OnDelta may be nil; it is called from the
// goroutine running Chat, in order.
type Provider interface {
	Chat(ctx context.Context, req Request, onDelta func(Delta)) (Response, error)
}

// Error is a failed model call, classified for the retry policy.
type Error struct {
	// Status is the HTTP status, 0 when the request never got an answer.
	Status  int
	Message string
	// Retryable is true for 429, 5xx and network failures.
	Retryable bool
	// Reason is the retry notice's wording: "rate limit", "network issue",
	// "server error (<code>)", "malformed response"; "" when not retried.
	Reason string
	// Cause is what went wrong in a few words ("connection refused", the
	// server's message): the retry line names it.
	Cause string
	// RetryAfter is how long the server asked to wait (Retry-After).
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	if e.Status > 0 && !strings.Contains(e.Message, fmt.Sprintf("(%d)", e.Status)) && !strings.Contains(e.Message, fmt.Sprintf("HTTP %d", e.Status)) {
		return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// IsRetryable says whether err is worth another attempt.
func IsRetryable(err error) bool {
	var pe *Error
	return errors.As(err, &pe) && pe.Retryable
}

// ClassifyStatus builds the Error for an HTTP failure status and body text.
// The status is said once: Error adds "(HTTP <code>)" only to messages
// that do not already carry it.
func ClassifyStatus(status int, msg string) *Error {
	e := &Error{Status: status, Message: msg, Cause: Brief(msg)}
	switch {
	case status == 429:
		e.Retryable, e.Reason = true, ReasonRateLimit
	case status >= 500:
		e.Retryable, e.Reason = true, ServerReason(status)
		e.Message = fmt.Sprintf("Server error (%d): %s", status, msg)
	case status == 401 || status == 403:
		e.Message = fmt.Sprintf("Authentication failed (HTTP %d): %s. Check the API key for this provider.", status, strings.TrimRight(msg, "."))
	}
	return e
}

// NetworkError wraps a transport failure (refused, reset, DNS): retryable.
func NetworkError(err error, hint string) *Error {
	msg := err.Error()
	if hint != "" {
		msg += ". " + hint
	}
	return &Error{Message: msg, Retryable: true, Reason: ReasonNetwork, Cause: CauseOf(err), Err: err}
}

// LimitFailure is the Error for a call httpx stopped at one of its bounds
// (no answer, a stalled stream, an oversized response), nil when err is
// something else. name is the provider, for the message. A stall is worth
// another attempt; an oversized answer would only come again.
func LimitFailure(name string, err error) *Error {
	le, ok := httpx.AsLimit(err)
	if !ok {
		return nil
	}
	e := &Error{Message: fmt.Sprintf("%s: %v", name, le), Retryable: le.Retryable(), Err: err, Cause: string(le.Kind) + " limit"}
	if e.Retryable {
		e.Reason = ReasonNetwork
	}
	return e
}

// Known lists the provider names a model id may use.
func Known() []string {
	return []string{
		"openai", "anthropic", "gemini", "openrouter", "xai", "ai_gateway", "alibaba", "cerebras",
		"deepseek", "fireworks", "groq", "minimax", "mistral", "moonshotai", "togetherai", "zhipuai",
		"ollama", "llamacpp", "replay",
	}
}

// ParseModelID splits `provider/model` at the first slash.
func ParseModelID(id string) (providerName, model string, err error) {
	id = strings.TrimSpace(id)
	p, m, ok := strings.Cut(id, "/")
	p, m = strings.TrimSpace(p), strings.TrimSpace(m)
	if !ok || p == "" || m == "" {
		return "", "", fmt.Errorf("invalid model id %q: expected provider/model, for example openai/gpt-4o-mini", id)
	}
	for _, k := range Known() {
		if k == p {
			return p, m, nil
		}
	}
	return "", "", fmt.Errorf("invalid model id %q: unknown provider %q (known: %s)", id, p, strings.Join(Known(), ", "))
}
