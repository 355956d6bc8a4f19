package secrets

import (
	"net/url"
	"strings"
)

// URL hides the credentials of a URL, for messages:
// scheme://user:pass@host reads scheme://user:***@host, and
// scheme://token@host (a user alone is often a token) reads
// scheme://***@host. What does not parse is cut the same way, at the last
// '@'; a URL without one is returned as it is.
func URL(raw string) string {
	p := strings.TrimSpace(raw)
	at := strings.LastIndex(p, "@")
	if at < 0 {
		return raw
	}
	start := strings.Index(p, "://") + len("://")
	if start < len("://") || start > at {
		start = 0
	}
	shown := "***"
	if u, err := url.Parse(p); err == nil && u.User != nil {
		if _, hasPassword := u.User.Password(); hasPassword {
			shown = url.User(u.User.Username()).String() + ":***"
		}
	}
	return p[:start] + shown + p[at:]
}
