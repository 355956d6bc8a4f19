package app

import (
	"regexp"
	"testing"
)

// TestRunIDsAreDistinct: runs of one agent started in the same
// millisecond get distinct ids (their bus subjects and traces are keyed
// on them).
func TestRunIDsAreDistinct(t *testing.T) {
	shape := regexp.MustCompile(`^run-agent-1-[0-9]+-[0-9a-f]{8}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := NewRunID("agent-1")
		if !shape.MatchString(id) || seen[id] {
			t.Fatalf("run id %q: malformed or repeated", id)
		}
		seen[id] = true
	}
}
