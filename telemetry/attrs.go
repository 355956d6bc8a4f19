package telemetry

import (
	"strings"

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

// filter is the one gate every attribute passes through on its way to a
// span or a metric: content keys are dropped unless capture is on, strings
// (and string slices) are cut. kv itself is left untouched.
func filter(capture bool, kv []attribute.KeyValue) []attribute.KeyValue {
	limit := MaxAttrLen
	if capture {
		limit = MaxContentLen
	}
	out := make([]attribute.KeyValue, 0, len(kv))
	for _, a := range kv {
		if !a.Valid() {
			continue
		}
		if !capture && IsContentKey(string(a.Key)) {
			continue
		}
		switch a.Value.Type() {
		case attribute.STRING:
			if s := a.Value.AsString(); len(s) > limit {
				a = a.Key.String(cut(s, limit))
			}
		case attribute.STRINGSLICE:
			ss := a.Value.AsStringSlice()
			changed := false
			for i, s := range ss {
				if len(s) > limit {
					ss[i] = cut(s, limit)
					changed = true
				}
			}
			if changed {
				a = a.Key.StringSlice(ss)
			}
		}
		out = append(out, a)
	}
	return out
}

// cut returns s limited to n characters (runes), never splitting one.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
