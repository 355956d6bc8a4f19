package messages

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// Whatever string a model or a worker picks (dots, wildcards, spaces,
// control bytes, invalid UTF-8, nothing at all, megabytes), SubjectToken
// makes it exactly one literal NATS token, so a subject built from it has
// the scheme's tokens and no wildcard.
func TestSubjectTokenIsAlwaysOneLiteralToken(t *testing.T) {
	alphabet := []string{".", "*", ">", " ", "\t", "\r\n", "\x00", "\xff", "é", "$", "_", "-", "a", "Z", "9", "..", "\u2024", "\uff0e"}
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := []string{"", ".", "*", ">", " ", "a.b", "a.*.>", strings.Repeat(".", 1<<16), strings.Repeat("x", 1<<20)}
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := rng.IntN(12); n > 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		inputs = append(inputs, b.String())
	}
	for _, in := range inputs {
		tok := SubjectToken(in)
		if tok == "" {
			t.Fatalf("%q: empty token", in)
		}
		for i := 0; i < len(tok); i++ {
			c := tok[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				t.Fatalf("%q: token %q holds %q", in, tok, c)
			}
		}
		plain := []string{ApprovalDecidedSubject("R"), PolicySubject("R"), InputSignedSubject("R"), EventSubject("R", "T"), WorkTaskSubject("R")}
		for i, subj := range []string{ApprovalDecidedSubject(in), PolicySubject(in), InputSignedSubject(in), EventSubject(in, in), WorkTaskSubject(in)} {
			parts, want := strings.Split(subj, "."), strings.Split(plain[i], ".")
			if len(parts) != len(want) {
				t.Fatalf("%q: %q has %d tokens, %q %d", in, subj, len(parts), plain[i], len(want))
			}
			for j, p := range parts {
				if p == "" || p == "*" || p == ">" || want[j] != "R" && want[j] != "T" && p != want[j] {
					t.Fatalf("%q: %q has token %q where %q has %q", in, subj, p, plain[i], want[j])
				}
			}
		}
	}
}
