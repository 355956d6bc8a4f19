package webtools

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBombsAndDripsAreBounded: a gzip body that inflates to 64 MiB
// (the transport inflates what it asked for) is read to the size cap and
// no further, by both tools; a body that drips a byte at a time forever
// ends at the tool's time limit with what came. Neither holds the caller
// longer than its limit.
func TestBombsAndDripsAreBounded(t *testing.T) {
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	chunk := make([]byte, 1<<20)
	for range 64 {
		zw.Write(chunk)
	}
	zw.Close()
	s := newServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bomb":
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb.Bytes())
		case "/drip":
			w.Header().Set("Content-Type", "text/plain")
			f := w.(http.Flusher)
			for r.Context().Err() == nil {
				w.Write([]byte("x"))
				f.Flush()
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	o := loopbackOnly(t)
	start := time.Now()
	r := run(t, o, "web_fetch", map[string]any{"url": s.URL + "/bomb"})
	if !r.Success || !r.Value.(FetchResult).Truncated || len(r.Value.(FetchResult).Content) > DefaultMaxLength {
		t.Errorf("web_fetch of a gzip bomb: success=%v error=%q", r.Success, r.Error)
	}
	rr := run(t, o, "http_request", map[string]any{"method": "GET", "url": s.URL + "/bomb", "maxResponseBytes": 1000})
	if res := rr.Value.(RequestResult).Response; !res.Truncated || res.Size != 1000 {
		t.Errorf("http_request of a gzip bomb: %+v", res.Size)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the bombs took %v", d)
	}
	start = time.Now()
	rr = run(t, o, "http_request", map[string]any{"method": "GET", "url": s.URL + "/drip", "timeoutMs": 500})
	if d := time.Since(start); d > 5*time.Second || rr.Success || !strings.Contains(rr.Error, "Failed to read response body") {
		t.Errorf("a dripping body: %v after %v", rr.Error, d)
	}
}
