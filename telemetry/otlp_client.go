package telemetry

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/jazz-run/jazz/secrets"
)

// Retry schedule per telemetry.md §2: 3 attempts, 250 ms × 2^(n−1) apart.
// A collector's own throttle hint (Retry-After, gRPC RetryInfo) may stretch
// a wait up to maxThrottle; a longer hint ends the retries instead.
const (
	maxAttempts = 3
	maxThrottle = 5 * time.Second
)

// Content types of the three protocols.
const (
	contentProtobuf = "application/x-protobuf"
	contentJSON     = "application/json"
	contentGRPC     = "application/grpc"
)

// gRPC method paths of the two OTLP services.
const (
	grpcTracePath  = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
	grpcMetricPath = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
)

// otlpClient sends encoded export requests to one collector endpoint over
// OTLP/HTTP or OTLP/gRPC, retrying what is worth retrying. It is safe for
// concurrent use.
type otlpClient struct {
	url         string // the request URL: verbatim for HTTP, scheme://host+method for gRPC
	grpc        bool
	contentType string // for HTTP
	headers     map[string]string
	timeout     time.Duration // per attempt
	userAgent   string
	hc          *http.Client
	redact      *secrets.Redactor // the header values
	run         *secrets.Redactor // the run's own secrets
	// stop ends every export in flight; Shutdown calls it.
	stop   context.Context
	cancel context.CancelFunc
}

// newOTLPClient builds a client for endpoint (already validated). grpcPath
// is the gRPC method, used when protocol is grpc.
func newOTLPClient(endpoint, protocol, grpcPath string, headers map[string]string, timeout time.Duration, version string, run *secrets.Redactor) (*otlpClient, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("the endpoint is not a valid URL: %w", unwrapURLError(err))
	}
	c := &otlpClient{
		url:       endpoint,
		headers:   headers,
		timeout:   timeout,
		userAgent: "jazz/" + version,
		redact:    credentialRedactor(endpoint, headers),
		run:       run,
	}
	var tr *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		tr = dt.Clone()
	} else {
		tr = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	switch protocol {
	case ProtocolGRPC:
		// gRPC is HTTP/2 only: cleartext HTTP/2 with prior knowledge for
		// http://, TLS with ALPN h2 for https://. The endpoint's path is not
		// part of the address, as for gRPC clients generally.
		c.grpc = true
		c.url = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: grpcPath}).String()
		var p http.Protocols
		if u.Scheme == "http" {
			p.SetUnencryptedHTTP2(true)
		} else {
			p.SetHTTP2(true)
		}
		tr.Protocols = &p
		// An HTTP proxy would be spoken to in HTTP/1.1; only a CONNECT
		// tunnel (for https) carries HTTP/2 through.
		tr.Proxy = func(r *http.Request) (*url.URL, error) {
			if r.URL.Scheme != "https" {
				return nil, nil
			}
			return http.ProxyFromEnvironment(r)
		}
	case ProtocolHTTPJSON:
		c.contentType = contentJSON
	default:
		c.contentType = contentProtobuf
	}
	c.hc = &http.Client{
		Transport: tr,
		// Following a redirect would resend our headers (credentials among
		// them) to wherever the answer points; a collector that moved is
		// reported instead.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c.stop, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// credentialRedactor hides what the client sends that may be a
// credential from error text: the configured header values, and each
// value's last word (the token of "Bearer <token>"), since a collector or
// a proxy may echo a request header back in its answer; the endpoint's
// user info and query values, since an error page may echo the request
// URL. Every header is covered, not only those named like credentials,
// because vendors send API keys under names of their own
// (x-honeycomb-team, dd-api-key).
func credentialRedactor(endpoint string, headers map[string]string) *secrets.Redactor {
	vals := urlCredentials(endpoint)
	for _, v := range headers {
		vals = append(vals, v)
		if f := strings.Fields(v); len(f) > 1 {
			vals = append(vals, f[len(f)-1])
		}
	}
	// However short: a header value is a credential by where it is, and a
	// warning that shows one leaks it.
	return secrets.NewExactRedactor(vals...)
}

// close stops exports in flight and drops idle connections.
func (c *otlpClient) close() {
	c.cancel()
	c.hc.CloseIdleConnections()
}

// attemptResult is how one attempt ended.
type attemptResult struct {
	partial partialSuccess
	err     error
	retry   bool
	after   time.Duration // the collector's throttle hint, if any
}

// send delivers body, making up to maxAttempts attempts. Each attempt is
// bounded by the client's timeout and all of them by ctx; waits between
// attempts end early when ctx does.
func (c *otlpClient) send(ctx context.Context, body []byte) (partialSuccess, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.stop, cancel)()

	var payload []byte
	if c.grpc {
		// The length-prefixed message: a compression flag (0: none) and
		// the length as 4 big-endian bytes.
		payload = make([]byte, 5+len(body))
		binary.BigEndian.PutUint32(payload[1:5], uint32(len(body)))
		copy(payload[5:], body)
	} else {
		payload = body
	}
	for attempt := 1; ; attempt++ {
		res := c.attempt(ctx, payload)
		if res.err == nil {
			return res.partial, nil
		}
		err := res.err
		if attempt > 1 {
			err = fmt.Errorf("after %d attempts: %w", attempt, err)
		}
		if !res.retry || attempt == maxAttempts {
			return partialSuccess{}, err
		}
		if ctx.Err() != nil {
			return partialSuccess{}, fmt.Errorf("%w (export canceled: %w)", err, context.Cause(ctx))
		}
		delay := retryInitial << (attempt - 1)
		if res.after > maxThrottle {
			return partialSuccess{}, fmt.Errorf("%w (the collector asks to wait %v before retrying)", err, res.after)
		}
		delay = max(delay, res.after)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return partialSuccess{}, fmt.Errorf("%w (export canceled: %w)", err, context.Cause(ctx))
		}
	}
}

