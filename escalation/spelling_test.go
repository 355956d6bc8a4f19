package escalation

import "testing"

// TestNamesKnownUnderInvisibleCharacters: HFS+ (macOS) ignores
// zero-width and direction characters when it compares names, so
// ".g\u200cit" opens .git there, as ".GIT" does on any case-insensitive
// file system. A name that is a protected one once such characters are
// dropped is judged as that name.
func TestNamesKnownUnderInvisibleCharacters(t *testing.T) {
	for _, n := range []string{".g\u200cit", "\u200d.git", ".GI\u200eT", "AGENTS\ufeff.md", ".ja\u202ezz", ".agent\u206as"} {
		if Name(n) == "" {
			t.Errorf("Name(%q) = \"\", want it known", n)
		}
	}
	homes := []string{"/home/u"}
	for _, p := range []string{"/home/u/\u200c.bashrc", "/home/u/\ufeff.ssh/authorized_keys", "/w/d/HE\u200cAD"} {
		if Why(p, homes) == "" {
			t.Errorf("Why(%q) = \"\", want it a person's", p)
		}
	}
	for _, n := range []string{".gitx", "git", "AGENTS.mdx", ".g-it"} {
		if why := Name(n); why != "" {
			t.Errorf("Name(%q) = %q, want \"\"", n, why)
		}
	}
}
