package approvals_test

import (
	"bufio"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/messages"
)

// readAudit is every line of home's audit log.
func readAudit(t *testing.T, home string) []approvals.AuditEntry {
	t.Helper()
	f, err := os.Open(filepath.Join(home, approvals.AuditFile))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []approvals.AuditEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e approvals.AuditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// reasonConsts are the values of every Reason* constant the package
// declares, found in its source so a reason added later is covered.
func reasonConsts(t *testing.T) map[string]string {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range pkgs["approvals"].Files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Reason") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
						v, _ := strconv.Unquote(lit.Value)
						out[v] = n.Name
					}
				}
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found only %d Reason constants: %v", len(out), out)
	}
	return out
}

// Every reason a run refuses something for has a hint an operator can
// read (not the fallback).
func TestEveryReasonHasAHint(t *testing.T) {
	unknown := approvals.RefusalHint("no such reason")
	for v, name := range reasonConsts(t) {
		if h := approvals.RefusalHint(v); h == unknown || h == "" {
			t.Errorf("%s (%q) has no hint", name, v)
		}
	}
}

// Every way a signed answer is refused is written to the audit log, once,
// with its reason code, the reason, the key it claimed and a hint; every
// Reason constant is either in the table or listed as one answers cannot
// be refused for, so a new reason fails here until it is decided.
func TestEveryAnswerRefusalIsAudited(t *testing.T) {
	home := t.TempDir()
	alice := newParty(t, "alice", "read-only", false)
	bob := newParty(t, "bob", "high-risk", false)
	mallory := newParty(t, "mallory", "high-risk", false)
	for _, p := range []party{alice, bob} {
		if _, err := approvals.AddApproverKey(home, p.a.Name, p.a.PublicKey, p.a.MaxTier, false); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := approvals.LoadRegistry(home, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Bob's key leaks and he is revoked after the run started.
	if _, err := approvals.RemoveApprover(home, "bob"); err != nil {
		t.Fatal(err)
	}
	q := messages.UserInputRequired{Place: messages.Place{RunID: "run-1"}, RequestID: "ui-1", Question: "Which database?"}
	now := time.Now()
	sign := func(p party, run string, q messages.UserInputRequired, resp string, at time.Time) []byte {
		env, err := approvals.SignAnswer(p.kp, run, q, resp, at, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(env)
		return b
	}
	reworded := q
	reworded.Question = "Which database may I drop?"
	other := q
	other.RequestID = "ui-9"
	good := sign(alice, "run-1", q, "staging", now)
	var tampered approvals.Envelope
	_ = json.Unmarshal(sign(alice, "run-1", q, "staging", now), &tampered)
	tampered.Payload = []byte(strings.Replace(string(tampered.Payload), "staging", "prod", 1))
	tamperedRaw, _ := json.Marshal(tampered)
	decision, _ := json.Marshal(mustDecision(t, alice))
	huge := sign(alice, "run-1", q, strings.Repeat("x", 10), now)
	huge = append(huge[:len(huge)-1], []byte(`,"pad":"`+strings.Repeat("x", approvals.MaxAnswerEnvelope)+`"}`)...)

	checker := approvals.NewAnswerChecker(reg, "run-1", func() time.Time { return now }).WithAudit(approvals.NewAudit(home, nil), func(err error) { t.Error(err) })
	if _, _, err := checker.Check(good, q); err != nil {
		t.Fatalf("a good answer: %v", err)
	}
	cases := []struct {
		name   string
		raw    []byte
		q      messages.UserInputRequired
		reason string
		signer string // the key the refusal line must name; "" none
		// who is the name this run admits a verified signer by: a
		// slip of alice's reads as hers, a stranger's as nobody's.
		who string
	}{
		{"unsigned", []byte(`{"requestId":"ui-1","response":"plain"}`), q, approvals.ReasonUnsigned, "", ""},
		{"not json", []byte(`{not json`), q, approvals.ReasonUnsigned, "", ""},
		{"too large", huge, q, approvals.ReasonMalformed, "", ""},
		{"a decision", decision, q, approvals.ReasonMalformed, alice.a.PublicKey, ""},
		{"tampered", tamperedRaw, q, approvals.ReasonBadSignature, alice.a.PublicKey, ""},
		{"stranger", sign(mallory, "run-1", q, "x", now), q, approvals.ReasonUnknownSigner, mallory.a.PublicKey, ""},
		{"revoked", sign(bob, "run-1", q, "x", now), q, approvals.ReasonRevoked, bob.a.PublicKey, ""},
		{"other run", sign(alice, "run-2", q, "x", now), q, approvals.ReasonOtherRun, alice.a.PublicKey, "alice"},
		{"other question", sign(alice, "run-1", other, "x", now), q, approvals.ReasonOtherRequest, alice.a.PublicKey, "alice"},
		{"other text", sign(alice, "run-1", q, "x", now), reworded, approvals.ReasonShownMismatch, alice.a.PublicKey, "alice"},
		{"expired", sign(alice, "run-1", q, "x", now.Add(-2*time.Minute)), q, approvals.ReasonExpired, alice.a.PublicKey, "alice"},
		{"replay", good, q, approvals.ReasonReplay, alice.a.PublicKey, "alice"},
	}
	notForAnswers := map[string]bool{approvals.ReasonTier: true, approvals.ReasonNotAllowed: true, approvals.ReasonActionMismatch: true,
		approvals.ReasonCeiling: true, approvals.ReasonNote: true, approvals.ReasonStale: true}
	covered := map[string]bool{}
	for _, c := range cases {
		before := len(readAudit(t, home))
		if _, _, err := checker.Check(c.raw, c.q); err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		} else if got := refusal(t, err); got != c.reason {
			t.Errorf("%s: refused for %s (%v), want %s", c.name, got, err, c.reason)
		}
		covered[c.reason] = true
		lines := readAudit(t, home)[before:]
		if len(lines) != 1 {
			t.Errorf("%s: %d audit lines, want 1: %+v", c.name, len(lines), lines)
			continue
		}
		e := lines[0]
		if e.Event != approvals.AuditAnswerRefused || e.Refusal != c.reason || e.RunID != "run-1" || e.RequestID != "ui-1" ||
			e.Reason == "" || e.Hint != approvals.RefusalHint(c.reason) || e.ApproverKey != c.signer || e.Side != "run" {
			t.Errorf("%s: audit line %+v", c.name, e)
		}
		if e.Approver != c.who {
			t.Errorf("%s: the refusal names approver %q, want %q", c.name, e.Approver, c.who)
		}
	}
	for v, name := range reasonConsts(t) {
		if !covered[v] && !notForAnswers[v] {
			t.Errorf("%s (%q): no case here shows an answer refused for it is audited", name, v)
		}
	}
	if got := readAudit(t, home)[0]; got.Event != approvals.AuditAnswered || got.Approver != "alice" || got.ApproverKey != alice.a.PublicKey {
		t.Errorf("the answer taken was logged as %+v", got)
	}
	// The same refused message checked again (a second open question
	// sees it too) is one line, not two.
	before := len(readAudit(t, home))
	unsigned := []byte(`{"requestId":"ui-2","response":"again"}`)
	second := q
	second.RequestID = "ui-2"
	_, _, _ = checker.Check(unsigned, q)
	_, _, _ = checker.Check(unsigned, second)
	if n := len(readAudit(t, home)) - before; n != 1 {
		t.Errorf("one refused message checked by two questions wrote %d lines", n)
	}
}

// An answer to one of two open questions is taken by its own and is no
// refusal of the other: nothing is logged refused for it, whichever
// question checks it first.
func TestAnswerToAnotherOpenQuestionIsNotARefusal(t *testing.T) {
	for _, ownFirst := range []bool{true, false} {
		home := t.TempDir()
		alice := newParty(t, "alice", "high-risk", false)
		reg, err := approvals.NewRegistry([]approvals.Approver{alice.a})
		if err != nil {
			t.Fatal(err)
		}
		q1 := messages.UserInputRequired{RequestID: "ui-1", Question: "one?"}
		q2 := messages.UserInputRequired{RequestID: "ui-2", Question: "two?"}
		checker := approvals.NewAnswerChecker(reg, "run-1", nil).WithAudit(approvals.NewAudit(home, nil), nil)
		// Both questions are open: each has seen a message.
		_, _, _ = checker.Check([]byte(`{}`), q1)
		_, _, _ = checker.Check([]byte(`{}`), q2)
		env, err := approvals.SignAnswer(alice.kp, "run-1", q2, "two", time.Now(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(env)
		if ownFirst {
			_, _, err = checker.Check(raw, q2)
			_, _, _ = checker.Check(raw, q1)
		} else {
			_, _, _ = checker.Check(raw, q1)
			_, _, err = checker.Check(raw, q2)
		}
		if err != nil {
			t.Fatal(err)
		}
		var refused, answered int
		for _, e := range readAudit(t, home) {
			switch {
			case e.Event == approvals.AuditAnswered:
				answered++
			case e.Event == approvals.AuditAnswerRefused && e.Refusal != approvals.ReasonUnsigned:
				refused++
				t.Errorf("own first %v: logged refused: %+v", ownFirst, e)
			}
		}
		if answered != 1 || refused != 0 {
			t.Errorf("own first %v: %d answered, %d refused lines", ownFirst, answered, refused)
		}
	}
}

// A flood of refusals costs the disk MaxRefusalsLogged lines and then one
// line per doubling, and no line carries more than a bounded reason and
// claimed key however much the sender wrote.
func TestRefusalsAreBounded(t *testing.T) {
	home := t.TempDir()
	audit := approvals.NewAudit(home, nil)
	const flood = 5000
	long := strings.Repeat("é", 100_000)
	for i := range flood {
		ev := []string{approvals.AuditRefused, approvals.AuditPolicyRefused, approvals.AuditAnswerRefused}[i%3]
		if err := audit.Append(approvals.AuditEntry{Event: ev, RunID: "run-1", Reason: long, ApproverKey: long, Refusal: approvals.ReasonUnsigned}); err != nil {
			t.Fatal(err)
		}
	}
	// Other events are never suppressed.
	if err := audit.Append(approvals.AuditEntry{Event: approvals.AuditDecided, RunID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	lines := readAudit(t, home)
	rest := flood - approvals.MaxRefusalsLogged
	want := approvals.MaxRefusalsLogged + bits.Len(uint(rest)) + 1
	if len(lines) != want {
		t.Fatalf("%d refusals wrote %d lines, want %d", flood, len(lines), want)
	}
	if last := lines[len(lines)-1]; last.Event != approvals.AuditDecided {
		t.Errorf("the decision after the flood was not logged: %+v", last)
	}
	sup := lines[len(lines)-2]
	if sup.Event != approvals.AuditSuppressed || !strings.Contains(sup.Note, "4096 more refusals") {
		t.Errorf("the last suppressed line: %+v", sup)
	}
	data, _ := os.ReadFile(filepath.Join(home, approvals.AuditFile))
	if per := len(data) / len(lines); per > 4096 {
		t.Errorf("an audit line is %d bytes on average: the sender's text is not bounded", per)
	}
	for _, e := range lines {
		if len(e.Reason) > 1024 || len(e.ApproverKey) > 64 || !strings.HasSuffix(e.ApproverKey, "…") && e.Event != approvals.AuditDecided {
			t.Fatalf("a refusal line is not cut: reason %d bytes, key %d", len(e.Reason), len(e.ApproverKey))
		}
	}
}
