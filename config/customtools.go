package config

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Custom tool rules (tools-and-approval.md §8).
const (
	// MaxCustomTools is the most customTools entries one declaration holds.
	MaxCustomTools = 16
	// MaxCustomDescription bounds description and a record's response.
	MaxCustomDescription = 1024
	// DefaultCustomTimeout bounds a command tool that sets no timeoutMs.
	DefaultCustomTimeout = 30 * time.Second
	// MaxCustomTimeout is the longest timeoutMs accepted.
	MaxCustomTimeout = 300 * time.Second
	// DefaultRecordResponse is what a record tool answers by default.
	DefaultRecordResponse = "Recorded."
	maxSchemaDepth        = 32
)

// Custom tool handler types.
const (
	HandlerRecord  = "record"
	HandlerCommand = "command"
)

// CustomTool is one validated customTools entry.
type CustomTool struct {
	Name        string
	Description string
	// Parameters is the argument schema reduced to the supported subset
	// (always "type":"object").
	Parameters json.RawMessage
	Handler    CustomHandler
	// Canonical is the entry as validated, re-encoded: two declarations of
	// one name are the same tool exactly when these are equal.
	Canonical string
}

// CustomHandler is what a custom tool does.
type CustomHandler struct {
	// Type is HandlerRecord or HandlerCommand.
	Type string
	// Response is a record tool's answer.
	Response string
	// Command is a command tool's argv, run without a shell.
	Command []string
	// Timeout bounds a command tool.
	Timeout time.Duration
}

// ParseCustomToolsJSON validates a customTools value; where names it in
// messages (`config.customTools`). Null or absent is no tools.
func ParseCustomToolsJSON(raw json.RawMessage, where string) ([]CustomTool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var v any
	if err := decodeJSON(raw, &v); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %v: %w", where, err, ErrInvalid)
	}
	return ParseCustomTools(v, where)
}

// ParseCustomTools validates a decoded customTools value (numbers as
// json.Number). Every error names the field at fault.
func ParseCustomTools(v any, where string) ([]CustomTool, error) {
	if v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s must be an array of tool definitions, not %s: %w", where, kind(v), ErrInvalid)
	}
	if len(arr) > MaxCustomTools {
		return nil, fmt.Errorf("%s declares %d tools; at most %d are allowed: %w", where, len(arr), MaxCustomTools, ErrInvalid)
	}
	out := make([]CustomTool, 0, len(arr))
	seen := map[string]int{}
	for i, e := range arr {
		at := fmt.Sprintf("%s[%d]", where, i)
		t, err := parseCustomTool(e, at)
		if err != nil {
			return nil, err
		}
		if j, dup := seen[t.Name]; dup {
			return nil, fmt.Errorf("%s.name %q is already declared by %s[%d]: %w", at, t.Name, where, j, ErrInvalid)
		}
		seen[t.Name] = i
		out = append(out, t)
	}
	return out, nil
}

