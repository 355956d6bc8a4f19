package telemetry

import (
	"regexp"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
)

// String limits per captureContent (telemetry.md §5).
const (
	// MaxAttrLen is the cut for every string attribute when content capture is off.
	MaxAttrLen = 256
	// MaxContentLen is the cut when content capture is on.
	MaxContentLen = 8192
)

// IsContentKey reports whether an attribute key names content that is only
// exported when captureContent is on: its last dot-separated segment is, in
// any case, one of telemetry.md §5's keys. Matching the segment rather than
// whole keys means a field added later cannot leak by default.
func IsContentKey(key string) bool {
	last := key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		last = key[i+1:]
	}
	switch strings.ToLower(last) {
	case "prompt", "prompts", "completion", "content", "messages", "input",
		"output", "text", "arguments", "result", "usermessage", "lastusermessage":
		return true
	}
	return false
}

// trustedKeys are the string attributes whose values jazz itself chooses
// (ids it mints, names from code and config, fixed vocabularies): with
// captureContent off they are the only strings exported. Every other
// string is dropped, so text a model wrote (a path, a command, an
// argument, a tool name it made up) cannot reach a collector through a
// field added later, whatever its key. The values themselves are made
// safe where they are set: a model-chosen tool name becomes "unknown", a
// tool-call id a keyed fingerprint, an error text its category.
var trustedKeys = map[string]bool{
	"jazz.event.type": true, "jazz.outcome": true, "jazz.error": true,
	"jazz.run.id": true, "jazz.agent.id": true, "jazz.conversation.id": true, "jazz.parentAgent.id": true,
	"jazz.agent.name": true, "jazz.model": true,
	"jazz.toolName": true, "jazz.toolCallId": true, "jazz.riskTier": true, "jazz.executed": true,
	"jazz.approval": true, "jazz.decidedBy": true, "jazz.remember": true, "jazz.finishReason": true, "jazz.context.rung": true,
	"gen_ai.system": true, "gen_ai.request.model": true, "gen_ai.response.model": true, "gen_ai.operation.name": true,
	// metric dimensions
	"outcome": true, "decided_by": true, "tool": true, "model": true, "system": true, "type": true,
}

// redactMargin is how much longer than the export limit a string is kept
// until it is exported: the exporter replaces the run's secrets before it
// cuts (see scrubber), so a secret that starts before the limit must still
// be whole then; a PEM private key block fits.
const redactMargin = 16 << 10

// keepLen is how many characters of a string a span holds until export.
func keepLen(capture bool) int {
	if capture {
		return MaxContentLen + redactMargin
	}
	return MaxAttrLen + redactMargin
}

// filter is the content policy every attribute passes on its way to a
// span or a metric. With captureContent off: content keys are dropped,
// and so is every string not under a trusted key. Strings (and string
// slices) are cut to keepLen, in a copy of their own, so a model's 10 MB
// text is not held by the span until export. Secrets are replaced, and
// strings cut to the export limit, where they leave the process (see
// scrubber). kv itself is left untouched.
func filter(capture bool, kv []attribute.KeyValue) []attribute.KeyValue {
	limit := keepLen(capture)
	out := make([]attribute.KeyValue, 0, len(kv))
	for _, a := range kv {
		if !a.Valid() {
			continue
		}
		key := string(a.Key)
		if !capture && IsContentKey(key) {
			continue
		}
		switch a.Value.Type() {
		case attribute.STRING:
			if !capture && !trustedKeys[key] {
				continue
			}
			if s := a.Value.AsString(); len(s) > limit {
				a = a.Key.String(cut(s, limit))
			}
		case attribute.STRINGSLICE:
			if !capture && !trustedKeys[key] {
				continue
			}
			ss := a.Value.AsStringSlice()
			for i, s := range ss {
				ss[i] = cut(s, limit)
			}
			a = a.Key.StringSlice(ss)
		}
		out = append(out, a)
	}
	return out
}

// wordRe is a value from a fixed vocabulary or an identifier a provider
// or config sets (an outcome, a finish reason, a model name). Compiled on
// first use: the counted repeat makes a big program, too dear for the
// init of every jazz process.
var wordRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+\-]{0,127}$`) })

// word returns s when it is such a value, else fallback: a free text in a
// field meant for one word is not exported as it is.
func word(s, fallback string) string {
	if wordRe().MatchString(s) {
		return s
	}
	return fallback
}

// cut returns s limited to n characters (runes), never splitting one. A
// cut string is a copy: a slice of s would keep all of s in memory.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return strings.Clone(s[:pos])
		}
		i++
	}
	return s
}
