package webtools

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/jazz-run/jazz/provider/httpx"
)

// dialTimeout bounds one TCP connect (and a proxy's CONNECT answer).
const dialTimeout = 10 * time.Second

// RefusedError is a connection the address rules do not allow.
type RefusedError struct {
	Host   string
	Addr   netip.Addr
	Reason string
}

func (e *RefusedError) Error() string {
	host := e.Host
	if host == "" || host == e.Addr.String() {
		return fmt.Sprintf("refused to connect to %s: it is %s", e.Addr, e.Reason)
	}
	return fmt.Sprintf("refused to connect to %s (%s): it is %s", host, e.Addr, e.Reason)
}

// special lists the ranges no tool connects to unless they are allowed:
// everything that is not the public internet.
var special = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified (\"this network\") address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT (shared) address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address (cloud metadata lives there)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("100::/64"), "a discard-only address"},
	{netip.MustParsePrefix("fc00::/7"), "a private (unique local) address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

// embedded are IPv6 ranges whose packets go to an IPv4 address inside
// them (NAT64, 6to4): that address is judged too. IPv4-mapped addresses
// (::ffff:0:0/96) are refused whole, as the IPv4-compatible ones are.
var embedded = []struct {
	prefix netip.Prefix
	v4At   int // byte offset of the IPv4 address
}{
	{netip.MustParsePrefix("64:ff9b::/96"), 12},
	{netip.MustParsePrefix("64:ff9b:1::/48"), 12},
	{netip.MustParsePrefix("2002::/16"), 2},
}

// addrRules decides which addresses a tool may connect to.
type addrRules struct {
	// allow are ranges the user allowed despite the rules (JAZZ_NET_ALLOW).
	allow []netip.Prefix
}

// check refuses ip unless it is a public address or allowed.
func (r addrRules) check(host string, ip netip.Addr) error {
	ip = ip.WithZone("")
	for _, p := range r.allow {
		if p.Contains(ip) {
			return nil
		}
	}
	if reason := specialReason(ip); reason != "" {
		return &RefusedError{Host: host, Addr: ip, Reason: reason}
	}
	return nil
}

func specialReason(ip netip.Addr) string {
	switch {
	case ip.Is4In6():
		return "an IPv4-mapped IPv6 address"
	case ip.Is6() && netip.MustParsePrefix("::/96").Contains(ip) && !ip.IsUnspecified() && !ip.IsLoopback():
		return "an IPv4-compatible IPv6 address"
	case ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the broadcast address"
	}
	for _, s := range special {
		if s.prefix.Contains(ip) {
			return s.reason
		}
	}
	for _, e := range embedded {
		if e.prefix.Contains(ip) {
			b := ip.As16()
			v4 := netip.AddrFrom4([4]byte(b[e.v4At : e.v4At+4]))
			if r := specialReason(v4); r != "" {
				return r + " inside an IPv6 address (" + v4.String() + ")"
			}
		}
	}
	return ""
}

// ParseAllow reads JAZZ_NET_ALLOW: a comma- or space-separated list of
// addresses and CIDR ranges the user allows the web tools to reach
// despite the address rules (a lab network, a local test server).
func ParseAllow(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("JAZZ_NET_ALLOW: %q is neither an IP address nor a CIDR range", f)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// dialer connects where the address rules allow, and through the
// configured proxy where the proxy settings say.
type dialer struct {
	rules    addrRules
	proxy    func(*url.URL) (*url.URL, error)
	resolver *net.Resolver
}

// newDialer reads the proxy settings as jazz's own calls do (httpx:
// HTTPS_PROXY, HTTP_PROXY, ALL_PROXY for both, NO_PROXY; SOCKS ignored).
func newDialer(rules addrRules, getenv func(string) string) *dialer {
	proxy := func(*url.URL) (*url.URL, error) { return nil, nil }
	if f := httpx.ProxyFunc(getenv); f != nil {
		proxy = func(u *url.URL) (*url.URL, error) { return f(&http.Request{URL: u}) }
	}
	return &dialer{rules: rules, proxy: proxy, resolver: net.DefaultResolver}
}

// direct dials without a proxy. The check runs in the dialer's Control
// hook, on the very address the socket connects to, after the name was
// resolved: a name that resolves to a public address when checked and to
// 127.0.0.1 when dialed (DNS rebinding) has no gap to use.
func (d *dialer) direct(host string) *net.Dialer {
	return &net.Dialer{Timeout: dialTimeout, Control: func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("refused to connect to %q: not an IP address", address)
		}
		return d.rules.check(host, ap.Addr())
	}}
}

// pick resolves host once and returns the first address the rules allow;
// with a proxy the target is reached by that checked address, so the
// proxy never resolves the name again.
func (d *dialer) pick(ctx context.Context, host string) (netip.Addr, error) {
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return ip, d.rules.check(host, ip)
	}
	ips, err := d.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.Addr{}, err
	}
	var first error
	for _, ip := range ips {
		if err := d.rules.check(host, ip); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		return ip.Unmap(), nil
	}
	if first == nil {
		first = fmt.Errorf("%s has no address", host)
	}
	return netip.Addr{}, first
}

