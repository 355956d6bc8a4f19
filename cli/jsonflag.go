package cli

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The --json contract (headless-run.md §3): with --json on the command
// line, stdout is exactly one JSON object whatever else is wrong (unknown
// flags, bad values, an unknown command, a missing config). Cobra has not
// parsed anything when those errors arise, so the line is scanned here
// with the same flag definitions cobra would use, to tell a --json flag
// from a flag's value ("--agent --json") or an argument after "--".

// selected is the command that args select: root when they name none
// (or an unknown one).
func selected(root *cobra.Command, args []string) *cobra.Command {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return root
	}
	return cmd
}

// jsonRequested reports whether args carry --json as a flag: the last
// --json or --json=<v> before "--" that is not another flag's value. A
// value that is not a boolean counts as asking for JSON: the caller is a
// program expecting an envelope.
func jsonRequested(root *cobra.Command, args []string) bool {
	cmd := selected(root, args)
	want := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return want
		case strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a[2:], "=")
			if name == "json" {
				want = true
				if hasValue {
					if b, err := strconv.ParseBool(value); err == nil {
						want = b
					}
				}
				continue
			}
			if f := lookupFlag(cmd, name); !hasValue && takesValue(f) {
				i++ // the next word is this flag's value
			}
		case len(a) > 1 && a[0] == '-':
			// A cluster of shorthands: the first that takes a value
			// takes the rest of the word, or the next word.
			for j := 1; j < len(a); j++ {
				if f := lookupShorthand(cmd, a[j:j+1]); takesValue(f) {
					if j == len(a)-1 {
						i++
					}
					break
				}
			}
		}
	}
	return want
}

func takesValue(f *pflag.Flag) bool { return f != nil && f.NoOptDefVal == "" }

// lookupFlag finds a flag of cmd or one it inherits.
func lookupFlag(cmd *cobra.Command, name string) *pflag.Flag {
	for c := cmd; c != nil; c = c.Parent() {
		if f := c.Flags().Lookup(name); f != nil {
			return f
		}
		if f := c.PersistentFlags().Lookup(name); f != nil {
			return f
		}
	}
	return nil
}

func lookupShorthand(cmd *cobra.Command, s string) *pflag.Flag {
	for c := cmd; c != nil; c = c.Parent() {
		if f := c.Flags().ShorthandLookup(s); f != nil {
			return f
		}
		if f := c.PersistentFlags().ShorthandLookup(s); f != nil {
			return f
		}
	}
	return nil
}

// helpAsked reports whether args ask for help, which is an answer (on
// stderr), not a failure.
func helpAsked(root *cobra.Command, args []string) bool {
	if cmd := selected(root, args); cmd.Name() == "help" {
		return true
	}
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--help" || a == "-h" {
			return true
		}
	}
	return false
}

// jsonBeforeCommand reports whether a --json word comes before the word
// naming a command, where cobra takes it for an unknown global flag.
func jsonBeforeCommand(root *cobra.Command, args []string) bool {
	seen := false
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--json" || strings.HasPrefix(a, "--json=") {
			seen = true
			continue
		}
		for _, c := range root.Commands() {
			if c.Name() == a || c.HasAlias(a) {
				return seen
			}
		}
	}
	return seen
}
