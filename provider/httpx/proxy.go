package httpx

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpproxy"
)

// proxyVars returns the proxy settings config.md §6 names: HTTPS_PROXY,
// HTTP_PROXY (each in either case, upper case first), ALL_PROXY for both
// when neither is set, and NO_PROXY. A SOCKS proxy is left out: jazz
// speaks to http(s) proxies only, and ProxyWarnings says so.
func proxyVars(getenv func(string) string) (cfg httpproxy.Config, socks []string) {
	if getenv == nil {
		return cfg, nil
	}
	pick := func(names ...string) string {
		for _, n := range names {
			v := strings.TrimSpace(getenv(n))
			if v == "" {
				continue
			}
			if isSOCKS(v) {
				socks = append(socks, n)
				continue
			}
			return v
		}
		return ""
	}
	all := pick("ALL_PROXY", "all_proxy")
	cfg.HTTPSProxy = pick("HTTPS_PROXY", "https_proxy")
	cfg.HTTPProxy = pick("HTTP_PROXY", "http_proxy")
	if cfg.HTTPSProxy == "" {
		cfg.HTTPSProxy = all
	}
	if cfg.HTTPProxy == "" {
		cfg.HTTPProxy = all
	}
	cfg.NoProxy = pick("NO_PROXY", "no_proxy")
	return cfg, socks
}

func isSOCKS(v string) bool {
	u, err := url.Parse(v)
	return err == nil && strings.HasPrefix(strings.ToLower(u.Scheme), "socks")
}

// ProxyFunc is the proxy chooser for a transport: the environment's
// http(s) proxy unless NO_PROXY exempts the host; loopback hosts (local
// model servers, test servers) are never proxied. nil getenv is direct.
func ProxyFunc(getenv func(string) string) func(*http.Request) (*url.URL, error) {
	cfg, _ := proxyVars(getenv)
	if cfg.HTTPProxy == "" && cfg.HTTPSProxy == "" {
		return nil
	}
	f := cfg.ProxyFunc()
	return func(r *http.Request) (*url.URL, error) { return f(r.URL) }
}

// ProxyWarnings are the start-up notices about the proxy settings: a SOCKS
// proxy is named and ignored.
func ProxyWarnings(getenv func(string) string) []string {
	_, socks := proxyVars(getenv)
	var out []string
	for _, n := range socks {
		out = append(out, fmt.Sprintf("%s names a SOCKS proxy, which jazz does not support (http and https proxies only); it is ignored", n))
	}
	return out
}
