package shellguard

import (
	"slices"
	"strings"
	"testing"
)

// parseOpts reads words the way getopt_long does, but only the options
// it is given, in full.
func TestParseOpts(t *testing.T) {
	s := opts("-a -n= -M=? -L=+ --all --lines= --color=?")
	cases := []struct {
		args     string
		opts     string // name=value, space-separated
		operands string
		refused  string // part of the reason, when refused
	}{
		{args: "-an5 f", opts: "-a -n=5", operands: "f"},
		{args: "-a -n 5 f", opts: "-a -n=5", operands: "f"},
		{args: "-n -o f", opts: "-n=-o", operands: "f"}, // the value is the next word, whatever it is
		{args: "--lines=3 --lines 4", opts: "--lines=3 --lines=4"},
		{args: "--color f", opts: "--color", operands: "f"}, // optional: only glued
		{args: "--color=never", opts: "--color=never"},
		{args: "-Mx -M y", opts: "-M=x -M", operands: "y"},
		{args: "-La 2 f", opts: "-L=2 -a", operands: "f"}, // tree: the next word, and the cluster goes on
		{args: "f -- -a --lines", operands: "f -a --lines"},
		{args: "- f", operands: "- f"},
		{args: "--lin=3", refused: "not on its list"}, // an abbreviation is never resolved
		{args: "--al", refused: "not on its list"},
		{args: "-ao f", refused: "-o"},
		{args: "--all=x", refused: "takes none"},
		{args: "-n", refused: "without its value"},
	}
	for _, tc := range cases {
		t.Run(tc.args, func(t *testing.T) {
			p, why := parseOpts(s, strings.Fields(tc.args))
			if tc.refused != "" {
				if !strings.Contains(why, tc.refused) {
					t.Fatalf("reason %q, want it to mention %q", why, tc.refused)
				}
				return
			}
			if why != "" {
				t.Fatalf("refused: %s", why)
			}
			var got []string
			for _, o := range p.opts {
				if o.hasValue {
					got = append(got, o.name+"="+o.value)
				} else {
					got = append(got, o.name)
				}
			}
			if !slices.Equal(got, strings.Fields(tc.opts)) || !slices.Equal(p.operands, strings.Fields(tc.operands)) {
				t.Fatalf("opts %q operands %q", got, p.operands)
			}
		})
	}
	first := s
	first.optionsFirst = true
	if _, why := parseOpts(first, []string{"prog", "-a"}); why == "" {
		t.Fatal("optionsFirst accepts an option after an operand")
	}
}
