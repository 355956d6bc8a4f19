package webtools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/jazz-run/jazz/tools"
)

// http_request's limits (tool-schemas.md §9).
const (
	MaxHeaders          = 32
	MaxHeaderValue      = 4096
	DefaultTimeoutMs    = 15000
	DefaultResponseSize = 1048576
	// jazzUA and the default Accept headers are added unless given.
	jazzUA        = "Jazz/1.0 (https://github.com/lvndry/jazz)"
	defaultAccept = "application/json, text/markdown, text/plain, application/xml, text/xml, text/html, */*"
)

const requestSchema = `{"type":"object","properties":{
"method":{"type":"string","enum":["GET","POST","PUT","PATCH","DELETE","HEAD","OPTIONS"],"description":"HTTP method."},
"url":{"type":"string","minLength":1,"description":"Absolute http or https URL."},
"headers":{"type":"object","additionalProperties":{"type":"string"},"description":"Request headers (at most 32; names are case-insensitive, the last wins)."},
"query":{"type":"object","additionalProperties":{"type":["string","number","boolean"]},"description":"Query parameters set on the URL."},
"body":{"anyOf":[
 {"type":"object","properties":{"type":{"const":"json"},"value":{}},"required":["type","value"],"additionalProperties":false},
 {"type":"object","properties":{"type":{"const":"text"},"value":{"type":"string"}},"required":["type","value"],"additionalProperties":false},
 {"type":"object","properties":{"type":{"const":"form"},"value":{"type":"object","additionalProperties":{"type":"string"}}},"required":["type","value"],"additionalProperties":false}],
 "description":"Body: {type:json, value}, {type:text, value}, or {type:form, value:{field:value}}."},
"timeoutMs":{"type":"integer","minimum":1,"maximum":120000,"description":"Timeout in ms (default 15000)."},
"followRedirects":{"type":"boolean","description":"Follow redirects within the URL's origin, at most 5 (default true); a redirect elsewhere is returned, not followed."},
"maxResponseBytes":{"type":"integer","minimum":1,"maximum":5000000,"description":"Most response bytes read (default 1048576)."},
"cacheTtlSeconds":{"type":"integer","minimum":1,"maximum":3600,"description":"Sends Cache-Control: max-age=<n>."}},
"required":["method","url"],"additionalProperties":false}`

