package webtools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jazz-run/jazz/tools"
)

func TestAddressRules(t *testing.T) {
	refused := []string{
		"127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.64.0.1",
		"0.0.0.0", "0.1.2.3", "224.0.0.1", "239.255.255.250", "255.255.255.255", "240.0.0.1", "198.18.0.1", "192.0.0.8",
		"::", "::1", "fe80::1", "fd00::1", "fc00::5", "ff02::1", "fec0::1", "100::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:8.8.8.8", "::127.0.0.1",
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "2002:a00:1::",
	}
	allowed := []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::1"}
	r := addrRules{}
	for _, s := range refused {
		if err := r.check("", netip.MustParseAddr(s)); err == nil {
			t.Errorf("%s: allowed, want refused", s)
		}
	}
	for _, s := range allowed {
		if err := r.check("", netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s: refused: %v", s, err)
		}
	}
	allow, err := ParseAllow("127.0.0.1, 10.1.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	r = addrRules{allow: allow}
	for _, s := range []string{"127.0.0.1", "10.1.2.3"} {
		if err := r.check("", netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s allowed by JAZZ_NET_ALLOW: %v", s, err)
		}
	}
	for _, s := range []string{"127.0.0.2", "10.2.0.1", "::ffff:127.0.0.1"} {
		if err := r.check("", netip.MustParseAddr(s)); err == nil {
			t.Errorf("%s: outside the allowed ranges, yet allowed", s)
		}
	}
	if _, err := ParseAllow("127.0.0.1,not-an-ip"); err == nil || !strings.Contains(err.Error(), "not-an-ip") {
		t.Errorf("bad entry: %v", err)
	}
}

// server is an in-test HTTP server on addr (127.0.0.1 or another loopback
// address) counting the requests it gets.
type server struct {
	*httptest.Server
	hits atomic.Int32
	mu   sync.Mutex
	seen []*http.Request
}

func newServer(t *testing.T, addr string, h http.HandlerFunc) *server {
	t.Helper()
	l, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	s := &server{}
	s.Server = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		s.seen = append(s.seen, r.Clone(context.Background()))
		s.mu.Unlock()
		h(w, r)
	})}}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func run(t *testing.T, o Options, name string, args any) tools.Result {
	t.Helper()
	raw, _ := json.Marshal(args)
	reg, err := tools.NewRegistry(Tools(o)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Validate(name, raw); err != nil {
		t.Fatalf("arguments do not validate: %v", err)
	}
	tl, _ := reg.Lookup(name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return tl.Handler(ctx, &tools.Env{}, raw)
}

func noEnv(string) string { return "" }

func loopbackOnly(t *testing.T) Options {
	allow, err := ParseAllow("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return Options{Allow: allow, Getenv: noEnv}
}

const page = `<!doctype html><html><head><title>A &amp; B</title><style>body{color:red}</style>
<script>document.write("injected")</script></head><body><h1>Hello</h1><p>world &lt;3<br>again</p>
<noscript>enable js</noscript></body></html>`

func TestWebFetch(t *testing.T) {
	s := newServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			if ua := r.Header.Get("User-Agent"); !strings.Contains(ua, "Chrome/124") {
				http.Error(w, "ua "+ua, 400)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, page)
		case "/untitled-end":
			// An unclosed <title>: the rest of the page is its text.
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<title>"+strings.Repeat("long title ", 100000))
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"a":1}`)
		case "/bin":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write([]byte{0, 1})
		default:
			http.NotFound(w, r)
		}
	})

	// Refused by default: the server never hears of it.
	r := run(t, Options{Getenv: noEnv}, "web_fetch", map[string]any{"url": s.URL + "/page"})
	if r.Success || !strings.Contains(r.Error, "refused to connect to 127.0.0.1") || !strings.Contains(r.Error, "loopback") {
		t.Fatalf("default: %+v", r)
	}
	if n := s.hits.Load(); n != 0 {
		t.Fatalf("the refused server got %d requests", n)
	}
	// A name is judged by what it resolves to, at the dial.
	r = run(t, Options{Getenv: noEnv}, "web_fetch", map[string]any{"url": strings.Replace(s.URL, "127.0.0.1", "localhost", 1) + "/page"})
	if r.Success || !strings.Contains(r.Error, "refused to connect to localhost") {
		t.Fatalf("localhost: %+v", r)
	}

	o := loopbackOnly(t)
	r = run(t, o, "web_fetch", map[string]any{"url": s.URL + "/page"})
	if !r.Success {
		t.Fatalf("allowed: %+v", r)
	}
	got := r.Value.(FetchResult)
	if got.Title != "A & B" || got.Content != "Hello world <3 again" {
		t.Errorf("extraction: title %q content %q", got.Title, got.Content)
	}
	r = run(t, o, "web_fetch", map[string]any{"url": s.URL + "/page", "max_length": 5})
	if c := r.Value.(FetchResult); c.Content != "Hello" || !c.Truncated {
		t.Errorf("max_length: %+v", c)
	}
	if c := run(t, o, "web_fetch", map[string]any{"url": s.URL + "/untitled-end", "max_length": 10}).Value.(FetchResult); utf8.RuneCountInString(c.Title) != maxTitleRunes || !strings.HasPrefix(c.Title, "long title") {
		t.Errorf("an unclosed title is %d characters, want %d", utf8.RuneCountInString(c.Title), maxTitleRunes)
	}
	if c := run(t, o, "web_fetch", map[string]any{"url": s.URL + "/json"}).Value.(FetchResult); c.Content != `{"a":1}` {
		t.Errorf("json: %+v", c)
	}
	if r := run(t, o, "web_fetch", map[string]any{"url": s.URL + "/bin"}); r.Error != fmt.Sprintf("Unsupported content type %q for %s", "application/octet-stream", s.URL+"/bin") {
		t.Errorf("binary: %q", r.Error)
	}
	if r := run(t, o, "web_fetch", map[string]any{"url": s.URL + "/nope"}); r.Error != "HTTP 404 Not Found for "+s.URL+"/nope" {
		t.Errorf("404: %q", r.Error)
	}
	if r := run(t, o, "web_fetch", map[string]any{"url": "file:///etc/passwd"}); r.Success || !strings.Contains(r.Error, "only http and https") {
		t.Errorf("file URL: %+v", r)
	}
}

func TestRedirects(t *testing.T) {
	private := newServer(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret") })
	var hops atomic.Int32
	var s *server
	s = newServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/to-private":
			http.Redirect(w, r, private.URL+"/", http.StatusFound)
		case r.URL.Path == "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/chain/"):
			var n int
			fmt.Sscanf(r.URL.Path, "/chain/%d", &n)
			hops.Add(1)
			if n > 0 {
				http.Redirect(w, r, fmt.Sprintf("%s/chain/%d", s.URL, n-1), http.StatusMovedPermanently)
				return
			}
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "end")
		}
	})
	o := loopbackOnly(t)
	for _, path := range []string{"/to-private", "/to-metadata"} {
		r := run(t, o, "web_fetch", map[string]any{"url": s.URL + path})
		if r.Success || !strings.Contains(r.Error, "refused to connect") {
			t.Errorf("%s: %+v", path, r)
		}
	}
	if private.hits.Load() != 0 {
		t.Fatal("the redirect target outside the allowed ranges was reached")
	}
	if r := run(t, o, "web_fetch", map[string]any{"url": s.URL + "/chain/5"}); !r.Success || r.Value.(FetchResult).Content != "end" {
		t.Errorf("5 redirects: %+v", r)
	}
	hops.Store(0)
	if r := run(t, o, "web_fetch", map[string]any{"url": s.URL + "/chain/6"}); r.Success || !strings.Contains(r.Error, "stopped after 5 redirects") {
		t.Errorf("6 redirects: %+v", r)
	}
	if n := hops.Load(); n != 6 {
		t.Errorf("%d requests for 6 redirects, want 6 (the sixth target is never asked)", n)
	}
}

func TestHTTPRequest(t *testing.T) {
	s := newServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Set-Cookie", "session=abc")
			json.NewEncoder(w).Encode(map[string]any{"method": r.Method, "query": r.URL.RawQuery, "body": string(b),
				"ct": r.Header.Get("Content-Type"), "auth": r.Header.Get("Authorization"), "ua": r.Header.Get("User-Agent"),
				"cache": r.Header.Get("Cache-Control")})
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, strings.Repeat("x", 100))
		case "/img":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte{0x89, 'P', 'N', 'G'})
		case "/slow":
			time.Sleep(2 * time.Second)
		case "/redirect":
			http.Redirect(w, r, "/echo", http.StatusFound)
		}
	})
	o := loopbackOnly(t)
	r := run(t, o, "http_request", map[string]any{
		"method": "POST", "url": s.URL + "/echo", "query": map[string]any{"n": 2, "ok": true, "q": "a b"},
		"headers": map[string]any{"Authorization": "Bearer sk-secret-123"}, "body": map[string]any{"type": "form", "value": map[string]any{"k": "v"}},
		"cacheTtlSeconds": 60,
	})
	if !r.Success {
		t.Fatalf("%+v", r)
	}
	res := r.Value.(RequestResult)
	data := res.Response.Body.(map[string]any)["data"].(map[string]any)
	if data["method"] != "POST" || data["query"] != "n=2&ok=true&q=a+b" || data["body"] != "k=v" || data["ct"] != "application/x-www-form-urlencoded" ||
		data["auth"] != "Bearer sk-secret-123" || data["ua"] != jazzUA || data["cache"] != "max-age=60" {
		t.Errorf("server saw %v", data)
	}
	if res.Request.Headers["authorization"] != "<redacted>" || res.Response.Headers["set-cookie"] != "<redacted>" || res.Response.Status != 200 {
		t.Errorf("echo not masked: %+v", res)
	}
	echoed, _ := json.Marshal([]any{res.Request, res.Response.Headers})
	if strings.Contains(string(echoed), "sk-secret") || strings.Contains(string(echoed), "session=abc") {
		t.Errorf("a credential is in the echoed headers: %s", echoed)
	}

	big := run(t, o, "http_request", map[string]any{"method": "GET", "url": s.URL + "/big", "maxResponseBytes": 10}).Value.(RequestResult)
	if !big.Response.Truncated || big.Response.Body.(map[string]any)["text"] != "xxxxxxxxxx…" {
		t.Errorf("truncated: %+v", big.Response)
	}
	img := run(t, o, "http_request", map[string]any{"method": "GET", "url": s.URL + "/img"}).Value.(RequestResult)
	if img.Response.Body.(map[string]any)["base64"] != "iVBORw==" {
		t.Errorf("bytes: %+v", img.Response.Body)
	}
	if r := run(t, o, "http_request", map[string]any{"method": "GET", "url": s.URL + "/slow", "timeoutMs": 200}); r.Error != "Request timed out after 200ms." {
		t.Errorf("timeout: %q", r.Error)
	}
	if nf := run(t, o, "http_request", map[string]any{"method": "GET", "url": s.URL + "/redirect", "followRedirects": false}).Value.(RequestResult); nf.Response.Status != 302 {
		t.Errorf("not followed: %d", nf.Response.Status)
	}
	// Refused by default, like web_fetch.
	if r := run(t, Options{Getenv: noEnv}, "http_request", map[string]any{"method": "DELETE", "url": s.URL + "/echo"}); r.Success || !strings.Contains(r.Error, "refused to connect") {
		t.Errorf("default: %+v", r)
	}
}

// TestCredentialsDoNotFollowARedirectToAnotherHost: where send follows a
// redirect to another host (web_fetch; http_request returns such a
// redirect instead, TestRedirectToAnotherOriginIsNotFollowed),
// credentials are dropped on the way.
func TestCredentialsDoNotFollowARedirectToAnotherHost(t *testing.T) {
	other := newServer(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "auth=%q key=%q", r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
	})
	s := newServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/", http.StatusTemporaryRedirect)
	})
	allow, _ := ParseAllow("127.0.0.1,127.0.0.2")
	u, _ := url.Parse(s.URL)
	h := http.Header{}
	h.Set("Authorization", "Bearer x")
	h.Set("X-Api-Key", "k")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex, err := Options{Allow: allow, Getenv: noEnv}.dialer().send(ctx, outgoing{method: http.MethodGet, url: u, header: h, follow: true, maxBody: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if txt := string(ex.body); txt != `auth="" key=""` {
		t.Errorf("the other host saw %v", txt)
	}
}

func TestRequestValidationAndApprovalMessage(t *testing.T) {
	msg, err := describeRequest(json.RawMessage(`{"method":"PUT","url":"https://user:pw@api.example.com/x","headers":{"Authorization":"Bearer sk-1","x-trace":"t"},"body":{"type":"json","value":{"a":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HTTP request: PUT https://%3Credacted%3E@api.example.com/x", "authorization: <redacted>", "x-trace: t", "Body: json, 7 bytes", "content-type: application/json"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "sk-1") || strings.Contains(msg, ":pw@") {
		t.Errorf("message leaks a credential:\n%s", msg)
	}
	many := map[string]string{}
	for i := range 33 {
		many[fmt.Sprintf("h%d", i)] = "v"
	}
	manyJSON, _ := json.Marshal(many)
	for _, tc := range []struct{ args, want string }{
		{`{"method":"GET","url":"/relative"}`, "URL must be absolute and include the protocol (http or https)."},
		{`{"method":"GET","url":"ftp://x/y"}`, "Only http and https protocols are supported."},
		{`{"method":"GET","url":"http://x/","headers":` + string(manyJSON) + `}`, "Too many headers provided (maximum 32 allowed)."},
		{`{"method":"GET","url":"http://x/","headers":{" ":"v"}}`, "Header names cannot be empty."},
		{`{"method":"GET","url":"http://x/","headers":{"a b":"v"}}`, `Invalid header name "a b". Header names must use visible ASCII characters without spaces.`},
		{`{"method":"GET","url":"http://x/","headers":{"a":"` + strings.Repeat("v", 4097) + `"}}`, `Header "a" value is too long (maximum 4096 characters).`},
		{`{"method":"GET","url":"http://x/","body":{"type":"text","value":"x"}}`, "HTTP GET requests cannot include a body."},
		{`{"method":"POST","url":"http://x/","body":{"type":"text","value":""}}`, "Text body cannot be empty"},
		{`{"method":"POST","url":"http://x/","body":{"type":"form","value":{}}}`, "Form body requires at least one field"},
	} {
		if _, err := describeRequest(json.RawMessage(tc.args)); err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %q", tc.args, err, tc.want)
		}
	}
	// The last of two names differing in case wins.
	b, err := build(json.RawMessage(`{"method":"GET","url":"http://x/","headers":{"X-A":"1","x-a":"2"}}`))
	if err != nil || b.header.Get("X-A") != "2" {
		t.Errorf("last wins: %v %v", b.header, err)
	}
}

// proxy is an in-test HTTP proxy recording what it was asked; it forwards
// absolute-form requests and refuses tunnels.
type proxy struct {
	*httptest.Server
	mu   sync.Mutex
	asks []string
}

func newProxy(t *testing.T) *proxy {
	p := &proxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.asks = append(p.asks, r.Method+" "+r.RequestURI+" host="+r.Host)
		p.mu.Unlock()
		if r.Method == http.MethodConnect {
			http.Error(w, "no tunnels here", http.StatusForbidden)
			return
		}
		out, err := http.NewRequest(r.Method, r.RequestURI, r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		out.Host = r.Host
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *proxy) asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asks...)
}

// fetchVia fetches u with a dialer whose proxy settings send everything
// to px (loopback targets are never proxied by the environment's rules,
// and tests have only loopback).
func fetchVia(t *testing.T, px *proxy, allow []netip.Prefix, u string) (*exchange, error) {
	t.Helper()
	pu, _ := url.Parse(px.URL)
	d := &dialer{rules: addrRules{allow: allow}, proxy: func(*url.URL) (*url.URL, error) { return pu, nil }, resolver: net.DefaultResolver}
	target, _ := url.Parse(u)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return d.send(ctx, outgoing{method: "GET", url: target, header: http.Header{}, follow: true, maxBody: 1 << 20})
}

func TestThroughAProxy(t *testing.T) {
	target := newServer(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "via proxy, host "+r.Host)
	})
	px := newProxy(t)
	port := target.Listener.Addr().(*net.TCPAddr).Port

	// The proxy is trusted config (on loopback itself here); the target
	// is not: refused before the proxy is asked anything.
	if _, err := fetchVia(t, px, nil, target.URL); err == nil || !strings.Contains(err.Error(), "refused to connect to 127.0.0.2") {
		t.Fatalf("through the proxy, refused target: %v", err)
	}
	if a := px.asked(); len(a) != 0 {
		t.Fatalf("the proxy was asked %v", a)
	}
	allow, _ := ParseAllow("127.0.0.2")
	// A name is resolved and checked here; the proxy is given the address.
	ex, err := fetchVia(t, px, allow, fmt.Sprintf("http://127.0.0.2:%d/x", port))
	if err != nil || !strings.Contains(string(ex.body), "via proxy") {
		t.Fatalf("allowed target through the proxy: %v", err)
	}
	if a := px.asked(); len(a) != 1 || a[0] != fmt.Sprintf("GET http://127.0.0.2:%d/x host=127.0.0.2:%d", port, port) {
		t.Errorf("the proxy was asked %v", a)
	}
	if _, err := fetchVia(t, px, nil, fmt.Sprintf("http://localhost:%d/", port)); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("localhost through the proxy: %v", err)
	}
	// HTTPS: the tunnel is asked for the checked address, never a name.
	if _, err := fetchVia(t, px, allow, fmt.Sprintf("https://127.0.0.2:%d/", port)); err == nil || !strings.Contains(err.Error(), "refused the tunnel") {
		t.Errorf("https via a proxy refusing tunnels: %v", err)
	}
	if a := px.asked(); len(a) != 2 || a[1] != fmt.Sprintf("CONNECT 127.0.0.2:%d host=127.0.0.2:%d", port, port) {
		t.Errorf("the proxy was asked %v", a)
	}
}

