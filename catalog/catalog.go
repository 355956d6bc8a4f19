// Package catalog knows what each model can take and what it costs: its
// context window, output limit, tool and reasoning support, input
// modalities and list prices in USD per 1M tokens (providers.md §4).
//
// The data is in models.dev's own shape (`{provider: {models: {id:
// {limit, cost, tool_call, …}}}}`): an embedded snapshot, which is always
// there, and optionally a fresher copy fetched from models.dev into
// JAZZ_HOME/cache (source.go), laid over it. Local servers report their own
// windows (local.go). Nothing here runs at package init: the snapshot is
// built on first use, from a table generated from snapshot.json.
package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
)

// DefaultWindow is the context window assumed for a model the catalog
// does not know (agent-loop.md §4): a placeholder, never a cap on a
// window the user pinned.
const DefaultWindow = 128_000

// maxWindow bounds any window a catalog may claim: a fetched file is
// data from the network, and a window past this is a broken mirror.
const maxWindow = 100_000_000

// Price is what one model charges, in USD per 1M tokens. A nil field is an
// unknown price, which is not the same as a free one; a negative value counts
// as unknown too (models.dev uses them as placeholders).
type Price struct {
	Input     *float64 `json:"input,omitempty"`
	Output    *float64 `json:"output,omitempty"`
	CacheRead *float64 `json:"cache_read,omitempty"`
	// CacheWrite is what writing the prompt cache costs per 1M tokens
	// (Anthropic charges 1.25× input); unknown counts as the input price.
	CacheWrite *float64 `json:"cache_write,omitempty"`
}

// Known reports whether p can price a call at all: the input or the output
// price is known (providers.md §5).
func (p Price) Known() bool { return Valid(p.Input) || Valid(p.Output) }

// Over returns p with every known field of o laid over it.
func (p Price) Over(o Price) Price {
	if Valid(o.Input) {
		p.Input = o.Input
	}
	if Valid(o.Output) {
		p.Output = o.Output
	}
	if Valid(o.CacheRead) {
		p.CacheRead = o.CacheRead
	}
	if Valid(o.CacheWrite) {
		p.CacheWrite = o.CacheWrite
	}
	return p
}

// Valid says whether a price field holds a usable figure: set, finite and
// not negative.
func Valid(v *float64) bool { return v != nil && *v >= 0 && !math.IsNaN(*v) && !math.IsInf(*v, 0) }

// Model is what the catalog knows about one model.
type Model struct {
	// ID is the model id as the provider spells it.
	ID string
	// Context is the context window in tokens, 0 when unknown; Output the
	// most tokens one answer may have, 0 when unknown.
	Context, Output int
	// Tools is tool-calling support (unknown counts as supported);
	// Temperature likewise. Reasoning is false when unknown.
	Tools, Temperature, Reasoning bool
	// Input lists the input modalities ("text", "image", …); unknown is
	// text only.
	Input []string
	Price Price
}

// Catalog is a set of models keyed by jazz's `provider/model` (lower
// case). It is immutable once built and safe for concurrent use.
type Catalog struct {
	models map[string]Model
	// byID finds a model id under any provider, for windows only (a
	// model served by an aggregator is the same model; its price is not).
	byID map[string]string
	base *Catalog
}

// wireModel is one model in models.dev's shape; only the fields jazz
// reads are declared.
type wireModel struct {
	ID          string   `json:"id"`
	ToolCall    *bool    `json:"tool_call"`
	Reasoning   *bool    `json:"reasoning"`
	Temperature *bool    `json:"temperature"`
	Cost        *Price   `json:"cost"`
	Limit       *wLimits `json:"limit"`
	Modalities  *struct {
		Input []string `json:"input"`
	} `json:"modalities"`
}

type wLimits struct {
	Context float64 `json:"context"`
	Output  float64 `json:"output"`
}

type wireProvider struct {
	Models map[string]json.RawMessage `json:"models"`
}

// ErrEmpty is a catalog document with no usable model in it.
var ErrEmpty = errors.New("the model catalog lists no models")

// Parse reads a document in models.dev's api.json shape. Providers are
// renamed to jazz's names (google → gemini, vercel → ai_gateway, …); a
// model entry that does not decode is skipped, not fatal, since one odd
// entry in a large public file must not cost every other model.
func Parse(data []byte) (*Catalog, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("model catalog: %w", err)
	}
	c := &Catalog{models: map[string]Model{}, byID: map[string]string{}}
	for provID, raw := range doc {
		var p wireProvider
		if json.Unmarshal(raw, &p) != nil {
			continue
		}
		prov := FromModelsDev(provID)
		for key, mraw := range p.Models {
			var w wireModel
			if json.Unmarshal(mraw, &w) != nil {
				continue
			}
			id := strings.TrimSpace(key)
			if id == "" {
				continue
			}
			c.models[prov+"/"+strings.ToLower(id)] = w.model(id)
		}
	}
	if len(c.models) == 0 {
		return nil, ErrEmpty
	}
	c.index()
	return c, nil
}

func (w wireModel) model(id string) Model {
	m := Model{ID: id, Tools: true, Temperature: true, Input: []string{"text"}}
	if w.ToolCall != nil {
		m.Tools = *w.ToolCall
	}
	if w.Temperature != nil {
		m.Temperature = *w.Temperature
	}
	if w.Reasoning != nil {
		m.Reasoning = *w.Reasoning
	}
	if w.Modalities != nil && len(w.Modalities.Input) > 0 {
		m.Input = w.Modalities.Input
	}
	if w.Cost != nil {
		m.Price = Price{}.Over(*w.Cost) // keeps only valid figures
	}
	if w.Limit != nil {
		m.Context, m.Output = tokens(w.Limit.Context), tokens(w.Limit.Output)
	}
	return m
}

