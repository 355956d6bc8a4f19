package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/jazz-run/jazz/provider"
)

// maxErrorMessage bounds the server text quoted in an error.
const maxErrorMessage = 500

// malformedError marks an answer the client could not parse: bad JSON in
// a data line, no choices. It becomes provider.Malformed, which the retry
// policy tries once more (a streamed one as a non-streaming call, the
// best remedy for a server whose streaming is broken). A stream that
// just stops is a lost connection instead (io.ErrUnexpectedEOF).
type malformedError struct{ err error }

func (e *malformedError) Error() string { return e.err.Error() }
func (e *malformedError) Unwrap() error { return e.err }

// statusError reads the error body of a non-2xx answer.
func statusError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return provider.StatusFailure(resp, raw, errorMessage)
}

// errorMessage extracts the human message from an error body: OpenAI's
// {"error":{"message"}}, a bare {"error":"…"} or {"message":"…"}, else the
// raw text.
func errorMessage(status int, raw []byte) string {
	var body struct {
		Error   *wireErrorBody `json:"error"`
		Message string         `json:"message"`
		Detail  string         `json:"detail"`
	}
	msg := ""
	if json.Unmarshal(raw, &body) == nil {
		switch {
		case body.Error != nil && body.Error.Message != "":
			msg = body.Error.Message
		case body.Message != "":
			msg = body.Message
		case body.Detail != "":
			msg = body.Detail
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(string(raw))
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return cut(msg)
}

// cut bounds s to maxErrorMessage bytes on a rune boundary.
func cut(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxErrorMessage {
		return s
	}
	n := maxErrorMessage
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// transportError maps a failed HTTP round trip. A ctx that ended is the
// caller's doing and is returned as such, never as a retryable error.
func (c *Client) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", c.opts.Name, context.Cause(ctx))
	}
	if le := provider.LimitFailure(c.opts.Name, err); le != nil {
		return le
	}
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	return provider.NetworkError(
		fmt.Errorf("cannot reach %s at %s: %w", c.opts.Name, c.opts.BaseURL, inner),
		c.opts.UnreachableHint)
}

// readError maps a failure while reading a 2xx answer.
func (c *Client) readError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", c.opts.Name, context.Cause(ctx))
	}
	var pe *provider.Error
	if errors.As(err, &pe) {
		return err
	}
	if le := provider.LimitFailure(c.opts.Name, err); le != nil {
		return le
	}
	var me *malformedError
	if errors.As(err, &me) {
		return provider.Malformed(c.opts.Name, me.err)
	}
	return provider.NetworkError(fmt.Errorf("%s: connection lost while reading the answer: %w", c.opts.Name, err), "")
}
