package webtools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRedirectToAnotherOriginIsNotFollowed: http_request's approval names
// one origin; a redirect to another host, or another port of the same
// host, is returned with its target, not followed, so neither the body
// of an approved POST (a 307 keeps it) nor a header whose name no pattern
// recognises as a credential reaches a server nobody approved. Within the
// origin a 307 is followed with its method and body. web_fetch, a GET
// with no headers of the model's, still follows redirects anywhere the
// address rules allow.
func TestRedirectToAnotherOriginIsNotFollowed(t *testing.T) {
	other := newServer(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "other")
	})
	port := newServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "other port")
	})
	var s *server
	s = newServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/307":
			http.Redirect(w, r, other.URL+"/took", http.StatusTemporaryRedirect)
		case "/308-port":
			http.Redirect(w, r, port.URL+"/took", http.StatusPermanentRedirect)
		case "/302":
			http.Redirect(w, r, other.URL+"/took", http.StatusFound)
		case "/same":
			http.Redirect(w, r, "/echo", http.StatusTemporaryRedirect)
		case "/same-absolute":
			http.Redirect(w, r, strings.Replace(s.URL, "127.0.0.1", "127.0.0.1", 1)+"/echo", http.StatusTemporaryRedirect)
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "%s %s %s", r.Method, b, r.Header.Get("X-Auth"))
		}
	})
	allow, _ := ParseAllow("127.0.0.1,127.0.0.2")
	o := Options{Allow: allow, Getenv: noEnv}
	for _, tc := range []struct{ method, path, target string }{
		{"POST", "/307", other.URL + "/took"},
		{"PUT", "/308-port", port.URL + "/took"},
		{"GET", "/302", other.URL + "/took"},
		{"DELETE", "/302", other.URL + "/took"},
	} {
		args := map[string]any{"method": tc.method, "url": s.URL + tc.path, "headers": map[string]any{"X-Auth": "s3cret"}}
		if tc.method != "GET" {
			args["body"] = map[string]any{"type": "text", "value": "approved for " + s.URL}
		}
		r := run(t, o, "http_request", args)
		if !r.Success {
			t.Fatalf("%s %s: %+v", tc.method, tc.path, r)
		}
		res := r.Value.(RequestResult).Response
		if res.Status < 300 || res.Status > 399 || res.RedirectNotFollowed != tc.target {
			t.Errorf("%s %s: status %d, redirectNotFollowed %q, want the redirect to %s returned", tc.method, tc.path, res.Status, res.RedirectNotFollowed, tc.target)
		}
	}
	if other.hits.Load() != 0 || port.hits.Load() != 0 {
		t.Fatalf("a redirect to another origin was followed: %d requests to another host, %d to another port", other.hits.Load(), port.hits.Load())
	}
	for _, path := range []string{"/same", "/same-absolute"} {
		r := run(t, o, "http_request", map[string]any{"method": "POST", "url": s.URL + path, "headers": map[string]any{"X-Auth": "s3cret"},
			"body": map[string]any{"type": "text", "value": "b"}})
		if txt := r.Value.(RequestResult).Response.Body.(map[string]any)["text"]; txt != "POST b s3cret" {
			t.Errorf("a 307 within the origin (%s): the server saw %v", path, txt)
		}
	}
	if r := run(t, o, "web_fetch", map[string]any{"url": s.URL + "/302"}); !r.Success || r.Value.(FetchResult).Content != "other" {
		t.Errorf("web_fetch across hosts: %+v", r)
	}
}

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"http://x.com/a", "http://x.com/b?c", true},
		{"http://x.com/a", "http://X.COM:80/b", true},
		{"https://x.com/", "https://x.com:443/", true},
		{"http://x.com/", "https://x.com/", true},
		{"http://u:p@x.com/", "http://x.com/", true},
		{"https://x.com/", "http://x.com/", false},
		{"http://x.com:8080/", "https://x.com/", false},
		{"http://x.com/", "https://x.com:8443/", false},
		{"http://x.com/", "http://x.com:81/", false},
		{"http://x.com/", "http://y.com/", false},
		{"http://x.com/", "http://x.com.evil/", false},
		{"http://x.com/", "http://evil@x.com.evil/", false},
		{"http://127.0.0.1:1/", "http://127.0.0.2:1/", false},
		{"http://[::1]:1/", "http://[::1]:1/z", true},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := SameOrigin(a, b); got != tc.want {
			t.Errorf("SameOrigin(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestEveryApprovedHeaderArrivesAsShown is a differential check of the
// approval against the wire: for header names drawn from the standard
// ones (transport headers among them) and random tokens in random case,
// each request http_request accepts is sent to a real server, and every
// header the approval lists (build's set, which describeRequest prints)
// must arrive with exactly the value listed, once; the Host the server
// sees is the URL's. Host, Content-Length, Transfer-Encoding, Connection
// and their kind, which Go's client writes or drops itself, are refused
// before anyone is asked.
func TestEveryApprovedHeaderArrivesAsShown(t *testing.T) {
	type seen struct {
		host   string
		header http.Header
	}
	got := make(chan seen, 1)
	s := newServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h := r.Header.Clone()
		if r.ContentLength >= 0 && r.Header.Get("Content-Length") == "" && r.ContentLength > 0 {
			h.Set("Content-Length", fmt.Sprint(r.ContentLength))
		}
		got <- seen{r.Host, h}
		w.Header().Set("Content-Type", "text/plain")
	})
	o := loopbackOnly(t)
	names := []string{"Host", "Content-Length", "Transfer-Encoding", "Trailer", "Connection", "Keep-Alive", "Proxy-Connection",
		"TE", "Upgrade", "User-Agent", "Accept", "Accept-Encoding", "Authorization", "Cookie", "Content-Type", "Expect",
		"Cache-Control", "Referer", "Origin", "X-Forwarded-For", "X-Auth", "Range", "If-None-Match", "Proxy-Authorization"}
	rng := rand.New(rand.NewPCG(1, 2))
	const tchar = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"
	for range 60 {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteByte(tchar[rng.IntN(len(tchar))])
		}
		names = append(names, b.String())
	}
	recase := func(s string) string {
		r := []byte(s)
		for i := range r {
			if rng.IntN(2) == 0 {
				r[i] = strings.ToUpper(string(r[i]))[0]
			} else {
				r[i] = strings.ToLower(string(r[i]))[0]
			}
		}
		return string(r)
	}
	refused := 0
	for i, n := range names {
		for _, name := range []string{n, recase(n)} {
			value := fmt.Sprintf("v%d-%s", i, strings.Repeat("é", rng.IntN(3)))
			args := map[string]any{"method": "POST", "url": s.URL + "/", "headers": map[string]any{name: value},
				"body": map[string]any{"type": "text", "value": "body"}}
			raw, _ := json.Marshal(args)
			bt, err := build(raw)
			if err != nil {
				refused++
				if r := run(t, o, "http_request", args); r.Success {
					t.Fatalf("header %q: build refused it (%v) yet the request was sent", name, err)
				}
				continue
			}
			r := run(t, o, "http_request", args)
			if !r.Success {
				t.Fatalf("header %q: %+v", name, r)
			}
			if st := r.Value.(RequestResult).Response.Status; st != http.StatusOK {
				// The server answered without the handler (a random
				// Expect gets 417): nothing to compare.
				continue
			}
			sv := recv(t, got)
			if want := s.Listener.Addr().String(); sv.host != want {
				t.Errorf("header %q: the server saw Host %q, want the URL's %q", name, sv.host, want)
			}
			for h, vals := range bt.header {
				if !slices.Equal(sv.header.Values(h), vals) {
					t.Errorf("header %q: the approval lists %s: %q, the server saw %q", name, h, vals, sv.header.Values(h))
				}
			}
		}
	}
	if refused == 0 {
		t.Fatal("no header was refused: the transport headers were accepted")
	}
}

