package shellguard

import (
	"errors"
	"fmt"
	"iter"
	"regexp"
	"strings"
	"sync"

	"github.com/jazz-run/jazz/secrets"
)

// MaxEnvAllowlist is the most names an envAllowlist may hold.
const MaxEnvAllowlist = 32

// allowName is the shape of an envAllowlist entry.
var allowName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`) })

// secretVar says whether a variable is hidden from children unless
// allowlisted: by its name (shell-safety.md §4's rule, widened in
// secrets.SecretName), by what its value looks like (a URL with userinfo,
// an Authorization-style header, a key-shaped token, a PEM key), or
// because its value holds a secret the run knows (known: a provider key,
// the config's, the agent's, the bus URL's), whatever the name and shape.
// A nil known knows nothing.
func secretVar(name, val string, known *secrets.Redactor) bool {
	return secrets.SecretName(name) || secrets.SecretValue(val) || known.Contains(val)
}

// ErrEnvAllowlist is wrapped by every ValidateEnvAllowlist error.
var ErrEnvAllowlist = errors.New("invalid envAllowlist")

// ValidateEnvAllowlist checks an agent's envAllowlist: at most 32 names,
// each an upper-case variable name of at most 64 characters.
func ValidateEnvAllowlist(names []string) error {
	if len(names) > MaxEnvAllowlist {
		return fmt.Errorf("%w: %d names given, at most %d are allowed", ErrEnvAllowlist, len(names), MaxEnvAllowlist)
	}
	for _, n := range names {
		if !allowName().MatchString(n) {
			return fmt.Errorf("%w: %q is not a variable name of the form ^[A-Z][A-Z0-9_]{0,63}$ (upper-case letter first, then upper-case letters, digits or _, at most 64 characters)", ErrEnvAllowlist, n)
		}
	}
	return nil
}

// baseVar is one variable every child gets: the parent's value, else def
// (no variable at all when both are empty).
type baseVar struct {
	name, def string
}

// SanitizedEnv builds a child's environment from the parent's (KEY=VALUE
// entries) per shell-safety.md §4: the base variables first (parent value
// or default; GIT_TERMINAL_PROMPT forced to 0; PWD defaults to cwd), then
// every other parent variable except secret ones (by name, by value
// shape, or holding a value known tells: secretVar) not in allowlist, and
// names starting with SSH_ even if allowlisted. A base variable whose
// value holds a known secret gets its default. The allowlist only
// un-hides variables the parent has; names in it that are not valid
// variable names are ignored (ValidateEnvAllowlist reports them).
//
// Every program jazz starts for the model gets its environment from here
// or from WithoutSecrets, with the run's known secrets
// (secrets.Set.Redactor): the shell runner, custom command tools, MCP
// stdio servers, git and the read tools' grep.
func SanitizedEnv(parent []string, allowlist []string, cwd string, known *secrets.Redactor) []string {
	vals := make(map[string]string, len(parent))
	var order []string
	for _, kv := range parent {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if _, dup := vals[name]; !dup {
			order = append(order, name)
		}
		vals[name] = val
	}
	user := vals["USER"]
	if user == "" {
		user = "jazz"
	}
	base := []baseVar{
		{"PATH", "/usr/local/bin:/usr/bin:/bin"},
		{"HOME", ""},
		{"USER", user},
		{"LOGNAME", user},
		{"SHELL", "/bin/sh"},
		{"LANG", "en_US.UTF-8"},
		{"LC_ALL", "C"},
		{"LC_CTYPE", "UTF-8"},
		{"TERM", "xterm-256color"},
		{"PWD", cwd},
		{"TMPDIR", "/tmp"},
		{"XDG_RUNTIME_DIR", ""},
		{"GIT_PAGER", "cat"},
		{"GIT_TERMINAL_PROMPT", "0"},
	}
	out := make([]string, 0, len(base)+len(order))
	isBase := make(map[string]bool, len(base))
	for _, b := range base {
		isBase[b.name] = true
		v := vals[b.name]
		if v == "" || b.name == "GIT_TERMINAL_PROMPT" || known.Contains(v) {
			v = b.def
		}
		if v != "" {
			out = append(out, b.name+"="+v)
		}
	}
	allowed := make(map[string]bool, len(allowlist))
	for _, n := range allowlist {
		if allowName().MatchString(n) {
			allowed[n] = true
		}
	}
	for _, name := range order {
		switch {
		case isBase[name], strings.HasPrefix(name, "SSH_"):
			continue
		case secretVar(name, vals[name], known) && !allowed[name]:
			continue
		}
		out = append(out, name+"="+vals[name])
	}
	return out
}

// WithoutSecrets is parent minus every secret variable (secretVar: by
// name, value shape, or a value known holds) and every SSH_ one,
// otherwise unchanged: the environment of git and of the grep and find
// children, which need the user's locale and PATH as they are but none of
// jazz's credentials.
func WithoutSecrets(parent []string, known *secrets.Redactor) []string {
	out := make([]string, 0, len(parent))
	for _, kv := range parent {
		name, val, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SSH_") || secretVar(name, val, known) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// LookupEnv returns the value of name in a KEY=VALUE list (the last entry
// wins, as in exec).
func LookupEnv(env []string, name string) (string, bool) {
	val, found := "", false
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			val, found = v, true
		}
	}
	return val, found
}

// changedEnv yields the NAME=value entries of env that start (the
// environment the call began with) does not hold with the same value:
// what the command itself set, which the run-time checks judge.
func changedEnv(env, start []string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		was := map[string]string{}
		for _, kv := range start {
			if name, val, ok := strings.Cut(kv, "="); ok {
				was[name] = val
			}
		}
		for _, kv := range env {
			name, val, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			if old, had := was[name]; had && old == val {
				continue
			}
			if !yield(name, val) {
				return
			}
		}
	}
}