func (c *otlpClient) attempt(ctx context.Context, payload []byte) attemptResult {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.url, bytes.NewReader(payload))
	if err != nil {
		return attemptResult{err: fmt.Errorf("build request: %w", unwrapURLError(err))}
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", c.userAgent)
	if c.grpc {
		req.Header.Set("Content-Type", contentGRPC)
		req.Header.Set("Te", "trailers")
		req.Header.Set("Grpc-Timeout", grpcTimeout(actx))
	} else {
		req.Header.Set("Content-Type", c.contentType)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportFailure(ctx, actx, err)
	}
	defer resp.Body.Close()
	if c.grpc {
		return c.grpcResult(ctx, actx, resp)
	}
	return c.httpResult(ctx, actx, resp)
}

// transportFailure words a request that got no answer. Network errors and
// an attempt's own timeout are retried; the caller's end is not.
func (c *otlpClient) transportFailure(ctx, actx context.Context, err error) attemptResult {
	switch {
	case ctx.Err() != nil:
		return attemptResult{err: fmt.Errorf("export canceled: %w", context.Cause(ctx))}
	case actx.Err() != nil:
		return attemptResult{err: fmt.Errorf("no answer within %v", c.timeout), retry: true}
	}
	return attemptResult{err: c.scrub(unwrapURLError(err)), retry: true}
}

// readBody reads at most maxResponseMessage bytes of an answer.
func readBody(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxResponseMessage+1))
	if err == nil && len(b) > maxResponseMessage {
		err = fmt.Errorf("answer longer than %d bytes", maxResponseMessage)
	}
	return b, err
}

// httpResult: 2xx succeeds; 408, 429 and 5xx are retried (with the
// collector's Retry-After, when given); anything else fails at once.
func (c *otlpClient) httpResult(ctx, actx context.Context, resp *http.Response) attemptResult {
	body, err := readBody(resp.Body)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if err != nil {
			// The collector took the data; a truncated answer loses only
			// the partial-success detail.
			return attemptResult{}
		}
		var p partialSuccess
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		switch {
		case len(body) == 0:
		case ct == contentProtobuf:
			p, err = decodeResponse(body)
		case ct == contentJSON:
			p, err = decodeJSONResponse(body)
		}
		if err != nil {
			return attemptResult{err: c.scrub(fmt.Errorf("the collector accepted the data but its answer is unreadable: %w", err))}
		}
		return attemptResult{partial: p}
	}
	if err != nil && actx.Err() != nil {
		return c.transportFailure(ctx, actx, err)
	}
	msg := fmt.Sprintf("the collector answered %s", resp.Status)
	if text := strings.TrimSpace(string(body)); text != "" {
		msg += ": " + cut(strings.ToValidUTF8(text, "?"), 256)
	}
	if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
		where := shownURL(loc)
		if where == "" {
			where = "another path"
		}
		msg += fmt.Sprintf(" (redirect to %s not followed)", where)
	}
	s := resp.StatusCode
	retry := s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s >= 500
	return attemptResult{err: c.scrub(errors.New(msg)), retry: retry, after: retryAfter(resp.Header.Get("Retry-After"))}
}