// hop is how one request reaches its target.
type hop struct {
	transport *http.Transport
	// prepare adjusts the request for the route (an absolute-form request
	// through an HTTP proxy names the checked address, not the name).
	prepare func(*http.Request)
}

// route builds the transport for one request to u (one per hop: redirects
// are followed by the caller, each target judged anew).
func (d *dialer) route(ctx context.Context, u *url.URL) (*hop, error) {
	proxyURL, err := d.proxy(u)
	if err != nil {
		return nil, fmt.Errorf("proxy settings: %w", err)
	}
	base := func() *http.Transport {
		return &http.Transport{
			DisableKeepAlives:      true,
			ForceAttemptHTTP2:      true,
			TLSHandshakeTimeout:    dialTimeout,
			ResponseHeaderTimeout:  60 * time.Second,
			MaxResponseHeaderBytes: 1 << 20,
		}
	}
	host := u.Hostname()
	if proxyURL == nil {
		t := base()
		t.DialContext = d.direct(host).DialContext
		return &hop{transport: t, prepare: func(*http.Request) {}}, nil
	}
	if proxyURL.Scheme != "http" && proxyURL.Scheme != "https" {
		return nil, fmt.Errorf("the proxy %s is not an http(s) proxy; only http and https proxies are supported", redactUser(proxyURL))
	}
	ip, err := d.pick(ctx, host)
	if err != nil {
		return nil, err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	target := net.JoinHostPort(ip.String(), port)
	t := base()
	if u.Scheme == "http" {
		// Absolute-form through the proxy, to the checked address; the
		// Host header keeps the name.
		t.Proxy = http.ProxyURL(proxyURL)
		t.DialContext = (&net.Dialer{Timeout: dialTimeout}).DialContext
		return &hop{transport: t, prepare: func(r *http.Request) {
			r.Host = u.Host
			r.URL.Host = target
		}}, nil
	}
	// HTTPS: a tunnel to the checked address; TLS still verifies the name.
	t.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		return connectVia(ctx, proxyURL, target)
	}
	return &hop{transport: t, prepare: func(*http.Request) {}}, nil
}

// connectVia opens a CONNECT tunnel to target through proxy.
func connectVia(ctx context.Context, proxy *url.URL, target string) (net.Conn, error) {
	addr := proxy.Host
	if proxy.Port() == "" {
		addr = net.JoinHostPort(proxy.Hostname(), map[string]string{"http": "80", "https": "443"}[proxy.Scheme])
	}
	conn, err := (&net.Dialer{Timeout: dialTimeout}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", redactUser(proxy), err)
	}
	if proxy.Scheme == "https" {
		tc := tls.Client(conn, &tls.Config{ServerName: proxy.Hostname(), MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("proxy %s: %w", redactUser(proxy), err)
		}
		conn = tc
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	_ = conn.SetDeadline(time.Now().Add(dialTimeout))
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: target}, Host: target, Header: http.Header{}}
	if u := proxy.User; u != nil {
		pw, _ := u.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pw)))
	}
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("proxy %s: %w", redactUser(proxy), err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("proxy %s: %w", redactUser(proxy), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		conn.Close()
		return nil, fmt.Errorf("proxy %s refused the tunnel: %s", redactUser(proxy), resp.Status)
	}
	if br.Buffered() > 0 {
		conn.Close()
		return nil, errors.New("proxy sent data before the tunnel was used")
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}

// redactUser is a URL without its userinfo, for messages.
func redactUser(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User("<redacted>")
	}
	return c.String()
}
