package personas

import (
	"fmt"
	"path"
	"strings"
)

// A persona's tools and deny entries name tools as a person writes them,
// not as the registry spells them: " write_file", "Write_File", the
// hidden twin "execute_write_file", "mcp_github" for a server's tools,
// "git_*". An entry that matched none of them exactly used to deny
// nothing, so a child kept the very tool its persona withholds. Matches
// reads every such spelling, and the caller (actors.ChildRegistry)
// withholds a pair when a deny entry names either half: a deny is read
// as widely as it can be meant, never narrower.

// entryRune is what a tools or deny entry may hold: every tool name is
// ASCII letters, digits, '_', '-' and '.' (MCP names are sanitised to
// that), and '*' and '?' are patterns. Anything else (a non-ASCII
// look-alike, an inner space, a control character) can name no tool, so
// a file holding it is refused rather than read as denying nothing.
func entryRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '_' || r == '-' || r == '.' || r == '*' || r == '?'
}

// checkEntry says what is wrong with one tools or deny entry.
func checkEntry(e string) error {
	e = strings.TrimSpace(e)
	if e == "" {
		return fmt.Errorf("is empty")
	}
	for _, r := range e {
		if !entryRune(r) {
			return fmt.Errorf("%q holds %q: a tool name is ASCII letters, digits, '_', '-' or '.', with '*' or '?' as patterns", e, r)
		}
	}
	if _, err := path.Match(strings.ToLower(e), ""); err != nil {
		return fmt.Errorf("%q is not a pattern: %v", e, err)
	}
	return nil
}

// Validate checks every entry of the persona's tools and deny lists; a
// persona that fails it narrows nothing safely and must not be used.
func (p Persona) Validate() error {
	for i, e := range p.Tools {
		if err := checkEntry(e); err != nil {
			return fmt.Errorf("tools[%d] %w", i, err)
		}
	}
	for i, e := range p.Deny {
		if err := checkEntry(e); err != nil {
			return fmt.Errorf("deny[%d] %w", i, err)
		}
	}
	return nil
}

// Matches reports whether the entry names the tool called name: the same
// name ignoring case and surrounding space, a '*'/'?' pattern that
// matches it, or an MCP server category (mcp_<server> or
// mcp_<server>_*) it belongs to. An entry Validate refuses matches
// nothing here; the caller must not use such a persona (a deny it cannot
// read would deny nothing).
func Matches(entry, name string) bool {
	e, n := strings.ToLower(strings.TrimSpace(entry)), strings.ToLower(name)
	if e == "" || checkEntry(e) != nil {
		return false
	}
	if e == n {
		return true
	}
	if strings.HasPrefix(e, "mcp_") {
		if cat := strings.TrimSuffix(e, "_*"); strings.HasPrefix(n, cat+"_") {
			return true
		}
	}
	if strings.ContainsAny(e, "*?") {
		ok, _ := path.Match(e, n)
		return ok
	}
	return false
}

// Denies reports whether any deny entry names the tool called name.
func (p Persona) Denies(name string) bool {
	for _, e := range p.Deny {
		if Matches(e, name) {
			return true
		}
	}
	return false
}

// Allows reports whether the persona's tools list names the tool called
// name; a persona without a list allows every tool (of the ceiling).
func (p Persona) Allows(name string) bool {
	if p.Tools == nil {
		return true
	}
	for _, e := range p.Tools {
		if Matches(e, name) {
			return true
		}
	}
	return false
}
