package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// MalformedAnswer marks an answer a client could not parse (bad JSON in a
// data line, no choices). Exchange turns it into Malformed, which the
// retry policy tries once more (a streamed one as a non-streaming call,
// the best remedy for a server whose streaming is broken). A stream that
// just stops is a lost connection instead (io.ErrUnexpectedEOF).
type MalformedAnswer struct{ Err error }

func (e *MalformedAnswer) Error() string { return e.Err.Error() }
func (e *MalformedAnswer) Unwrap() error { return e.Err }

// Endpoint is one model API a client posts its requests to. The
// vendor's wire format stays with the client (its body, its readers, its
// error bodies); how one request goes out and how each way it can fail
// becomes an error is here, the same for every vendor.
type Endpoint struct {
	// Name is the provider in messages ("openai", "ollama", "anthropic").
	Name string
	// BaseURL is the API root, shown when it cannot be reached; URL is
	// what is posted to.
	BaseURL, URL string
	Client       *http.Client
	// Header is set on every request after Content-Type and Accept
	// (authentication, API version, a vendor's own headers).
	Header http.Header
	// Message finds the human text in a non-2xx answer's body.
	Message func(status int, raw []byte) string
	// UnreachableHint is added to transport errors (how to start a local
	// server).
	UnreachableHint string
}

// Exchange posts the JSON body and reads a 2xx answer with read (the
// client's stream or batch reader). Errors are *Error, except a cancelled
// ctx, which is returned wrapped, and a request that cannot be built.
func (e Endpoint) Exchange(ctx context.Context, body []byte, stream bool, read func(io.Reader) (Response, error)) (Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return Response{}, fmt.Errorf("%s: build request: %w", e.Name, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	for k, vs := range e.Header {
		for _, v := range vs {
			hreq.Header.Set(k, v)
		}
	}
	resp, err := e.Client.Do(hreq)
	if err != nil {
		return Response{}, e.transportError(ctx, err)
	}
	defer resp.Body.Close()
	// net/http already aborts the body read when ctx ends; closing it here
	// too makes the wake-up immediate whatever the transport.
	stop := context.AfterFunc(ctx, func() { resp.Body.Close() })
	defer stop()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return Response{}, StatusFailure(resp, raw, e.Message)
	}
	answer, err := CheckAnswer(e.Name, resp)
	if err != nil {
		return Response{}, err
	}
	out, err := read(answer)
	if err != nil {
		return Response{}, e.readError(ctx, err)
	}
	return out, nil
}

// transportError maps a failed HTTP round trip. A ctx that ended is the
// caller's doing and is returned as such, never as a retryable error.
func (e Endpoint) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", e.Name, context.Cause(ctx))
	}
	if le := LimitFailure(e.Name, err); le != nil {
		return le
	}
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	return NetworkError(fmt.Errorf("cannot reach %s at %s: %w", e.Name, e.BaseURL, inner), e.UnreachableHint)
}

// readError maps a failure while reading a 2xx answer.
func (e Endpoint) readError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", e.Name, context.Cause(ctx))
	}
	var pe *Error
	if errors.As(err, &pe) {
		return err
	}
	if le := LimitFailure(e.Name, err); le != nil {
		return le
	}
	var me *MalformedAnswer
	if errors.As(err, &me) {
		return Malformed(e.Name, me.Err)
	}
	return NetworkError(fmt.Errorf("%s: connection lost while reading the answer: %w", e.Name, err), "")
}
