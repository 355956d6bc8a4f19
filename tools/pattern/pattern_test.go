package pattern

import (
	"errors"
	"strings"
	"testing"
)

func TestCompile(t *testing.T) {
	tests := []struct {
		name, pattern string
		yes, no       []string
	}{
		{"empty matches all", "  ", []string{"", "x"}, nil},
		{"substring trimmed", "  main ", []string{"main.go", "domain"}, []string{"Main.go", "mai"}},
		{"glob chars are literal", "*.ts", []string{"a*.ts"}, []string{"a.ts"}},
		{"regex unanchored", `re:\.go$`, []string{"a.go"}, []string{"a.gox"}},
		{"regex anchored", `re:^test_\d+`, []string{"test_12.py"}, []string{"my_test_1"}},
		{"js unicode escape", `re:\u0041`, []string{"xAx"}, []string{"a"}},
		{"js unicode brace", `re:\u{1F600}`, []string{"😀"}, []string{"x"}},
		{"js any incl newline", `re:a[^]b`, []string{"a\nb"}, []string{"ab"}},
		{"named group", `re:(?<n>ab)+`, []string{"abab"}, []string{"ba"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Compile(tt.pattern)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tt.pattern, err)
			}
			for _, s := range tt.yes {
				if !m(s) {
					t.Errorf("%q should match %q", tt.pattern, s)
				}
			}
			for _, s := range tt.no {
				if m(s) {
					t.Errorf("%q should not match %q", tt.pattern, s)
				}
			}
		})
	}
}

func TestCompileRejects(t *testing.T) {
	long := strings.Repeat("a", MaxRegexLen+1)
	tests := []struct {
		name, pattern, want string
		rejected            bool
	}{
		{"nested plus", "re:(a+)+", `Regex "(a+)+" rejected: contains nested quantifiers that risk catastrophic backtracking. Use a literal string or simplify the pattern.`, true},
		{"nested star brace", "re:(x*){2,}", `Regex "(x*){2,}" rejected: contains nested quantifiers that risk catastrophic backtracking. Use a literal string or simplify the pattern.`, true},
		{"inner group quantified", "re:((ab)+c)*", "", true},
		{"deep inner quantifier", "re:(a(b*)c)+", "", true},
		{"too long", "re:" + long, "", true},
		{"bad syntax", "re:(abc", `Invalid regex "(abc": missing closing ): ` + "`(abc`", false},
		{"lookahead unsupported", "re:a(?=b)", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(tt.pattern)
			if err == nil {
				t.Fatalf("Compile(%q) succeeded", tt.pattern)
			}
			var rej *RejectedError
			var inv *InvalidError
			if tt.rejected != errors.As(err, &rej) {
				t.Fatalf("rejected = %v, err %v", !tt.rejected, err)
			}
			if !tt.rejected && !errors.As(err, &inv) {
				t.Fatalf("want *InvalidError, got %T", err)
			}
			if tt.want != "" && err.Error() != tt.want {
				t.Errorf("message\n got %q\nwant %q", err.Error(), tt.want)
			}
		})
	}
}

func TestUnsafeAllows(t *testing.T) {
	for _, body := range []string{`a+b*`, `(ab)+`, `(a|b)*`, `[(a+)]+`, `\(a+\)+`, `(a+)b`, `(a+)?`, `(a{2})x`} {
		if Unsafe(body) {
			t.Errorf("Unsafe(%q) = true, want false", body)
		}
	}
}