// retryAfter reads Retry-After in seconds or as an HTTP date; 0 when
// absent or unreadable.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(min(n, 3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}

// gRPC status codes this client tells apart (google.golang.org/grpc/codes).
const (
	grpcOK                = 0
	grpcCanceled          = 1
	grpcUnknown           = 2
	grpcDeadlineExceeded  = 4
	grpcResourceExhausted = 8
	grpcAborted           = 10
	grpcOutOfRange        = 11
	grpcUnimplemented     = 12
	grpcInternal          = 13
	grpcUnavailable       = 14
	grpcDataLoss          = 15
	grpcUnauthenticated   = 16
	grpcPermissionDenied  = 7
)

var grpcCodeNames = [...]string{
	"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists",
	"PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange",
	"Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated",
}

func grpcCodeName(code int) string {
	if code >= 0 && code < len(grpcCodeNames) {
		return grpcCodeNames[code]
	}
	return "code " + strconv.Itoa(code)
}

// grpcRetryable says which gRPC failures may succeed on a retry, as the
// OTLP specification lists them: a transient server or network condition.
// ResourceExhausted is retried only when the server says when (RetryInfo),
// since otherwise it may be a hard quota.
func grpcRetryable(code int, hinted bool) bool {
	switch code {
	case grpcCanceled, grpcDeadlineExceeded, grpcAborted, grpcOutOfRange, grpcUnavailable, grpcDataLoss:
		return true
	case grpcResourceExhausted:
		return hinted
	}
	return false
}

// httpToGRPC maps the HTTP status of an answer that carries no gRPC status
// (a proxy, a plain web server) the way gRPC clients do.
func httpToGRPC(status int) int {
	switch status {
	case http.StatusBadRequest:
		return grpcInternal
	case http.StatusUnauthorized:
		return grpcUnauthenticated
	case http.StatusForbidden:
		return grpcPermissionDenied
	case http.StatusNotFound:
		return grpcUnimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return grpcUnavailable
	}
	return grpcUnknown
}

// grpcResult reads a unary call's answer: the response message in the
// body, then grpc-status and grpc-message in the trailers (or in the
// headers, for a trailers-only answer).
func (c *otlpClient) grpcResult(ctx, actx context.Context, resp *http.Response) attemptResult {
	if resp.StatusCode != http.StatusOK {
		code := httpToGRPC(resp.StatusCode)
		return attemptResult{
			err:   c.scrub(fmt.Errorf("the server answered HTTP %s, not a gRPC status (%s)", resp.Status, grpcCodeName(code))),
			retry: grpcRetryable(code, false),
		}
	}
	ct := resp.Header.Get("Content-Type")
	if ct != contentGRPC && !strings.HasPrefix(ct, contentGRPC+"+") && !strings.HasPrefix(ct, contentGRPC+";") {
		return attemptResult{err: c.scrub(fmt.Errorf("the server is not a gRPC server (it answered content type %q)", cut(ct, 64)))}
	}
	body, err := readBody(resp.Body)
	if err != nil {
		if actx.Err() != nil {
			return c.transportFailure(ctx, actx, err)
		}
		return attemptResult{err: c.scrub(fmt.Errorf("reading the answer: %w", err)), retry: true}
	}
	raw := resp.Trailer.Get("Grpc-Status")
	md := resp.Trailer
	if raw == "" {
		raw, md = resp.Header.Get("Grpc-Status"), resp.Header
	}
	if raw == "" {
		return attemptResult{err: errors.New("the server ended the call without a gRPC status"), retry: true}
	}
	code, err := strconv.Atoi(raw)
	if err != nil {
		return attemptResult{err: c.scrub(fmt.Errorf("the server sent a malformed grpc-status %q", cut(raw, 32)))}
	}
	if code != grpcOK {
		msg := md.Get("Grpc-Message")
		if d, err := url.PathUnescape(msg); err == nil {
			msg = d
		}
		text := "the collector answered " + grpcCodeName(code)
		if msg != "" {
			text += ": " + cut(strings.ToValidUTF8(msg, "?"), 256)
		}
		delay, hinted := grpcRetryDelay(md.Get("Grpc-Status-Details-Bin"))
		return attemptResult{err: c.scrub(errors.New(text)), retry: grpcRetryable(code, hinted), after: delay}
	}
	msg, err := grpcMessage(body)
	if err != nil {
		return attemptResult{err: c.scrub(fmt.Errorf("the collector accepted the data but its answer is unreadable: %w", err))}
	}
	p, err := decodeResponse(msg)
	if err != nil {
		return attemptResult{err: c.scrub(fmt.Errorf("the collector accepted the data but its answer is unreadable: %w", err))}
	}
	return attemptResult{partial: p}
}

