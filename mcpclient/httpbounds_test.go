package mcpclient

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/config"
)

// rawHTTPServer is a Streamable HTTP MCP server written against the wire:
// it answers tools/list with one tool whose description is descLen bytes,
// as JSON or as an event stream (sse).
func rawHTTPServer(t *testing.T, descLen int, sse bool) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusOK)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &m)
		if m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result string
		switch m.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "s1")
			result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`, m.Params.ProtocolVersion)
		case "tools/list":
			result = `{"tools":[{"name":"big","inputSchema":{"type":"object"},"description":"` + strings.Repeat("x", descLen) + `"}]}`
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
			return
		}
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, msg)
	}))
}

// TestHTTPAnswersAreBounded: a Streamable HTTP server's answer is held to
// MaxMessage, as a stdio server's line is, whether it comes as JSON (which
// the SDK reads whole, unbounded) or as an event (the SDK's own bound is
// twice ours): an answer past it fails the connection, saying why, rather
// than filling memory. An answer within it is read.
func TestHTTPAnswersAreBounded(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			small, big := rawHTTPServer(t, 100, sse), rawHTTPServer(t, MaxMessage+1024, sse)
			defer small.Close()
			defer big.Close()
			def := func(name, url string) config.MCPServer {
				return config.MCPServer{Name: name, Transport: config.MCPHTTP, URL: url, Enabled: true, ConnectTimeout: 10 * time.Second}
			}
			c := New([]config.MCPServer{def("small", small.URL), def("big", big.URL)}, Options{})
			defer c.Close(ctxT(t, 10*time.Second))
			ctx := ctxT(t, 30*time.Second)
			if ts, err := c.Tools(ctx, "small"); err != nil || len(ts) != 1 {
				t.Fatalf("a small answer: %v %v", ts, err)
			}
			_, err := c.Tools(ctx, "big")
			if err == nil {
				t.Fatal("an answer over MaxMessage was read")
			}
			want := "is over 8388608 bytes"
			if sse {
				want = "exceeded 8388608 bytes"
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("big answer: %v, want it to say %q", err, want)
			}
		})
	}
}
