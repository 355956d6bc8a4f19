package tools

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// OpenObject is the schema of a tool whose own is not shown (yet): any
// object.
const OpenObject = `{"type":"object"}`

// MaxSummary is the longest one-line summary of a deferred tool.
const MaxSummary = 120

// Summary is the first line of a description, at most MaxSummary
// characters: what the model sees of a deferred tool.
func Summary(desc string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(desc), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) <= MaxSummary {
		return line
	}
	r := []rune(line)
	return string(r[:MaxSummary-1]) + "…"
}

// Deferral records which deferred tools of a run have had their schemas
// loaded by search_tools; from the next model request on, those are sent
// in full (mcp.md §4). The agent reads it while building each request and
// search_tools writes it from its handler, hence the lock.
type Deferral struct {
	mu     sync.Mutex
	loaded map[string]bool
}

// NewDeferral is an empty record.
func NewDeferral() *Deferral { return &Deferral{loaded: map[string]bool{}} }

// Load marks names as loaded.
func (d *Deferral) Load(names ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range names {
		d.loaded[n] = true
	}
}

// Loaded says whether name's schema has been loaded.
func (d *Deferral) Loaded(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.loaded[name]
}
