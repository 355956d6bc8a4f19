package config

import (
	"fmt"
	"sort"

	"github.com/jazz-run/jazz/internal/suggest"
)

// KnownKeys are the top-level keys of a jazz config that something
// reads: config.md §3 and the sections other packages take from Raw
// (mcpServers, workerPool, approvers, subagentTimeoutMs, modelCall), plus
// the original's keys jazz accepts and ignores (web_search,
// notifications).
var knownKeys = []string{
	"maxIterations", "maxSubagentIterations", "maxSubagentDepth", "maxRetries", "context",
	"autoApprovedCommands", "llm", "web_search", "output", "telemetry", "mcpServers",
	"storage", "logging", "pricing", "customTools", "notifications",
	"workerPool", "approvers", "subagentTimeoutMs", "modelCall",
}

// KnownKeys lists them (a fresh slice).
func KnownKeys() []string { return append([]string(nil), knownKeys...) }

// unknownKeys warns about each top-level key nothing reads, naming the
// nearest known one: a typo (autoApprovedCommand) must not make an
// allowlist vanish in silence. The key is kept in Raw all the same.
func unknownKeys(b *builder, doc map[string]any) {
	known := map[string]bool{}
	for _, k := range knownKeys {
		known[k] = true
	}
	var keys []string
	for k := range doc {
		if !known[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		hint := "; it is ignored"
		if near := suggest.Nearest(k, knownKeys); near != "" {
			hint = fmt.Sprintf("; did you mean %q? It is ignored", near)
		}
		b.warn(k, "is not a key jazz knows%s", hint)
	}
}
