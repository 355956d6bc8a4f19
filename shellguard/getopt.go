package shellguard

import (
	"fmt"
	"strings"
)

// arity says whether an option takes a value, and how.
//
// Getting an arity wrong is only safe in one direction: an option marked
// as taking no value (or only a glued one) when the program would take
// the next word makes the checker look at that word as an option or
// operand of its own, which is stricter. The reverse would let a value
// hide the next word from the check, so reqArg and nextArg are used only
// where the program's documentation says the value is mandatory.
type arity uint8

const (
	noArg   arity = iota // -v, --verbose
	optArg               // -M50%, --color=auto: a value only when glued
	reqArg               // -n 5, -n5, --lines 5, --lines=5
	nextArg              // tree's -L 2: always the next word, the cluster goes on
)

// optSpec is the option grammar of one program: every option it accepts
// in an inspect-only call. Any other option word makes the call not
// read-only. Long options match exactly: GNU getopt and git would accept
// an unambiguous prefix (`--o` for `--output`), so a prefix is refused
// rather than resolved, and an exact name always means that option.
type optSpec struct {
	short map[byte]arity
	long  map[string]arity
	// numeric accepts -NUM (head -5, git log -3, grep -2).
	numeric bool
	// optionsFirst refuses an option word after the first operand:
	// for programs whose first operand is a program text (sed, awk), a
	// word that is an option under GNU argument permutation is a file
	// under POSIXLY_CORRECT, and the other way round.
	optionsFirst bool
}

// opts builds an optSpec from a list like "-a -n= -M=? --all --lines=":
// `=` marks a mandatory value, `=?` an optional glued one, `=+` a value
// that is always the next word (tree).
func opts(list string) optSpec {
	s := optSpec{short: map[byte]arity{}, long: map[string]arity{}}
	for _, f := range strings.Fields(list) {
		name, a := f, noArg
		switch {
		case strings.HasSuffix(f, "=?"):
			name, a = strings.TrimSuffix(f, "=?"), optArg
		case strings.HasSuffix(f, "=+"):
			name, a = strings.TrimSuffix(f, "=+"), nextArg
		case strings.HasSuffix(f, "="):
			name, a = strings.TrimSuffix(f, "="), reqArg
		}
		switch {
		case strings.HasPrefix(name, "--"):
			s.long[name[2:]] = a
		case len(name) == 2 && name[0] == '-':
			s.short[name[1]] = a
		default:
			panic("shellguard: bad option spec " + f)
		}
	}
	return s
}

// with returns s extended by more options.
func (s optSpec) with(list string) optSpec {
	more := opts(list)
	out := optSpec{short: map[byte]arity{}, long: map[string]arity{}, numeric: s.numeric, optionsFirst: s.optionsFirst}
	for k, v := range s.short {
		out.short[k] = v
	}
	for k, v := range s.long {
		out.long[k] = v
	}
	for k, v := range more.short {
		out.short[k] = v
	}
	for k, v := range more.long {
		out.long[k] = v
	}
	return out
}

// option is one parsed option: its name as written in the spec ("-n",
// "--lines") and its value, if it took one.
type option struct {
	name     string
	value    string
	hasValue bool
}

// parsedArgs is a call's arguments split by its option grammar.
type parsedArgs struct {
	opts     []option
	operands []string
}

func (p parsedArgs) has(names ...string) bool {
	for _, o := range p.opts {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

// parseOpts splits args (binary excluded, every word literal) the way
// GNU getopt_long does, permuting operands and options, but accepting
// only the options of s. It returns why the words are not an
// inspect-only call, or "".
func parseOpts(s optSpec, args []string) (parsedArgs, string) {
	var p parsedArgs
	i := 0
	// value gives o the glued value if there is one, else the next word.
	value := func(o *option, glued string, isGlued bool, word string) string {
		switch {
		case isGlued:
			o.value, o.hasValue = glued, true
		case i+1 < len(args):
			i++
			o.value, o.hasValue = args[i], true
		default:
			return fmt.Sprintf("%q without its value", word)
		}
		return ""
	}
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			p.operands = append(p.operands, args[i+1:]...)
			return p, ""
		case a == "-" || !strings.HasPrefix(a, "-"):
			p.operands = append(p.operands, a)
			continue
		}
		if s.optionsFirst && len(p.operands) > 0 {
			return p, fmt.Sprintf("the option %q after an operand", a)
		}
		if s.numeric && isDigits(a[1:]) {
			p.opts = append(p.opts, option{name: "-NUM", value: a[1:], hasValue: true})
			continue
		}
		if strings.HasPrefix(a, "--") {
			name, val, glued := strings.Cut(a[2:], "=")
			ar, ok := s.long[name]
			if !ok {
				return p, fmt.Sprintf("the option %q, which is not on its list of read-only options", a)
			}
			o := option{name: "--" + name}
			switch ar {
			case noArg:
				if glued {
					return p, fmt.Sprintf("a value for %q, which takes none", "--"+name)
				}
			case optArg:
				o.value, o.hasValue = val, glued
			case reqArg, nextArg:
				if why := value(&o, val, glued, a); why != "" {
					return p, why
				}
			}
			p.opts = append(p.opts, o)
			continue
		}
		// A cluster of short options: -abc, -n5, -n 5.
		for j := 1; j < len(a); j++ {
			c := a[j]
			ar, ok := s.short[c]
			if !ok {
				return p, fmt.Sprintf("the option -%c (in %q), which is not on its list of read-only options", c, a)
			}
			o := option{name: "-" + string(c)}
			rest := a[j+1:]
			switch ar {
			case noArg:
				p.opts = append(p.opts, o)
				continue
			case optArg:
				o.value, o.hasValue = rest, rest != ""
			case reqArg:
				if why := value(&o, rest, rest != "", a); why != "" {
					return p, why
				}
			case nextArg:
				if why := value(&o, "", false, a); why != "" {
					return p, why
				}
				p.opts = append(p.opts, o)
				continue
			}
			p.opts = append(p.opts, o)
			break
		}
	}
	return p, ""
}
