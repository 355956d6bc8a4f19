package shellguard

import "strings"

// keyWrappers are skipped in front of the binary when forming a key.
var keyWrappers = map[string]bool{
	"sudo": true, "env": true, "npx": true, "bunx": true, "pnpx": true,
	"nohup": true, "nice": true, "time": true,
}

// CommandKey is the allowlist key of one simple command given as its words
// (quotes already removed), per tools-and-approval.md §6: leading `X=Y`
// tokens and the wrappers sudo env npx bunx pnpx nohup nice time are
// skipped; the key is the binary plus the first later token that does not
// start with `-`, or the binary alone. If nothing is left after skipping,
// the key is the words joined and trimmed.
//
//	git diff --stat            → git diff
//	ls -la                     → ls
//	rm -rf /tmp/foo            → rm /tmp/foo
//	NODE_ENV=test sudo npm test → npm test
//	npx jest --watch           → jest
func CommandKey(words []string) string {
	i := 0
	for i < len(words) && (isAssignWord(words[i]) || keyWrappers[words[i]]) {
		i++
	}
	if i == len(words) {
		return strings.TrimSpace(strings.Join(words, " "))
	}
	bin := words[i]
	for _, w := range words[i+1:] {
		if !strings.HasPrefix(w, "-") {
			return bin + " " + w
		}
	}
	return bin
}

// isAssignWord is an `X=Y` token: it has `=` and does not start with `-`.
func isAssignWord(w string) bool {
	return !strings.HasPrefix(w, "-") && strings.Contains(w, "=")
}

// MatchKey reports whether an allowlist entry covers key: equal, or key
// continues entry at a word boundary. It is never a raw prefix match:
// `git status` covers `git status --short` but not `git statusfoo`.
func MatchKey(key, entry string) bool {
	entry = strings.TrimSpace(entry)
	if entry == "" {
		return false
	}
	return key == entry || strings.HasPrefix(key, entry+" ")
}

// SplitWords splits a command on spaces the way the spec's key rule does:
// single or double quotes group words and are stripped. It is a display
// helper for a single simple command; approval decisions use the real
// parse in AllowlistApproves.
func SplitWords(command string) []string {
	var words []string
	var cur strings.Builder
	in := false
	var quote rune
	for _, r := range command {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}
