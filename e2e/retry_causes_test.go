package e2e_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// These are issue 13 item 7: a retry only where one can help, and each
// retry line says why.

// TestBadBaseURLFailsAtOnce: a base URL that is not a URL is the user's
// to fix; jazz says so without a single retry, whatever maxRetries is.
func TestBadBaseURLFailsAtOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "not a url")
	w.writeConfig(`{"maxRetries": 10}`)
	w.agent("x", "read_file")
	r := w.exec("", "run", "--agent", "x", "--json", "hi")
	e := wantFailure(t, r, "OPENAI_BASE_URL")
	if !strings.Contains(e.Error, "not a url") || strings.Contains(r.stderr, "Trying again") {
		t.Fatalf("error %q; stderr %q", e.Error, r.stderr)
	}
	if strings.Contains(e.Error, "open provider openai: openai:") {
		t.Errorf("the provider is named twice: %q", e.Error)
	}
}

// TestHTMLAnswerRetriedOnce: a 200 whose body is an HTML page (a proxy's
// login page) is a malformed response, tried once more and no further,
// and the error names the page by its title.
func TestHTMLAnswerRetriedOnce(t *testing.T) {
	t.Parallel()
	page := "<!DOCTYPE html><html><head><title>Sign in to the guest network</title></head><body>" + strings.Repeat("<p>x</p>", 200) + "</body></html>"
	turn := chatserver.Turn{Raw: page, RawContentType: "text/html"}
	srv := chatserver.New(turn, turn, turn, turn)
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.writeConfig(`{"maxRetries": 3}`)
	w.agent("x", "read_file")
	r := w.exec("", "run", "--agent", "x", "--json", "--no-stream", "hi")
	e := wantFailure(t, r, `an HTML page titled "Sign in to the guest network"`)
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d requests, want 2 (one retry of a malformed response)\nstderr: %s", n, r.stderr)
	}
	if !strings.Contains(r.stderr, "hit a malformed response (") || strings.Contains(r.stderr, "network issue") {
		t.Errorf("retry line does not name the cause:\n%s", r.stderr)
	}
	if strings.Contains(e.Error, "<p>") {
		t.Errorf("markup quoted: %q", e.Error)
	}
}

// TestHTMLErrorQuotedBriefly: a 502 with an HTML body is quoted by its
// title, and the retry line names the status and that title.
func TestHTMLErrorQuotedBriefly(t *testing.T) {
	t.Parallel()
	page := "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center>" + strings.Repeat(" ", 600) + "</body></html>"
	bad := chatserver.Turn{Status: http.StatusBadGateway, Raw: page, RawContentType: "text/html"}
	srv := chatserver.New(bad, bad)
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.writeConfig(`{"maxRetries": 1}`)
	w.agent("x", "read_file")
	r := w.exec("", "run", "--agent", "x", "--json", "--no-stream", "hi")
	e := wantFailure(t, r, `an HTML page titled "502 Bad Gateway"`)
	if len(e.Error) > 200 || strings.Contains(e.Error, "<") {
		t.Errorf("error not brief: %q", e.Error)
	}
	if !strings.Contains(r.stderr, `hit a server error (502) (Bad Gateway (an HTML page titled \"502 Bad Gateway\"))`) &&
		!strings.Contains(r.stderr, `hit a server error (502) (Bad Gateway (an HTML page titled "502 Bad Gateway"))`) {
		t.Errorf("retry line does not name the cause:\n%s", r.stderr)
	}
}

// TestMaxRetriesFlag: --max-retries overrides the config both ways, and
// a bad value is refused before any call.
func TestMaxRetriesFlag(t *testing.T) {
	t.Parallel()
	bad := chatserver.Turn{Status: http.StatusServiceUnavailable, ErrorMessage: "overloaded"}
	srv := chatserver.New(bad, bad, bad, bad)
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.writeConfig(`{"maxRetries": 10}`)
	w.agent("x", "read_file")
	r := w.exec("", "run", "--agent", "x", "--json", "--no-stream", "--max-retries", "0", "hi")
	wantFailure(t, r, "overloaded")
	if n := len(srv.Requests()); n != 1 || strings.Contains(r.stderr, "Trying again") {
		t.Fatalf("--max-retries 0 made %d requests\nstderr: %s", n, r.stderr)
	}

	srv2 := chatserver.New(bad, answer("fine"))
	defer srv2.Close()
	w2 := newWorld(t, srv2.URL()) // config: maxRetries 0
	w2.agent("x", "read_file")
	r = w2.exec("", "run", "--agent", "x", "--json", "--no-stream", "--max-retries", "1", "hi")
	if e := wantSuccess(t, r); e.Answer != "fine" {
		t.Fatalf("answer %q", e.Answer)
	}
	if !strings.Contains(r.stderr, "hit a server error (503) (overloaded). Trying again (attempt 2 of up to 2)") {
		t.Errorf("retry line:\n%s", r.stderr)
	}

	for _, v := range []string{"-1", "x", "1.5"} {
		r = w2.exec("", "run", "--agent", "x", "--json", "--max-retries", v, "hi")
		wantFailure(t, r, "--max-retries must be a whole number")
	}
}

// TestRetryAfterHonoured: a 429 asking to wait 1 s is waited out as
// asked, and the retry line says so.
func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	slow := chatserver.Turn{Status: http.StatusTooManyRequests, ErrorMessage: "slow down", Header: map[string]string{"Retry-After": "1"}}
	srv := chatserver.New(slow, answer("fine"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.agent("x", "read_file")
	r := w.exec("", "run", "--agent", "x", "--json", "--no-stream", "--max-retries", "2", "hi")
	wantSuccess(t, r)
	if !strings.Contains(r.stderr, "hit a rate limit (slow down). Waiting 1s as the server asked, then trying again (attempt 2 of up to 3)") {
		t.Errorf("retry line:\n%s", r.stderr)
	}
	if r.took < time.Second {
		t.Errorf("took %v: the server's 1 s was not waited", r.took)
	}
}
