package webtools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// MaxRedirects is how many redirects a request follows.
const MaxRedirects = 5

// exchange is one request's final response, its body read (capped).
type exchange struct {
	resp      *http.Response // Body already read and closed
	body      []byte
	truncated bool
	final     *url.URL
	// notFollowed is the target of a redirect to another origin that a
	// request confined to its origin did not follow.
	notFollowed string
}

// outgoing is a request as the model asked for it.
type outgoing struct {
	method  string
	url     *url.URL
	header  http.Header
	body    []byte
	follow  bool
	maxBody int64
	// sameOrigin confines the redirects followed to the request's origin
	// (SameOrigin): an approval of a request to one origin covers no
	// request, its headers or its body, to another.
	sameOrigin bool
}

// send performs the request, following redirects itself when asked so
// that each target is judged by the address rules on its own connection
// and credentials never follow a redirect to another host.
func (d *dialer) send(ctx context.Context, o outgoing) (*exchange, error) {
	u, method, body, header := o.url, o.method, o.body, o.header.Clone()
	for redirects := 0; ; redirects++ {
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, fmt.Errorf("only http and https URLs can be fetched, not %s:", u.Scheme)
		}
		resp, err := d.once(ctx, method, u, header, body)
		if err != nil {
			return nil, err
		}
		loc := resp.Header.Get("Location")
		var next *url.URL
		notFollowed := ""
		if o.follow && isRedirect(resp.StatusCode) && loc != "" {
			if next, err = u.Parse(loc); err != nil {
				resp.Body.Close()
				return nil, fmt.Errorf("bad redirect location %q: %w", loc, err)
			}
			if o.sameOrigin && !SameOrigin(o.url, next) {
				notFollowed, next = redactUser(next), nil
			}
		}
		if next == nil {
			data, err := io.ReadAll(io.LimitReader(resp.Body, o.maxBody+1))
			resp.Body.Close()
			ex := &exchange{resp: resp, body: data, final: u, notFollowed: notFollowed}
			if int64(len(data)) > o.maxBody {
				ex.body, ex.truncated = data[:o.maxBody], true
			}
			if err != nil {
				return ex, &bodyError{err}
			}
			return ex, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if redirects == MaxRedirects {
			return nil, fmt.Errorf("stopped after %d redirects (the last one to %s)", MaxRedirects, loc)
		}
		switch resp.StatusCode {
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther:
			if method != http.MethodHead {
				method = http.MethodGet
			}
			body = nil
			header.Del("Content-Type")
			header.Del("Content-Length")
		}
		if next.Host != u.Host || next.Scheme != u.Scheme {
			for name := range header {
				if sensitiveHeader(name) {
					header.Del(name)
				}
			}
		}
		u = next
	}
}

// SameOrigin says whether a redirect from a to b stays where a request
// to a was approved to go: the same host name (any case) and port with
// the same scheme, or the upgrade of http on port 80 to https on 443 of
// the same host name.
func SameOrigin(a, b *url.URL) bool {
	if !strings.EqualFold(a.Hostname(), b.Hostname()) {
		return false
	}
	pa, pb := effectivePort(a), effectivePort(b)
	switch {
	case a.Scheme == b.Scheme:
		return pa == pb
	case a.Scheme == "http" && b.Scheme == "https":
		return pa == "80" && pb == "443"
	}
	return false
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return map[string]string{"http": "80", "https": "443"}[u.Scheme]
}

// bodyError is a failure while reading a response body.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// once makes one request, without following redirects.
func (d *dialer) once(ctx context.Context, method string, u *url.URL, header http.Header, body []byte) (*http.Response, error) {
	h, err := d.route(ctx, u)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	target := *u
	req, err := http.NewRequestWithContext(ctx, method, target.String(), rd)
	if err != nil {
		return nil, err
	}
	req.Header = header.Clone()
	h.prepare(req)
	client := &http.Client{Transport: h.transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		h.transport.CloseIdleConnections()
		return nil, err
	}
	return resp, nil
}

// detail is the part of a transport error a person needs: the address
// refusal itself, else the error without Go's request preamble.
func detail(err error) string {
	var re *RefusedError
	if errors.As(err, &re) {
		return re.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// sensitiveRe matches header names whose values are credentials
// (tool-schemas.md §9: authorization, cookie, token, secret, api key,
// credential).
var sensitiveRe = regexp.MustCompile(`(?i)authorization|cookie|token|secret|api[-_]?key|credential|password|session`)

func sensitiveHeader(name string) bool { return sensitiveRe.MatchString(name) }

// maskedHeaders is a header set for people and the model: credential
// values replaced by <redacted>, one value per name (the last).
func maskedHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for name, vals := range h {
		if len(vals) == 0 {
			continue
		}
		v := strings.Join(vals, ", ")
		if sensitiveHeader(name) {
			v = "<redacted>"
		}
		out[strings.ToLower(name)] = v
	}
	return out
}
