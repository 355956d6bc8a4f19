package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// schema is the subset of JSON Schema that tool arguments use: type,
// properties, required, additionalProperties, items, enum, const, anyOf,
// oneOf, minimum, maximum, minLength, maxLength, minItems, maxItems.
// Unknown keywords (description, default, …) are ignored. It is compiled
// in microseconds, where a general-purpose validator's package set-up
// costs every jazz invocation milliseconds.
type schema struct {
	types      []string
	properties map[string]*schema
	required   []string
	// additional: nil = allowed; a schema = each extra property must match.
	additional  *schema
	noAdditonal bool
	items       *schema
	enum        []any
	constVal    any
	hasConst    bool
	anyOf       []*schema
	oneOf       []*schema
	minimum     *float64
	maximum     *float64
	minLength   *int
	maxLength   *int
	minItems    *int
	maxItems    *int
}

// compileSchema parses a JSON Schema document into a schema.
func compileSchema(doc json.RawMessage) (*schema, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	return compileNode(v, "")
}

func compileNode(v any, at string) (*schema, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return &schema{}, nil
		}
		return &schema{types: []string{"__never__"}}, nil
	case map[string]any:
		s := &schema{}
		for k, val := range x {
			var err error
			switch k {
			case "type":
				switch t := val.(type) {
				case string:
					s.types = []string{t}
				case []any:
					for _, e := range t {
						if str, ok := e.(string); ok {
							s.types = append(s.types, str)
						}
					}
				}
			case "properties":
				m, ok := val.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%sproperties: not an object", at)
				}
				s.properties = map[string]*schema{}
				for name, sub := range m {
					if s.properties[name], err = compileNode(sub, at+name+"."); err != nil {
						return nil, err
					}
				}
			case "required":
				for _, e := range asSlice(val) {
					if str, ok := e.(string); ok {
						s.required = append(s.required, str)
					}
				}
			case "additionalProperties":
				if b, ok := val.(bool); ok {
					s.noAdditonal = !b
				} else if s.additional, err = compileNode(val, at); err != nil {
					return nil, err
				}
			case "items":
				if s.items, err = compileNode(val, at+"[]."); err != nil {
					return nil, err
				}
			case "enum":
				s.enum = asSlice(val)
			case "const":
				s.constVal, s.hasConst = val, true
			case "anyOf", "oneOf":
				var list []*schema
				for _, e := range asSlice(val) {
					sub, err := compileNode(e, at)
					if err != nil {
						return nil, err
					}
					list = append(list, sub)
				}
				if k == "anyOf" {
					s.anyOf = list
				} else {
					s.oneOf = list
				}
			case "minimum":
				s.minimum = num(val)
			case "maximum":
				s.maximum = num(val)
			case "minLength":
				s.minLength = intp(val)
			case "maxLength":
				s.maxLength = intp(val)
			case "minItems":
				s.minItems = intp(val)
			case "maxItems":
				s.maxItems = intp(val)
			}
		}
		return s, nil
	}
	return nil, fmt.Errorf("%s: a schema must be an object or a boolean", strings.TrimSuffix(at, "."))
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func num(v any) *float64 {
	if n, ok := v.(json.Number); ok {
		if f, err := n.Float64(); err == nil {
			return &f
		}
	}
	return nil
}

func intp(v any) *int {
	if f := num(v); f != nil {
		i := int(*f)
		return &i
	}
	return nil
}

