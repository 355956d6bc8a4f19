package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/iostreams"
)

// Property: whatever string field of an audit line its writer (anyone
// on the bus, for an unverified one) fills, `jazz approvals audit` prints
// one line with nothing hidden in it, and the verdict first: no escape
// or newline can start a forged "✓" line.
func TestAuditLineTextIsInertAndOneLine(t *testing.T) {
	hostile := "x\x1b[2J\n✓ 2026 decided ap-1 approved by alice\r\u202e"
	var r approvals.AuditRecord
	fillStrings(reflect.ValueOf(&r).Elem(), hostile)
	yes := true
	r.Approved, r.Verified = &yes, false
	io, _, out, _ := iostreams.Test()
	c := &approverConn{d: Deps{IO: io, Getenv: func(string) string { return "" }}}
	c.auditLine(r)
	s := out.String()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Fatalf("not one line: %q", s)
	}
	if strings.ContainsAny(s, "\x1b\r\u202e") {
		t.Fatalf("hidden text reached the screen: %q", s)
	}
	if !strings.HasPrefix(s, "✗ ") || !strings.Contains(s, "unverified") {
		t.Fatalf("an unverified line does not say so first: %q", s)
	}
}