func TestProxySettings(t *testing.T) {
	env := map[string]string{"HTTPS_PROXY": "http://proxy.example:3128", "http_proxy": "http://plain.example:8080", "NO_PROXY": "internal.example,.corp"}
	d := newDialer(addrRules{}, func(k string) string { return env[k] })
	for u, want := range map[string]string{
		"https://api.example.com/":  "http://proxy.example:3128",
		"http://api.example.com/":   "http://plain.example:8080",
		"https://internal.example/": "",
		"https://a.corp/":           "",
	} {
		pu, _ := url.Parse(u)
		got, err := d.proxy(pu)
		if err != nil {
			t.Fatal(err)
		}
		if s := fmt.Sprint(got); (want == "" && got != nil) || (want != "" && s != want) {
			t.Errorf("%s: proxy %v, want %q", u, got, want)
		}
	}
	// ALL_PROXY serves both schemes; a SOCKS proxy is ignored (http(s)
	// proxies only), as for jazz's own calls.
	env = map[string]string{"ALL_PROXY": "http://all.example:3128", "HTTPS_PROXY": "socks5://s.example:1080"}
	d = newDialer(addrRules{}, func(k string) string { return env[k] })
	pu, _ := url.Parse("https://api.example.com/")
	if got, _ := d.proxy(pu); fmt.Sprint(got) != "http://all.example:3128" {
		t.Errorf("ALL_PROXY with a SOCKS HTTPS_PROXY: %v", got)
	}
	bad, _ := url.Parse("socks5://s.example:1080")
	d.proxy = func(*url.URL) (*url.URL, error) { return bad, nil }
	if _, err := d.route(context.Background(), pu); err == nil || !strings.Contains(err.Error(), "only http and https proxies") {
		t.Errorf("socks: %v", err)
	}
}