// tokens turns a JSON figure into a window: whole, positive, bounded.
func tokens(f float64) int {
	if math.IsNaN(f) || f < 1 || f > maxWindow {
		return 0
	}
	return int(f)
}

// index builds byID: for each bare model id, the provider key that holds
// it, the first in sorted order so the choice is the same every run.
func (c *Catalog) index() {
	keys := make([]string, 0, len(c.models))
	for k := range c.models {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		_, id, _ := strings.Cut(k, "/")
		if _, seen := c.byID[id]; !seen && !strings.HasSuffix(k, "/*") {
			c.byID[id] = k
		}
	}
}

// snapshot builds the built-in table once, on first use. It is the only
// package-level value and it never changes after that first call. The
// table is snapshot.json compiled in (snapshot_table.go, checked by
// TestSnapshotTable): decoding the JSON cost every run most of a
// millisecond.
var snapshot = sync.OnceValues(func() (*Catalog, error) {
	c := &Catalog{models: snapshotTable(), byID: map[string]string{}}
	c.index()
	return c, nil
})

// usd is a price figure of the built-in table.
func usd(v float64) *float64 { return &v }

// Snapshot is the embedded catalog. A broken snapshot (a build mistake a
// test catches) is an empty catalog, never a failed run.
func Snapshot() *Catalog {
	c, err := snapshot()
	if err != nil {
		return &Catalog{models: map[string]Model{}, byID: map[string]string{}}
	}
	return c
}

// Over returns top with c beneath it: a lookup tries top first, then c.
// A nil top is c itself.
func (c *Catalog) Over(top *Catalog) *Catalog {
	if top == nil {
		return c
	}
	out := *top
	out.base = c
	return &out
}

// Len is how many models c itself holds (not its base).
func (c *Catalog) Len() int {
	if c == nil {
		return 0
	}
	return len(c.models)
}

// Lookup finds provider/model: the exact id (case-insensitive), then a
// dated snapshot id such as gpt-4o-2024-08-06 as gpt-4o, then the
// provider's `*` entry (a local provider's models are all free). A nil
// Catalog means the snapshot.
func (c *Catalog) Lookup(provider, model string) (Model, bool) {
	if c == nil {
		c = Snapshot()
	}
	provider = Normalize(provider)
	model = strings.ToLower(strings.TrimSpace(model))
	for _, key := range Candidates(provider, model) {
		if m, ok := c.Entry(key); ok {
			return m, true
		}
	}
	return Model{}, false
}

// Entry is the model under exactly key (`provider/model`, lower case) in
// the first layer that has it.
func (c *Catalog) Entry(key string) (Model, bool) {
	if c == nil {
		c = Snapshot()
	}
	for cat := c; cat != nil; cat = cat.base {
		if m, ok := cat.models[key]; ok {
			return m, true
		}
	}
	return Model{}, false
}

// Window is the context window of provider/model, 0 when no catalog layer
// knows it: the model's own entry, else the same model under the vendor an
// aggregator id names (openrouter's anthropic/claude-sonnet-4 is
// anthropic's claude-sonnet-4), else the same bare id under any provider.
func (c *Catalog) Window(provider, model string) int {
	if c == nil {
		c = Snapshot()
	}
	if m, ok := c.Lookup(provider, model); ok && m.Context > 0 {
		return m.Context
	}
	lm := strings.ToLower(strings.TrimSpace(model))
	if vendor, rest, ok := strings.Cut(lm, "/"); ok {
		if w := c.Window(vendorProvider(vendor), rest); w > 0 {
			return w
		}
		lm = rest
	}
	for cat := c; cat != nil; cat = cat.base {
		if key, ok := cat.byID[lm]; ok && cat.models[key].Context > 0 {
			return cat.models[key].Context
		}
	}
	return 0
}

// Candidates are the keys Lookup tries for provider/model, in order
// (both already normalized).
func Candidates(provider, model string) []string {
	out := []string{provider + "/" + model}
	if undated, ok := cutDate(model); ok {
		out = append(out, provider+"/"+undated)
	}
	return append(out, provider+"/*")
}

// Normalize is a provider name as the catalog keys it: trimmed, lower
// case, the old name google as gemini.
func Normalize(provider string) string {
	p := strings.ToLower(strings.TrimSpace(provider))
	if p == "google" {
		return "gemini"
	}
	return p
}

// modelsDevNames maps models.dev provider ids to jazz's where they differ.
func modelsDevNames() map[string]string {
	return map[string]string{"google": "gemini", "vercel": "ai_gateway", "fireworks-ai": "fireworks"}
}

// FromModelsDev is jazz's name for a models.dev provider id.
func FromModelsDev(id string) string {
	id = strings.ToLower(strings.TrimSpace(id))
	if n, ok := modelsDevNames()[id]; ok {
		return n
	}
	return id
}

// vendorProvider maps the vendor prefix of an aggregator's model id
// (x-ai/grok-4, google/gemini-2.5-pro) to the provider that serves it.
func vendorProvider(vendor string) string {
	switch vendor {
	case "x-ai":
		return "xai"
	case "google":
		return "gemini"
	case "mistralai":
		return "mistral"
	case "moonshot":
		return "moonshotai"
	}
	return vendor
}

// cutDate strips a -YYYY-MM-DD snapshot suffix (gpt-4o-2024-08-06).
func cutDate(model string) (string, bool) {
	const suffix = len("-2006-01-02")
	if len(model) <= suffix {
		return model, false
	}
	tail := model[len(model)-suffix:]
	for i, c := range []byte(tail) {
		switch i {
		case 0, 5, 8:
			if c != '-' {
				return model, false
			}
		default:
			if c < '0' || c > '9' {
				return model, false
			}
		}
	}
	return model[:len(model)-suffix], true
}
