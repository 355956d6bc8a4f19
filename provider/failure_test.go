package provider

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestHTMLPage(t *testing.T) {
	tests := []struct {
		ct, body, want string
		ok             bool
	}{
		{"text/html; charset=utf-8", "<html><title>502 Bad &amp; Gateway</title></html>", `an HTML page titled "502 Bad & Gateway"`, true},
		{"", "\n  <!DOCTYPE html><html><body>hi</body></html>", "an HTML page", true},
		{"application/json", `{"error":"x"}`, "", false},
		{"", "<html><title>" + strings.Repeat("long ", 100) + "</title>", `an HTML page titled "` + strings.Repeat("long ", 24)[:MaxQuoted] + `…"`, true},
	}
	for _, tt := range tests {
		got, ok := HTMLPage(tt.ct, []byte(tt.body))
		if got != tt.want || ok != tt.ok {
			t.Errorf("HTMLPage(%q, %q) = %q, %v; want %q, %v", tt.ct, tt.body, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCheckAnswer(t *testing.T) {
	body := `{"id":"x"}`
	resp := &http.Response{Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body))}
	r, err := CheckAnswer("openai", resp)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(r); string(b) != body {
		t.Fatalf("read back %q", b)
	}
	resp = &http.Response{Header: http.Header{}, Body: io.NopCloser(bytes.NewReader([]byte("<html><title>Login</title>")))}
	_, err = CheckAnswer("openai", resp)
	pe, ok := err.(*Error)
	if !ok || pe.Reason != ReasonMalformed || !pe.Retryable || !strings.Contains(pe.Message, `"Login"`) {
		t.Fatalf("err = %#v", err)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":     0,
		"7":    7 * time.Second,
		"-3":   0,
		"soon": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       0,
	} {
		if got := RetryAfter(v, now); got != want {
			t.Errorf("RetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestCheckBaseURL(t *testing.T) {
	for raw, bad := range map[string]bool{
		"https://api.openai.com/v1": false,
		"http://127.0.0.1:8080":     false,
		"not a url":                 true,
		"api.openai.com/v1":         true,
		"https://":                  true,
		"ftp://host/":               true,
		"http://[::1":               true,
	} {
		if err := CheckBaseURL(raw, "X"); (err != nil) != bad {
			t.Errorf("CheckBaseURL(%q) = %v, want refused=%v", raw, err, bad)
		}
	}
	// A refused URL's password is not repeated in the message.
	for _, raw := range []string{"ftp://u:pw-7Qx9@host/", "https://u:pw-7Qx9@", "http://u:pw-7Qx9@[::1", "u:pw-7Qx9@host"} {
		if err := CheckBaseURL(raw, "X"); err == nil || strings.Contains(err.Error(), "pw-7Qx9") || !strings.Contains(err.Error(), "***") {
			t.Errorf("CheckBaseURL(%q) = %v: refused, without the password", raw, err)
		}
	}
}

func TestStatusOnce(t *testing.T) {
	e := ClassifyStatus(401, "Incorrect API key provided.")
	if n := strings.Count(e.Error(), "HTTP 401"); n != 1 {
		t.Errorf("%q says the status %d times", e.Error(), n)
	}
	if e := ClassifyStatus(400, "bad"); e.Error() != "bad (HTTP 400)" {
		t.Errorf("%q", e.Error())
	}
}
