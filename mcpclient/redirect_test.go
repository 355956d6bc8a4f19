package mcpclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/mcpclient/mcptest"
)

// TestHTTPServerHeadersStayWithItsOrigin: a server's configured headers
// (its token) go to the configured origin only. A server, or whoever
// answers at its URL, that redirects jazz elsewhere (another host or
// port, a 307 keeping the POST) gets no request followed there: the
// connection fails, and the other origin sees neither the token nor any
// request. A redirect within the origin still works. Before, the headers
// were added by the transport to every request, redirects included, so
// the token went wherever a Location pointed.
func TestHTTPServerHeadersStayWithItsOrigin(t *testing.T) {
	var seen, leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
			leaked.Add(1)
		}
		mcptest.Handler().ServeHTTP(w, r)
	}))
	defer other.Close()
	h := mcptest.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
		case "/here":
			http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
		default:
			if r.Header.Get("Authorization") != "Bearer t0k" {
				http.Error(w, "no token", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		}
	}))
	defer srv.Close()
	def := func(name, path string) config.MCPServer {
		return config.MCPServer{Name: name, Transport: config.MCPHTTP, URL: srv.URL + path,
			Headers: map[string]string{"Authorization": "Bearer t0k", "X-Api-Key": "k3y"}, Enabled: true, ConnectTimeout: 5 * time.Second}
	}
	c := New([]config.MCPServer{def("away", "/away"), def("here", "/here")}, Options{})
	defer c.Close(context.Background())
	ctx := ctxT(t, 30*time.Second)
	if _, err := c.Tools(ctx, "away"); err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Errorf("a redirect to another origin: %v, want a failure naming the redirect", err)
	}
	if seen.Load() != 0 || leaked.Load() != 0 {
		t.Fatalf("the other origin got %d requests, %d with the server's headers", seen.Load(), leaked.Load())
	}
	if ts, err := c.Tools(ctx, "here"); err != nil || len(ts) == 0 {
		t.Fatalf("a redirect within the origin: %v %v", ts, err)
	}
}