// validCustomName is ^[a-z][a-z0-9_]{1,63}$.
func validCustomName(s string) bool {
	if len(s) < 2 || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, c := range []byte(s[1:]) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func parseCustomTool(v any, at string) (CustomTool, error) {
	fail := func(format string, args ...any) (CustomTool, error) {
		return CustomTool{}, fmt.Errorf("%s%s: %w", at, fmt.Sprintf(format, args...), ErrInvalid)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fail(" must be an object {name, description, parameters, handler}, not %s", kind(v))
	}
	name, ok := obj["name"].(string)
	switch {
	case !ok:
		return fail(".name must be a string, not %s", kind(obj["name"]))
	case strings.HasPrefix(name, "mcp_"):
		return fail(".name %q starts with mcp_, which is reserved for MCP tools", name)
	case !validCustomName(name):
		return fail(".name %s must match ^[a-z][a-z0-9_]{1,63}$ (a lower-case letter, then 1-63 lower-case letters, digits or _)", shown(name))
	}
	desc, ok := obj["description"].(string)
	if !ok {
		return fail(".description must be a string, not %s", kind(obj["description"]))
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(desc)); n < 1 || n > MaxCustomDescription {
		return fail(".description must be 1-%d characters, got %d", MaxCustomDescription, n)
	}
	params := map[string]any{"type": "object", "properties": map[string]any{}}
	if p, has := obj["parameters"]; has && p != nil {
		po, isObj := p.(map[string]any)
		if !isObj {
			return fail(".parameters must be a JSON Schema object, not %s", kind(p))
		}
		if po["type"] != "object" {
			return fail(`.parameters.type must be "object"`)
		}
		sp, err := reduceSchema(po, at+".parameters", 0)
		if err != nil {
			return CustomTool{}, err
		}
		params = sp
	}
	hv, has := obj["handler"]
	if !has || hv == nil {
		return fail(".handler is required: {\"type\":\"record\"} or {\"type\":\"command\",\"command\":[…]}")
	}
	ho, ok := hv.(map[string]any)
	if !ok {
		return fail(".handler must be an object, not %s", kind(hv))
	}
	var h CustomHandler
	switch typ, _ := ho["type"].(string); typ {
	case HandlerRecord:
		h = CustomHandler{Type: HandlerRecord, Response: DefaultRecordResponse}
		if r, has := ho["response"]; has && r != nil {
			s, isStr := r.(string)
			if !isStr {
				return fail(".handler.response must be a string, not %s", kind(r))
			}
			if n := utf8.RuneCountInString(s); n > MaxCustomDescription {
				return fail(".handler.response must be at most %d characters, got %d", MaxCustomDescription, n)
			}
			h.Response = s
		}
	case HandlerCommand:
		h = CustomHandler{Type: HandlerCommand, Timeout: DefaultCustomTimeout}
		argv, isArr := ho["command"].([]any)
		if !isArr || len(argv) == 0 {
			return fail(".handler.command must be a non-empty array of strings (the program and its arguments; no shell runs it)")
		}
		for i, a := range argv {
			s, isStr := a.(string)
			if !isStr || s == "" || strings.ContainsRune(s, 0) {
				return fail(".handler.command[%d] must be a non-empty string without NUL bytes", i)
			}
			h.Command = append(h.Command, s)
		}
		if tv, has := ho["timeoutMs"]; has && tv != nil {
			n, isNum := tv.(json.Number)
			ms, err := n.Int64()
			if !isNum || err != nil || ms < 1 || ms > MaxCustomTimeout.Milliseconds() {
				return fail(".handler.timeoutMs must be a whole number of milliseconds between 1 and %d", MaxCustomTimeout.Milliseconds())
			}
			h.Timeout = time.Duration(ms) * time.Millisecond
		}
	default:
		return fail(`.handler.type must be "record" or "command", got %s`, shown(fmt.Sprint(ho["type"])))
	}
	if h.Type == HandlerCommand {
		closeObjects(params)
	}
	ps, err := json.Marshal(params)
	if err != nil {
		return fail(".parameters: %v", err)
	}
	t := CustomTool{Name: name, Description: strings.TrimSpace(desc), Parameters: ps, Handler: h}
	canon, err := json.Marshal(struct {
		Name, Description string
		Parameters        json.RawMessage
		Handler           CustomHandler
	}{t.Name, t.Description, t.Parameters, t.Handler})
	if err != nil {
		return fail(": %v", err)
	}
	t.Canonical = string(canon)
	return t, nil
}

// closeObjects makes every object of a command tool's reduced schema
// that lists its properties (none, when the tool declares no parameters)
// take only those, unless its author said additionalProperties: the
// program gets the arguments whole, as JSON, and a key the schema never
// named ("target" beside an enum-bound "env") would reach it past the
// check an auto-approval relies on. An untyped property, reduced to an
// open object, stays open as its author left it. Record tools, which run
// nothing, take what the schema admits.
func closeObjects(node map[string]any) {
	props, listed := node["properties"].(map[string]any)
	if listed {
		if _, said := node["additionalProperties"]; !said {
			node["additionalProperties"] = false
		}
	}
	for _, p := range props {
		if sub, ok := p.(map[string]any); ok {
			closeObjects(sub)
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if sub, ok := node[k].(map[string]any); ok {
			closeObjects(sub)
		}
	}
}

// schemaTypes are the types a custom tool's arguments may have.
var schemaTypes = map[string]bool{"string": true, "number": true, "integer": true, "boolean": true, "null": true, "object": true, "array": true}

// reduceSchema keeps the supported subset of a JSON Schema node: type,
// description, enum, properties, required, additionalProperties, items and
// the numeric and length bounds. Unknown keywords are dropped; a node with
// neither type nor enum becomes an empty object schema, which rejects
// scalars.
func reduceSchema(node map[string]any, at string, depth int) (map[string]any, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("%s nests deeper than %d levels: %w", at, maxSchemaDepth, ErrInvalid)
	}
	out := map[string]any{}
	if d, ok := node["description"].(string); ok {
		out["description"] = d
	}
	if t, has := node["type"]; has {
		switch tv := t.(type) {
		case string:
			if !schemaTypes[tv] {
				return nil, fmt.Errorf("%s.type %s is not one of string, number, integer, boolean, null, object, array: %w", at, shown(tv), ErrInvalid)
			}
		case []any:
			for i, e := range tv {
				if s, ok := e.(string); !ok || !schemaTypes[s] {
					return nil, fmt.Errorf("%s.type[%d] is not one of string, number, integer, boolean, null, object, array: %w", at, i, ErrInvalid)
				}
			}
		default:
			return nil, fmt.Errorf("%s.type must be a string or an array of strings: %w", at, ErrInvalid)
		}
		out["type"] = t
	}
	if e, has := node["enum"]; has {
		arr, ok := e.([]any)
		if !ok || len(arr) == 0 {
			return nil, fmt.Errorf("%s.enum must be a non-empty array: %w", at, ErrInvalid)
		}
		out["enum"] = arr
	}
	if _, typed := out["type"]; !typed {
		if _, enum := out["enum"]; !enum {
			out["type"] = "object"
			out["properties"] = map[string]any{}
			out["additionalProperties"] = true // open, as its author left it
			return out, nil
		}
	}
	if p, has := node["properties"]; has {
		po, ok := p.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s.properties must be an object: %w", at, ErrInvalid)
		}
		props := map[string]any{}
		keys := make([]string, 0, len(po))
		for k := range po {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub, ok := po[k].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s.properties.%s must be a schema object: %w", at, shown(k), ErrInvalid)
			}
			r, err := reduceSchema(sub, at+".properties."+shown(k), depth+1)
			if err != nil {
				return nil, err
			}
			props[k] = r
		}
		out["properties"] = props
	}
	if r, has := node["required"]; has {
		arr, ok := r.([]any)
		if !ok {
			return nil, fmt.Errorf("%s.required must be an array of property names: %w", at, ErrInvalid)
		}
		for i, e := range arr {
			if _, isStr := e.(string); !isStr {
				return nil, fmt.Errorf("%s.required[%d] must be a string: %w", at, i, ErrInvalid)
			}
		}
		out["required"] = arr
	}
	if a, has := node["additionalProperties"]; has {
		switch av := a.(type) {
		case bool:
			out["additionalProperties"] = av
		case map[string]any:
			r, err := reduceSchema(av, at+".additionalProperties", depth+1)
			if err != nil {
				return nil, err
			}
			out["additionalProperties"] = r
		default:
			return nil, fmt.Errorf("%s.additionalProperties must be a boolean or a schema: %w", at, ErrInvalid)
		}
	}
	if it, has := node["items"]; has {
		io, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s.items must be a schema object: %w", at, ErrInvalid)
		}
		r, err := reduceSchema(io, at+".items", depth+1)
		if err != nil {
			return nil, err
		}
		out["items"] = r
	}
	for _, k := range []string{"minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"} {
		if v, has := node[k]; has {
			if _, ok := v.(json.Number); !ok {
				return nil, fmt.Errorf("%s.%s must be a number: %w", at, k, ErrInvalid)
			}
			out[k] = v
		}
	}
	return out, nil
}
