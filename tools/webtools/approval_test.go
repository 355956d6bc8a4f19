package webtools

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// approvalOf is http_request's approval message as the gate shows it, for
// the tool built with o.
func approvalOf(t *testing.T, o Options, args string) string {
	t.Helper()
	for _, tl := range Tools(o) {
		if tl.Name == "http_request" {
			msg, err := tl.ApprovalMessage(json.RawMessage(args))
			if err != nil {
				t.Fatalf("approval of %s: %v", args, err)
			}
			return msg
		}
	}
	t.Fatal("no http_request tool")
	return ""
}

// The approval names the target the request reaches: an internationalized
// host by the ASCII name the client connects to (with the spelling it
// was given, escaped), never letters that only look like another name.
func TestApprovalNamesTheHostReached(t *testing.T) {
	cases := []struct{ url, ascii string }{
		{"http://g\u043e\u043egle.com/a", "xn--ggle-55da.com"},
		{"https://example\u3002com/", "example.com"},
		{"http://\uff45xample.com/", "example.com"},
	}
	for _, c := range cases {
		msg := approvalOf(t, Options{}, `{"method":"POST","url":"`+c.url+`","body":{"type":"text","value":"x"}}`)
		for _, r := range msg {
			if r >= 0x80 {
				t.Errorf("%s: the approval holds %q, which the person may read as another letter:\n%s", c.url, r, msg)
				break
			}
		}
		if !strings.Contains(msg, "://"+c.ascii+"/") || !strings.Contains(msg, "Host: "+c.ascii+", written ") {
			t.Errorf("%s: the approval does not name %s:\n%s", c.url, c.ascii, msg)
		}
	}
	if _, err := describeRequest(json.RawMessage(`{"method":"GET","url":"http://a\u202eb.com/"}`)); err == nil {
		t.Error("a host with a bidi control was described, though no client can reach it")
	}
}

// What the approval says is reached is reached: a fullwidth-dotted
// 127.0.0.1 under JAZZ_NET_ALLOW=127.0.0.1 is named as that address, and
// as one the allowance lets through (the fixed "loopback addresses are
// refused" was false there), and the server sees that host.
func TestApprovalOfAnAllowedLocalAddress(t *testing.T) {
	hosts := make(chan string, 4)
	auths := make(chan string, 4)
	s := newServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		hosts <- r.Host
		auths <- r.Header.Get("Authorization")
	})
	u, _ := url.Parse(s.URL)
	o := loopbackOnly(t)
	written := "http://127\u30020\u30020\u30021:" + u.Port() + "/"
	args := `{"method":"DELETE","url":"` + written + `"}`
	msg := approvalOf(t, o, args)
	for _, want := range []string{"HTTP request: DELETE http://127.0.0.1:" + u.Port() + "/", "JAZZ_NET_ALLOW lets through: 127.0.0.1/32",
		"This request goes to 127.0.0.1, a loopback address that JAZZ_NET_ALLOW allows"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the approval lacks %q:\n%s", want, msg)
		}
	}
	if r := requestHandler(o)(t.Context(), nil, json.RawMessage(args)); !r.Success {
		t.Fatalf("%+v", r)
	}
	if h := recv(t, hosts); h != "127.0.0.1:"+u.Port() {
		t.Errorf("the server saw Host %q", h)
	}
	recv(t, auths)

	// User info in the URL is sent as an Authorization header the
	// header list does not show: the approval says so.
	args = `{"method":"GET","url":"http://good.example.com:pw@127.0.0.1:` + u.Port() + `/"}`
	msg = approvalOf(t, o, args)
	if !strings.Contains(msg, "user info (hidden here) is sent as an Authorization header") || strings.Contains(msg, "pw") {
		t.Errorf("the approval does not say credentials go along, or shows them:\n%s", msg)
	}
	if r := requestHandler(o)(t.Context(), nil, json.RawMessage(args)); !r.Success {
		t.Fatalf("%+v", r)
	}
	recv(t, hosts)
	if a := recv(t, auths); !strings.HasPrefix(a, "Basic ") {
		t.Errorf("Authorization %q: the note would be wrong", a)
	}

	// Without an allowance the fixed sentence stands, and is true.
	if msg := approvalOf(t, Options{}, args); !strings.HasSuffix(msg, "link-local addresses are refused.") {
		t.Errorf("approval without JAZZ_NET_ALLOW:\n%s", msg)
	}
}