// grpcMessage takes the one length-prefixed message out of a unary answer
// (none is fine: the response message is all defaults).
func grpcMessage(body []byte) ([]byte, error) {
	if len(body) == 0 {
		return nil, nil
	}
	if len(body) < 5 {
		return nil, fmt.Errorf("truncated gRPC message prefix (%d bytes)", len(body))
	}
	if body[0] != 0 {
		// No compression was offered; a compressed answer can only be
		// skipped, losing the partial-success detail.
		return nil, nil
	}
	n := binary.BigEndian.Uint32(body[1:5])
	if uint64(n) != uint64(len(body)-5) {
		return nil, fmt.Errorf("gRPC message of %d bytes announced, %d sent", n, len(body)-5)
	}
	return body[5:], nil
}

// grpcTimeout is the grpc-timeout header for what is left of ctx: at most
// 8 digits and a unit, in milliseconds.
func grpcTimeout(ctx context.Context) string {
	d, ok := ctx.Deadline()
	if !ok {
		return "99999999m"
	}
	ms := max(time.Until(d).Milliseconds(), 1)
	return strconv.FormatInt(min(ms, 99999999), 10) + "m"
}

// grpcRetryDelay reads the RetryInfo detail of a google.rpc.Status sent in
// grpc-status-details-bin (unpadded or padded base64): Status has repeated
// Any details = 3; Any has type_url = 1 and value = 2; RetryInfo has
// Duration retry_delay = 1, with seconds = 1 and nanos = 2.
func grpcRetryDelay(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(v, "="))
	if err != nil {
		return 0, false
	}
	for _, detail := range allBytesFields(raw, 3) {
		typeURL, _ := findBytesField(detail, 1)
		if !strings.HasSuffix(string(typeURL), "/google.rpc.RetryInfo") {
			continue
		}
		value, _ := findBytesField(detail, 2)
		dur, _ := findBytesField(value, 1)
		var secs, nanos int64
		for len(dur) > 0 {
			num, typ, n := protowire.ConsumeTag(dur)
			if n < 0 || typ != protowire.VarintType {
				return 0, false
			}
			x, m := protowire.ConsumeVarint(dur[n:])
			if m < 0 {
				return 0, false
			}
			switch num {
			case 1:
				secs = int64(x)
			case 2:
				nanos = int64(int32(x))
			}
			dur = dur[n+m:]
		}
		if secs < 0 || secs > 3600 {
			return 0, true
		}
		return time.Duration(secs)*time.Second + time.Duration(nanos), true
	}
	return 0, false
}

// allBytesFields returns every value of a repeated length-delimited field.
func allBytesFields(b []byte, field protowire.Number) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return out
		}
		b = b[n:]
		if num == field && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return out
			}
			out = append(out, v)
			n = m
		} else if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return out
		}
		b = b[n:]
	}
	return out
}

// scrub takes header values and the run's secrets out of an error's text
// (nil stays nil).
func (c *otlpClient) scrub(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(c.run.String(c.redact.String(err.Error())))
}
