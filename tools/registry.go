package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Registry is an immutable set of tools, looked up by name. Schemas are
// compiled on first use, so a run pays only for the tools it calls.
type Registry struct {
	byName  map[string]*entry
	ordered []string
}

type entry struct {
	tool    Tool
	once    sync.Once
	schema  *schema
	compErr error
}

// ErrDuplicate is returned when two tools share a name.
var ErrDuplicate = errors.New("duplicate tool name")

// NewRegistry builds a registry; names must be unique.
func NewRegistry(ts ...Tool) (*Registry, error) {
	r := &Registry{byName: make(map[string]*entry, len(ts))}
	for _, t := range ts {
		if _, dup := r.byName[t.Name]; dup {
			return nil, fmt.Errorf("register tool %q: %w", t.Name, ErrDuplicate)
		}
		r.byName[t.Name] = &entry{tool: t}
		r.ordered = append(r.ordered, t.Name)
	}
	return r, nil
}

// Lookup finds a tool by name, hidden twins included.
func (r *Registry) Lookup(name string) (*Tool, bool) {
	e, ok := r.byName[name]
	if !ok {
		return nil, false
	}
	return &e.tool, true
}

// Names lists every registered name in registration order.
func (r *Registry) Names() []string { return append([]string(nil), r.ordered...) }

// Subset returns a registry holding only the named tools that exist, plus
// the hidden twins of the pairs among them: an agent's effective tool set.
// Unknown names are dropped silently, as the spec has it.
func (r *Registry) Subset(names []string) *Registry {
	want := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		e, ok := r.byName[n]
		if !ok || e.tool.Hidden {
			continue
		}
		want[n] = true
		if e.tool.Twin != "" {
			want[e.tool.Twin] = true
		}
	}
	out := &Registry{byName: make(map[string]*entry, len(want))}
	for _, n := range r.ordered {
		if want[n] {
			out.byName[n] = r.byName[n] // shares the compiled schema
			out.ordered = append(out.ordered, n)
		}
	}
	held := out.Visible()
	for _, n := range out.ordered {
		if e := out.byName[n]; e.tool.Narrow != nil {
			t := e.tool.Narrow(held)
			t.Name = n
			out.byName[n] = &entry{tool: t}
		}
	}
	return out
}

// Without returns a registry minus the named tools (and their twins).
func (r *Registry) Without(names ...string) *Registry {
	drop := map[string]bool{}
	for _, n := range names {
		drop[n] = true
		if e, ok := r.byName[n]; ok && e.tool.Twin != "" {
			drop[e.tool.Twin] = true
		}
	}
	keep := make([]string, 0, len(r.ordered))
	for _, n := range r.ordered {
		if !drop[n] {
			keep = append(keep, n)
		}
	}
	return r.Subset(keep)
}

// Visible lists what the model is told: visible tools only, sorted by name
// so requests are stable.
func (r *Registry) Visible() []*Tool {
	out := make([]*Tool, 0, len(r.ordered))
	for _, n := range r.ordered {
		if t := &r.byName[n].tool; !t.Hidden {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Validate checks args (a JSON object) against the tool's schema and
// returns the issues as `<path>: <message>` joined by "; ".
func (r *Registry) Validate(name string, args json.RawMessage) error {
	e, ok := r.byName[name]
	if !ok {
		return fmt.Errorf("unknown tool %q", name)
	}
	if e.tool.Passthrough {
		return nil
	}
	e.once.Do(func() {
		if len(e.tool.Schema) == 0 {
			return
		}
		sc, err := compileSchema(e.tool.Schema)
		if err != nil {
			e.compErr = fmt.Errorf("tool %s: bad schema: %w", name, err)
			return
		}
		e.schema = sc
	})
	if e.compErr != nil {
		return e.compErr
	}
	if e.schema == nil {
		return nil
	}
	inst, err := decodeArgs(args)
	if err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	var found []string
	e.schema.validate(inst, "", &found)
	if len(found) > 0 {
		return errors.New(strings.Join(found, "; "))
	}
	return nil
}