// validate checks an instance decoded with UseNumber and appends issues
// as "path: message".
func (s *schema) validate(v any, path string, issues *[]string) {
	add := func(format string, a ...any) {
		p := path
		if p == "" {
			p = "(root)"
		}
		*issues = append(*issues, p+": "+fmt.Sprintf(format, a...))
	}
	if len(s.types) > 0 && !s.typeMatches(v) {
		add("expected %s, got %s", strings.Join(s.types, " or "), jsonType(v))
		return
	}
	if s.hasConst && !equalJSON(v, s.constVal) {
		add("must be %s", render(s.constVal))
	}
	if len(s.enum) > 0 {
		ok := false
		for _, e := range s.enum {
			if equalJSON(v, e) {
				ok = true
				break
			}
		}
		if !ok {
			vals := make([]string, len(s.enum))
			for i, e := range s.enum {
				vals[i] = render(e)
			}
			add("must be one of %s", strings.Join(vals, ", "))
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for _, r := range s.required {
			if _, ok := x[r]; !ok {
				add("missing required property %q", r)
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub, known := s.properties[k]
			switch {
			case known:
				sub.validate(x[k], join(path, k), issues)
			case s.noAdditonal:
				add("unknown property %q", k)
			case s.additional != nil:
				s.additional.validate(x[k], join(path, k), issues)
			}
		}
	case []any:
		if s.minItems != nil && len(x) < *s.minItems {
			add("must have at least %d item(s)", *s.minItems)
		}
		if s.maxItems != nil && len(x) > *s.maxItems {
			add("must have at most %d item(s)", *s.maxItems)
		}
		if s.items != nil {
			for i, e := range x {
				s.items.validate(e, join(path, strconv.Itoa(i)), issues)
			}
		}
	case string:
		n := utf8.RuneCountInString(x)
		if s.minLength != nil && n < *s.minLength {
			if *s.minLength == 1 {
				add("must not be empty")
			} else {
				add("must be at least %d characters", *s.minLength)
			}
		}
		if s.maxLength != nil && n > *s.maxLength {
			add("must be at most %d characters", *s.maxLength)
		}
	case json.Number:
		f, _ := x.Float64()
		if s.minimum != nil && f < *s.minimum {
			add("must be >= %s", fmtNum(*s.minimum))
		}
		if s.maximum != nil && f > *s.maximum {
			add("must be <= %s", fmtNum(*s.maximum))
		}
	}
	if len(s.anyOf) > 0 {
		s.alternatives(v, path, issues, s.anyOf, false)
	}
	if len(s.oneOf) > 0 {
		s.alternatives(v, path, issues, s.oneOf, true)
	}
}

// alternatives checks anyOf/oneOf. When no branch matches, the issues of
// the branch whose const-valued properties the instance matches are
// reported (a discriminated union reads naturally), else a summary.
func (s *schema) alternatives(v any, path string, issues *[]string, alts []*schema, exactlyOne bool) {
	matches := 0
	var best []string
	for _, alt := range alts {
		var sub []string
		alt.validate(v, path, &sub)
		if len(sub) == 0 {
			matches++
			continue
		}
		if best == nil && alt.discriminates(v) {
			best = sub
		}
	}
	p := path
	if p == "" {
		p = "(root)"
	}
	switch {
	case matches == 0 && best != nil:
		*issues = append(*issues, best...)
	case matches == 0:
		*issues = append(*issues, p+": does not match any of the allowed shapes")
	case exactlyOne && matches > 1:
		*issues = append(*issues, p+": matches more than one of the allowed shapes")
	}
}

// discriminates reports whether v carries the const values this branch
// requires, i.e. v was meant to be this branch.
func (s *schema) discriminates(v any) bool {
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	found := false
	for name, p := range s.properties {
		if !p.hasConst {
			continue
		}
		if !equalJSON(obj[name], p.constVal) {
			return false
		}
		found = true
	}
	return found
}

func (s *schema) typeMatches(v any) bool {
	actual := jsonType(v)
	for _, t := range s.types {
		if t == actual || (t == "number" && actual == "integer") {
			return true
		}
	}
	return false
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number:
		// 1.0 is an integer, as JSON Schema has it.
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) {
			return "integer"
		}
		return "number"
	}
	return "unknown"
}

func equalJSON(a, b any) bool {
	if an, ok := a.(json.Number); ok {
		if bn, ok := b.(json.Number); ok {
			af, _ := an.Float64()
			bf, _ := bn.Float64()
			return af == bf
		}
		return false
	}
	ab, err1 := json.Marshal(a)
	bb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ab, bb)
}

func render(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}
