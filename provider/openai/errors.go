package openai

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"
)

// maxErrorMessage bounds the server text quoted in an error.
const maxErrorMessage = 500

// errorMessage extracts the human message from an error body: OpenAI's
// {"error":{"message"}}, a bare {"error":"…"} or {"message":"…"}, else the
// raw text.
func errorMessage(status int, raw []byte) string {
	var body struct {
		Error   *wireErrorBody `json:"error"`
		Message string         `json:"message"`
		Detail  string         `json:"detail"`
	}
	msg := ""
	if json.Unmarshal(raw, &body) == nil {
		switch {
		case body.Error != nil && body.Error.Message != "":
			msg = body.Error.Message
		case body.Message != "":
			msg = body.Message
		case body.Detail != "":
			msg = body.Detail
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(string(raw))
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return cut(msg)
}

// cut bounds s to maxErrorMessage bytes on a rune boundary.
func cut(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxErrorMessage {
		return s
	}
	n := maxErrorMessage
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
