// Package webtools owns the network tools of tool-schemas.md §9: web_fetch
// (read-only: a page's text) and http_request (high-risk, gated before it
// runs: any method, headers and body).
//
// The model picks every URL, so neither tool connects to anything that is
// not the public internet unless the user allowed it: loopback, private,
// link-local (cloud metadata), carrier-grade NAT, multicast, unspecified,
// reserved, IPv4-mapped and IPv4-compatible IPv6 addresses, and NAT64 or
// 6to4 addresses that carry one of those, are refused. The check runs in
// the dialer's Control hook, on the address the socket is about to connect
// to after the name was resolved, so a name that resolves differently the
// second time (DNS rebinding) gains nothing. Redirects (at most 5) are
// followed by the tool itself, each target judged on its own connection,
// credentials dropped when the host changes; http_request, whose
// approval names one origin, follows them only within it and returns a
// redirect elsewhere instead, and sends exactly the headers and body bytes
// its approval shows. Through a proxy (HTTPS_PROXY,
// HTTP_PROXY, NO_PROXY: the user's configuration, trusted), the target
// name is resolved and checked here and the proxy is asked for the checked
// address, never for the name.
//
// JAZZ_NET_ALLOW (the user's environment; neither the model nor a project
// config can set it) lists addresses and ranges allowed all the same: a lab
// network, or 127.0.0.1 for a test server.
package webtools

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
)

// Limits of web_fetch (the original had none: Go caps time and size).
const (
	FetchTimeout  = 30 * time.Second
	FetchMaxBytes = 5 << 20
	// DefaultMaxLength and MaxLength bound web_fetch's max_length.
	DefaultMaxLength = 50000
	MaxLength        = 200000
	// maxTitleRunes bounds a page's title; titles of real pages are far
	// shorter.
	maxTitleRunes = 1000
	// ChromeUA is the desktop Chrome 124 User-Agent web_fetch sends.
	ChromeUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)

// Options configures the network tools.
type Options struct {
	// Allow are the address ranges allowed despite the rules
	// (ParseAllow of JAZZ_NET_ALLOW).
	Allow []netip.Prefix
	// Getenv reads the proxy settings; nil is os.Getenv.
	Getenv func(string) string
}

func (o Options) dialer() *dialer {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return newDialer(addrRules{allow: o.Allow}, getenv)
}

// Tools returns web_fetch and http_request.
func Tools(o Options) []tools.Tool {
	return []tools.Tool{
		{
			Name: "web_fetch",
			Description: "Fetch a web page (http or https) and return its title and text: HTML is reduced to visible text " +
				"(scripts and styles dropped), JSON, XML and plain text come as they are, cut to max_length characters (default 50000). " +
				"Private, loopback and link-local addresses are refused.",
			Schema:  json.RawMessage(fetchSchema),
			Level:   messages.LevelReadOnly,
			Handler: fetchHandler(o),
		},
		{
			Name: "http_request",
			Description: "Make an HTTP request (any method, headers, query, a json/text/form body) and return the status, headers " +
				"and body. Needs approval. Private, loopback and link-local addresses are refused.",
			Schema:   json.RawMessage(requestSchema),
			Level:    messages.LevelHighRisk,
			Timeout:  150 * time.Second,
			Handler:  requestHandler(o),
			Describe: func(raw json.RawMessage) (string, error) { return describeWith(addrRules{allow: o.Allow}, raw) },
		},
	}
}

const fetchSchema = `{"type":"object","properties":{
"url":{"type":"string","minLength":1,"description":"The http or https URL to fetch."},
"max_length":{"type":"integer","minimum":1,"maximum":200000,"description":"Most characters of content to return (default 50000)."}},
"required":["url"],"additionalProperties":false}`

// FetchResult is web_fetch's result.
type FetchResult struct {
	URL      string `json:"url"`
	FinalURL string `json:"finalUrl,omitempty"`
	Title    string `json:"title"`
	Content  string `json:"content"`
	// Truncated says the content was cut (max_length, or the size cap).
	Truncated bool `json:"truncated,omitempty"`
}

// fetchTypes are the content types web_fetch reads.
var fetchTypes = map[string]bool{"text/html": true, "application/xhtml+xml": true, "text/plain": true,
	"application/json": true, "application/xml": true, "text/xml": true}

func fetchHandler(o Options) tools.Handler {
	return func(ctx context.Context, _ *tools.Env, raw json.RawMessage) tools.Result {
		var a struct {
			URL       string `json:"url"`
			MaxLength *int   `json:"max_length"`
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			return tools.Fail("Invalid arguments: " + err.Error())
		}
		u, err := url.Parse(strings.TrimSpace(a.URL))
		switch {
		case err != nil || !u.IsAbs():
			return tools.Fail(fmt.Sprintf("Failed to fetch %s: not an absolute URL", a.URL))
		case u.Scheme != "http" && u.Scheme != "https":
			return tools.Fail(fmt.Sprintf("Failed to fetch %s: only http and https URLs can be fetched", a.URL))
		case u.Host == "":
			return tools.Fail(fmt.Sprintf("Failed to fetch %s: the URL names no host", a.URL))
		}
		max := DefaultMaxLength
		if a.MaxLength != nil {
			max = min(*a.MaxLength, MaxLength)
		}
		ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
		defer cancel()
		h := http.Header{}
		h.Set("User-Agent", ChromeUA)
		h.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,text/plain;q=0.8,application/json;q=0.8,*/*;q=0.5")
		ex, err := o.dialer().send(ctx, outgoing{method: http.MethodGet, url: u, header: h, follow: true, maxBody: FetchMaxBytes})
		if err != nil {
			if _, ok := err.(*bodyError); ok {
				return tools.Fail("Failed to read response body: " + detail(err))
			}
			return tools.Fail(fmt.Sprintf("Failed to fetch %s: %s", a.URL, detail(err)))
		}
		if ex.resp.StatusCode < 200 || ex.resp.StatusCode > 299 {
			return tools.Fail(fmt.Sprintf("HTTP %d %s for %s", ex.resp.StatusCode, http.StatusText(ex.resp.StatusCode), a.URL))
		}
		ct := ex.resp.Header.Get("Content-Type")
		mt, _, _ := mime.ParseMediaType(ct)
		if !fetchTypes[mt] {
			return tools.Fail(fmt.Sprintf("Unsupported content type %q for %s", ct, a.URL))
		}
		out := FetchResult{URL: a.URL, Truncated: ex.truncated}
		if ex.final.String() != u.String() {
			out.FinalURL = ex.final.String()
		}
		if mt == "text/html" || mt == "application/xhtml+xml" {
			out.Title, out.Content = extractText(ex.body, ct)
			// max_length bounds the content; the title needs its own bound,
			// or an unclosed <title> makes the whole page the title.
			out.Title, _ = cutRunes(out.Title, maxTitleRunes)
		} else {
			out.Content = strings.ToValidUTF8(string(ex.body), "\uFFFD")
		}
		var cut bool
		if out.Content, cut = cutRunes(out.Content, max); cut {
			out.Truncated = true
		}
		return tools.OK(out)
	}
}