type requestArgs struct {
	Method  string          `json:"method"`
	URL     string          `json:"url"`
	Headers json.RawMessage `json:"headers"`
	Query   map[string]any  `json:"query"`
	Body    *struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"body"`
	TimeoutMs        *int  `json:"timeoutMs"`
	FollowRedirects  *bool `json:"followRedirects"`
	MaxResponseBytes *int  `json:"maxResponseBytes"`
	CacheTTLSeconds  *int  `json:"cacheTtlSeconds"`
}

// built is a validated request, ready to send and to describe.
type built struct {
	method    string
	url       *url.URL
	header    http.Header
	body      []byte
	bodyType  string
	timeout   time.Duration
	follow    bool
	maxBytes  int
	query     map[string]any
	rawBody   json.RawMessage
	givenBody bool
	// writtenHost is the host as the arguments spelled it, before
	// asciiHost: shown beside the real one when they differ.
	writtenHost string
}

// asciiHost replaces an internationalized host name in u by its ASCII
// form under IDNA's lookup rules, the ones Go's HTTP client dials by
// (fullwidth dots become dots, Cyrillic о stays a punycode label): the
// request then connects to, and sends as Host, the name the approval
// shows, not letters that may only look like it. A name with no ASCII
// form is refused, as the client would refuse it. An ASCII host is kept
// as written.
func asciiHost(u *url.URL) error {
	host := u.Hostname()
	if isASCII(host) {
		return nil
	}
	a, err := idna.Lookup.ToASCII(host)
	if err != nil {
		return fmt.Errorf("URL host %s is not a valid host name: %v", strconv.QuoteToASCII(host), err)
	}
	if p := u.Port(); p != "" {
		a = net.JoinHostPort(a, p)
	} else if strings.Contains(a, ":") {
		a = "[" + a + "]"
	}
	u.Host = a
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// build validates the arguments with the spec's messages. The same
// function serves the approval message and the request, so what is
// approved is what is sent.
func build(raw json.RawMessage) (*built, error) {
	var a requestArgs
	// Numbers stay as written: a query value is sent as its literal, not
	// as the float64 nearest to it.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("Invalid arguments: %w", err)
	}
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil || !u.IsAbs() || u.Host == "" {
		return nil, errors.New("URL must be absolute and include the protocol (http or https).")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("Only http and https protocols are supported.")
	}
	written := u.Hostname()
	if err := asciiHost(u); err != nil {
		return nil, err
	}
	b := &built{method: a.Method, url: u, writtenHost: written, header: http.Header{}, timeout: DefaultTimeoutMs * time.Millisecond,
		follow: true, maxBytes: DefaultResponseSize, query: a.Query}
	if err := headersInOrder(a.Headers, b.header); err != nil {
		return nil, err
	}
	if len(a.Query) > 0 {
		q := u.Query()
		keys := make([]string, 0, len(a.Query))
		for k := range a.Query {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch v := a.Query[k].(type) {
			case string:
				q.Set(k, v)
			case bool:
				q.Set(k, strconv.FormatBool(v))
			case json.Number:
				q.Set(k, v.String())
			}
		}
		u.RawQuery = q.Encode()
	}
	if a.Body != nil {
		if a.Method == http.MethodGet || a.Method == http.MethodHead {
			return nil, fmt.Errorf("HTTP %s requests cannot include a body.", a.Method)
		}
		b.bodyType, b.rawBody, b.givenBody = a.Body.Type, a.Body.Value, true
		var ct string
		switch a.Body.Type {
		case "json":
			// The value is sent as written, only its insignificant space
			// taken out: decoding and encoding it again would round big
			// integers to float64 and escape <, > and &, sending other
			// bytes than the arguments approved.
			var buf bytes.Buffer
			if err := json.Compact(&buf, a.Body.Value); err != nil {
				return nil, fmt.Errorf("body.value: %w", err)
			}
			b.body, ct = buf.Bytes(), "application/json"
		case "text":
			var s string
			if err := json.Unmarshal(a.Body.Value, &s); err != nil {
				return nil, fmt.Errorf("body.value: %w", err)
			}
			if s == "" {
				return nil, errors.New("Text body cannot be empty")
			}
			b.body, ct = []byte(s), "text/plain; charset=utf-8"
		case "form":
			var m map[string]string
			if err := json.Unmarshal(a.Body.Value, &m); err != nil {
				return nil, fmt.Errorf("body.value: %w", err)
			}
			if len(m) == 0 {
				return nil, errors.New("Form body requires at least one field")
			}
			f := url.Values{}
			for k, v := range m {
				f.Set(k, v)
			}
			b.body, ct = []byte(f.Encode()), "application/x-www-form-urlencoded"
		}
		if b.header.Get("Content-Type") == "" {
			b.header.Set("Content-Type", ct)
		}
	}
	if a.TimeoutMs != nil {
		b.timeout = time.Duration(*a.TimeoutMs) * time.Millisecond
	}
	if a.FollowRedirects != nil {
		b.follow = *a.FollowRedirects
	}
	if a.MaxResponseBytes != nil {
		b.maxBytes = *a.MaxResponseBytes
	}
	if a.CacheTTLSeconds != nil && b.header.Get("Cache-Control") == "" {
		b.header.Set("Cache-Control", fmt.Sprintf("max-age=%d", *a.CacheTTLSeconds))
	}
	for name, val := range map[string]string{"User-Agent": jazzUA, "Accept": defaultAccept, "Accept-Charset": "utf-8"} {
		if b.header.Get(name) == "" {
			b.header.Set(name, val)
		}
	}
	return b, nil
}

// headersInOrder reads the headers object keeping its order, so that of
// two names differing only in case the last one wins.
func headersInOrder(raw json.RawMessage, h http.Header) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("headers must be an object")
	}
	n := 0
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("headers: %w", err)
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("headers: %w", err)
		}
		if n++; n > MaxHeaders {
			return errors.New("Too many headers provided (maximum 32 allowed).")
		}
		name := strings.TrimSpace(t.(string))
		switch {
		case name == "":
			return errors.New("Header names cannot be empty.")
		case !validHeaderName(name):
			return fmt.Errorf("Invalid header name %q. Header names must use visible ASCII characters without spaces.", name)
		case transportHeaders[strings.ToLower(name)]:
			return fmt.Errorf("Header %q cannot be set: the HTTP transport writes or drops it itself, so it would not be sent as approved.", name)
		case utf8.RuneCountInString(v) > MaxHeaderValue:
			return fmt.Errorf("Header %q value is too long (maximum 4096 characters).", name)
		case strings.ContainsAny(v, "\r\n\x00"):
			return fmt.Errorf("Header %q value must not contain a line break or NUL.", name)
		}
		h.Set(name, v)
	}
	return nil
}

// transportHeaders are the request headers Go's HTTP client writes from
// the request itself or drops (Host is the URL's, Content-Length and
// Transfer-Encoding the body's, Trailer unsupported) and the hop-by-hop
// ones that are the connection's business (refused by HTTP/2 outright):
// a value given for one of them would be shown for approval and then
// not be what is sent.
var transportHeaders = map[string]bool{"host": true, "content-length": true, "transfer-encoding": true, "trailer": true,
	"connection": true, "keep-alive": true, "proxy-connection": true, "te": true, "upgrade": true}

// validHeaderName is an RFC 7230 token.
func validHeaderName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// describeRequest is http_request's approval message: what will be sent,
// credentials masked.
func describeRequest(raw json.RawMessage) (string, error) {
	return describeWith(addrRules{}, raw)
}

// describeWith is describeRequest for the address rules the request will
// be sent under: an address JAZZ_NET_ALLOW lets through is named as
// reached, not as refused.
func describeWith(rules addrRules, raw json.RawMessage) (string, error) {
	b, err := build(raw)
	if err != nil {
		return "", err
	}
	var s strings.Builder
	fmt.Fprintf(&s, "HTTP request: %s %s\n", b.method, redactUser(b.url))
	if b.writtenHost != b.url.Hostname() {
		fmt.Fprintf(&s, "Host: %s, written %s: an internationalized name, whose letters may only look like others\n",
			b.url.Hostname(), strconv.QuoteToASCII(b.writtenHost))
	}
	if b.url.User != nil && b.header.Get("Authorization") == "" {
		// Go's client turns URL user info into this header itself.
		s.WriteString("Credentials: the URL's user info (hidden here) is sent as an Authorization header\n")
	}
	s.WriteString("Headers:\n")
	masked := maskedHeaders(b.header)
	names := make([]string, 0, len(masked))
	for n := range masked {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&s, "  %s: %s\n", n, strconv.Quote(masked[n])[1:len(strconv.Quote(masked[n]))-1])
	}
	if b.givenBody {
		// The bytes sent, as they will be sent.
		fmt.Fprintf(&s, "Body: %s, %d bytes:\n%s\n", b.bodyType, len(b.body), b.body)
	} else {
		s.WriteString("Body: none\n")
	}
	redirects := "not followed"
	if b.follow {
		redirects = fmt.Sprintf("followed within %s://%s only (at most %d), each target checked; a redirect elsewhere is returned, not followed",
			b.url.Scheme, b.url.Host, MaxRedirects)
	}
	fmt.Fprintf(&s, "Redirects: %s\nTimeout: %dms\n\nPrivate, loopback and link-local addresses are refused", redirects, b.timeout.Milliseconds())
	if len(rules.allow) == 0 {
		s.WriteString(".")
		return s.String(), nil
	}
	allowed := make([]string, len(rules.allow))
	for i, p := range rules.allow {
		allowed[i] = p.String()
	}
	fmt.Fprintf(&s, ", except those JAZZ_NET_ALLOW lets through: %s", strings.Join(allowed, ", "))
	if ip, err := netip.ParseAddr(b.url.Hostname()); err == nil {
		if reason := specialReason(ip.WithZone("")); reason != "" && rules.check("", ip) == nil {
			fmt.Fprintf(&s, ".\nThis request goes to %s, %s that JAZZ_NET_ALLOW allows: a service on your machine or network", ip, reason)
		}
	}
	s.WriteString(".")
	return s.String(), nil
}

// RequestEcho is the request part of http_request's result.
type RequestEcho struct {
	Method           string            `json:"method"`
	URL              string            `json:"url"`
	Headers          map[string]string `json:"headers"`
	Query            map[string]any    `json:"query,omitempty"`
	Body             any               `json:"body,omitempty"`
	TimeoutMs        int64             `json:"timeoutMs"`
	FollowRedirects  bool              `json:"followRedirects"`
	MaxResponseBytes int               `json:"maxResponseBytes"`
	ResponseType     string            `json:"responseType"`
}

// ResponseEcho is the response part.
type ResponseEcho struct {
	Status     int               `json:"status"`
	StatusText string            `json:"statusText"`
	Headers    map[string]string `json:"headers"`
	ElapsedMs  int64             `json:"elapsedMs"`
	Size       int               `json:"size"`
	Truncated  bool              `json:"truncated"`
	Body       any               `json:"body"`
	// RedirectNotFollowed is the target of a redirect to another origin:
	// the approval covered this origin only, so it is for a new request.
	RedirectNotFollowed string `json:"redirectNotFollowed,omitempty"`
}

// RequestResult is http_request's result, for any status.
type RequestResult struct {
	Request  RequestEcho  `json:"request"`
	Response ResponseEcho `json:"response"`
}

func requestHandler(o Options) tools.Handler {
	return func(ctx context.Context, _ *tools.Env, raw json.RawMessage) tools.Result {
		b, err := build(raw)
		if err != nil {
			return tools.Fail(err.Error())
		}
		ctx, cancel := context.WithTimeout(ctx, b.timeout)
		defer cancel()
		start := time.Now()
		var body []byte
		if b.givenBody {
			body = b.body
		}
		ex, err := o.dialer().send(ctx, outgoing{method: b.method, url: b.url, header: b.header, body: body, follow: b.follow,
			maxBody: int64(b.maxBytes), sameOrigin: true})
		if err != nil && ex == nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return tools.Fail(fmt.Sprintf("Request timed out after %dms.", b.timeout.Milliseconds()))
			}
			return tools.Fail(fmt.Sprintf("Request to %s failed: %s", redactUser(b.url), detail(err)))
		}
		echo := RequestEcho{Method: b.method, URL: redactUser(b.url), Headers: maskedHeaders(b.header), Query: b.query,
			TimeoutMs: b.timeout.Milliseconds(), FollowRedirects: b.follow, MaxResponseBytes: b.maxBytes}
		if b.givenBody {
			echo.Body = map[string]any{"type": b.bodyType, "size": len(b.body)}
		}
		kind, rbody := responseBody(ex)
		echo.ResponseType = kind
		res := RequestResult{Request: echo, Response: ResponseEcho{
			Status: ex.resp.StatusCode, StatusText: http.StatusText(ex.resp.StatusCode), Headers: maskedHeaders(ex.resp.Header),
			ElapsedMs: time.Since(start).Milliseconds(), Size: len(ex.body), Truncated: ex.truncated, Body: rbody,
			RedirectNotFollowed: ex.notFollowed,
		}}
		if err != nil {
			// The headers came, the body broke off: say so, keep what came.
			return tools.Result{Error: "Failed to read response body: " + detail(err), Value: res}
		}
		return tools.OK(res)
	}
}

// responseBody shapes the body by its content type.
func responseBody(ex *exchange) (string, any) {
	mt, _, _ := mime.ParseMediaType(ex.resp.Header.Get("Content-Type"))
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		var v any
		if err := json.Unmarshal(ex.body, &v); err != nil {
			return "json", map[string]any{"type": "json", "data": nil, "rawText": textOf(ex),
				"parseError": "Failed to parse JSON response: " + err.Error()}
		}
		return "json", map[string]any{"type": "json", "data": v}
	case strings.HasPrefix(mt, "image/"), strings.HasPrefix(mt, "audio/"), strings.HasPrefix(mt, "video/"):
		return "bytes", map[string]any{"type": "bytes", "base64": base64.StdEncoding.EncodeToString(ex.body)}
	}
	return "text", map[string]any{"type": "text", "text": textOf(ex)}
}

func textOf(ex *exchange) string {
	s := strings.ToValidUTF8(string(ex.body), "\uFFFD")
	if ex.truncated {
		s += "…"
	}
	return s
}