// TestBodyAndQuerySentAsWritten: a JSON body is sent as the arguments
// wrote it (big integers and <, >, & kept, space dropped), the approval
// message shows those very bytes, and a numeric query value is sent as
// its literal; a random mix of JSON values checks the body differentially
// against json.Compact of the argument.
func TestBodyAndQuerySentAsWritten(t *testing.T) {
	got := make(chan string, 1)
	s := newServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r.URL.RawQuery + "\n" + string(b)
		w.Header().Set("Content-Type", "text/plain")
	})
	o := loopbackOnly(t)
	value := `{ "id": 12345678901234567890, "s": "<a&b>", "f": 1.0, "e": 1E+2, "u": "\u00e9\ud83d\ude00" }`
	args := `{"method":"POST","url":"` + s.URL + `/","query":{"n":12345678901234567890,"e":1e3},"body":{"type":"json","value":` + value + `}}`
	var compact bytes.Buffer
	json.Compact(&compact, []byte(value))
	msg, err := describeRequest(json.RawMessage(args))
	if err != nil || !strings.Contains(msg, compact.String()) {
		t.Errorf("the approval does not show the bytes sent (%v):\n%s", err, msg)
	}
	var m map[string]any
	json.Unmarshal([]byte(args), &m)
	if r := run(t, o, "http_request", m); !r.Success {
		t.Fatalf("%+v", r)
	}
	// run re-encodes the arguments through map[string]any: send the raw
	// ones through the handler directly too.
	recv(t, got)
	h := requestHandler(o)
	if r := h(t.Context(), nil, json.RawMessage(args)); !r.Success {
		t.Fatalf("%+v", r)
	}
	if sv := recv(t, got); sv != "e=1e3&n=12345678901234567890\n"+compact.String() {
		t.Errorf("the server saw %q, want %q", sv, "e=1e3&n=12345678901234567890\n"+compact.String())
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		v := randJSON(rng, 3)
		raw := `{"method":"PUT","url":"` + s.URL + `/","body":{"type":"json","value":` + v + `}}`
		if r := h(t.Context(), nil, json.RawMessage(raw)); !r.Success {
			t.Fatalf("%s: %+v", v, r)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(v)); err != nil {
			t.Fatalf("generator: %s: %v", v, err)
		}
		if sv := strings.TrimPrefix(recv(t, got), "\n"); sv != want.String() {
			t.Fatalf("body %s: the server saw %s", v, sv)
		}
	}
}

// recv waits a bounded time for what the server saw.
func recv[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("the server saw no request")
	}
	var zero T
	return zero
}

// randJSON is a random JSON text with the literals a re-encoding would
// change: big and exponent numbers, escapes, HTML characters.
func randJSON(rng *rand.Rand, depth int) string {
	atoms := []string{`12345678901234567890`, `-0`, `1.50`, `2e308`, `1E-400`, `0.1`, `"<&>"`, `"\u2028"`, `"\ud83d\ude00"`,
		`"\/"`, `true`, `null`, `"é"`, `9007199254740993`}
	if depth == 0 || rng.IntN(3) == 0 {
		return atoms[rng.IntN(len(atoms))]
	}
	n := rng.IntN(4)
	parts := make([]string, n)
	if rng.IntN(2) == 0 {
		for i := range parts {
			parts[i] = randJSON(rng, depth-1)
		}
		return "[ " + strings.Join(parts, " ,\n") + " ]"
	}
	for i := range parts {
		parts[i] = fmt.Sprintf(`"k%d" : %s`, i, randJSON(rng, depth-1))
	}
	return "{" + strings.Join(parts, ",") + "}"
}
