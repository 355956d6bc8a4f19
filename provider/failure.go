package provider

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/jazz-run/jazz/secrets"
)

// The reasons of a retried failure, as the retry line words them
// (agent-loop.md §6); a server error's is ServerReason(code).
const (
	ReasonRateLimit = "rate limit"
	ReasonNetwork   = "network issue"
	// ReasonMalformed is a 2xx answer that is not what the API sends (an
	// HTML page from a proxy or a captive portal, broken JSON). Another
	// try rarely helps, so the policy makes at most one.
	ReasonMalformed = "malformed response"
)

// ServerReason is the reason of a 5xx.
func ServerReason(status int) string { return fmt.Sprintf("server error (%d)", status) }

// MaxQuoted bounds the server text an error quotes from a body that is
// not the API's own error object (an HTML page, plain text).
const MaxQuoted = 120

// Malformed is the Error of an answer a client could not read as its
// API's: retryable once (ReasonMalformed). name is the provider.
func Malformed(name string, err error) *Error {
	return &Error{Message: fmt.Sprintf("%s sent a malformed answer: %v", name, err), Retryable: true, Reason: ReasonMalformed,
		Cause: Brief(err.Error()), Err: err}
}

// StatusFailure is the Error of a non-2xx answer: body is what was read
// of it and message extracts the API's own error text (used unless the
// body is an HTML page, which is quoted briefly by its title). A
// Retry-After header is kept for the retry policy.
func StatusFailure(resp *http.Response, body []byte, message func(status int, raw []byte) string) *Error {
	msg := ""
	if page, ok := HTMLPage(resp.Header.Get("Content-Type"), body); ok {
		msg = http.StatusText(resp.StatusCode) + " (" + page + ")"
	} else {
		msg = message(resp.StatusCode, body)
	}
	e := ClassifyStatus(resp.StatusCode, msg)
	e.RetryAfter = RetryAfter(resp.Header.Get("Retry-After"), time.Now())
	return e
}

// CheckAnswer looks at the start of a 2xx answer before it is parsed:
// an HTML page (a proxy's login or error page, a wrong base URL) is a
// Malformed error naming it, not a puzzle of JSON syntax. The returned
// reader reads the whole body, the bytes looked at included.
func CheckAnswer(name string, resp *http.Response) (io.Reader, error) {
	br := bufio.NewReaderSize(resp.Body, 4096)
	// What the first read brought, never more: a stream must not wait
	// for 4 KiB before its first delta.
	_, _ = br.Peek(1)
	head, _ := br.Peek(br.Buffered())
	if page, ok := HTMLPage(resp.Header.Get("Content-Type"), head); ok {
		return nil, Malformed(name, fmt.Errorf("%s instead of JSON (is the base URL the API's?)", page))
	}
	return br, nil
}

// HTMLPage says whether a body (or its start) is an HTML page, by its
// content type or its first bytes, and describes it briefly: `an HTML
// page titled "502 Bad Gateway"`.
func HTMLPage(contentType string, body []byte) (string, bool) {
	ct := strings.ToLower(contentType)
	start := bytes.TrimLeft(body, " \t\r\n\ufeff")
	looks := bytes.HasPrefix(bytes.ToLower(start), []byte("<!doctype html")) || bytes.HasPrefix(bytes.ToLower(start), []byte("<html"))
	if !strings.Contains(ct, "text/html") && !looks {
		return "", false
	}
	if title := Brief(html.UnescapeString(titleOf(body))); title != "" {
		return fmt.Sprintf("an HTML page titled %q", title), true
	}
	return "an HTML page", true
}

// titleOf is the text of an HTML page's <title>, "" without one.
func titleOf(body []byte) string {
	lower := bytes.ToLower(body)
	i := bytes.Index(lower, []byte("<title"))
	if i < 0 {
		return ""
	}
	open := bytes.IndexByte(lower[i:], '>')
	if open < 0 {
		return ""
	}
	start := i + open + 1
	end := bytes.Index(lower[start:], []byte("</title"))
	if end < 0 {
		return ""
	}
	return string(body[start : start+end])
}

// Brief is s on one line with runs of space folded, cut to MaxQuoted
// characters.
func Brief(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= MaxQuoted {
		return s
	}
	r := []rune(s)
	return string(r[:MaxQuoted]) + "…"
}

// MaxRetryAfter is the longest Retry-After the policy waits out; a server
// asking for more is not retried (the step has 900 s in all).
const MaxRetryAfter = 5 * time.Minute

// RetryAfter reads a Retry-After value: seconds, or an HTTP date; 0 when
// absent or unreadable.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseUint(v, 10, 31); err == nil {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now).Round(time.Second)
	}
	return 0
}

// CheckBaseURL refuses a base URL that cannot work, before any call: a
// configuration error is the user's to fix and no retry will fix it.
// from names where the value came from (an env var, a config key).
func CheckBaseURL(raw, from string) error {
	u, err := url.Parse(raw)
	shown := secrets.URL(raw) // a password in the URL is not repeated
	switch {
	case err != nil:
		// url.Error quotes the whole URL again: only its cause is said.
		return fmt.Errorf("the base URL %q (%s) is not a URL: %v", shown, from, errors.Unwrap(err))
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("the base URL %q (%s) must start with http:// or https://", shown, from)
	case u.Host == "":
		return fmt.Errorf("the base URL %q (%s) names no host", shown, from)
	}
	return nil
}

// CauseOf says in a few words why a request got no answer, for the
// retry line: "connection refused", "DNS lookup failed", …; "" when it
// cannot tell.
func CauseOf(err error) string {
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable"
	case errors.As(err, &dns):
		return "DNS lookup of " + dns.Name + " failed"
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "the connection closed mid-answer"
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	}
	return ""
}
