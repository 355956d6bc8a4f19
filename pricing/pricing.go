// Package pricing owns what a model call costs: an embedded snapshot of list
// prices in USD per 1M tokens, keyed `provider/model`, the lookup that lets
// config overrides win over it, and the cost formula of providers.md §5.
//
// The snapshot is parsed on the first Lookup, not at init, so a process that
// never prices anything never pays for it.
package pricing

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/jazz-run/jazz/messages"
)

//go:embed prices.json
var pricesJSON []byte

// Price is what one model charges, in USD per 1M tokens. A nil field is an
// unknown price, which is not the same as a free one; a negative value counts
// as unknown too (models.dev uses them as placeholders).
type Price struct {
	Input     *float64 `json:"input,omitempty"`
	Output    *float64 `json:"output,omitempty"`
	CacheRead *float64 `json:"cache_read,omitempty"`
}

// Known reports whether p can price a call at all: the input or the output
// price is known (providers.md §5).
func (p Price) Known() bool { return valid(p.Input) || valid(p.Output) }

// over returns p with every known field of o laid over it.
func (p Price) over(o Price) Price {
	if valid(o.Input) {
		p.Input = o.Input
	}
	if valid(o.Output) {
		p.Output = o.Output
	}
	if valid(o.CacheRead) {
		p.CacheRead = o.CacheRead
	}
	return p
}

func valid(v *float64) bool { return v != nil && *v >= 0 && !math.IsNaN(*v) && !math.IsInf(*v, 0) }

func val(v *float64) float64 {
	if valid(v) {
		return *v
	}
	return 0
}

// snapshot parses the embedded table once, on first use. It is the only
// package-level value and it never changes after that first call.
var snapshot = sync.OnceValues(func() (map[string]Price, error) {
	var doc struct {
		Prices map[string]Price `json:"prices"`
	}
	if err := json.Unmarshal(pricesJSON, &doc); err != nil {
		return nil, fmt.Errorf("pricing: embedded prices.json: %w", err)
	}
	return doc.Prices, nil
})

// Lookup finds the price of provider/model. Overrides (keyed
// `provider/model`, usually config `pricing`) win field by field over the
// snapshot. When the exact id is unknown, a dated snapshot id such as
// gpt-4o-2024-08-06 falls back to gpt-4o, and a local provider's `provider/*`
// entry prices every model it serves. OpenRouter `:free` models cost 0.
// known is false when neither an input nor an output price was found.
func Lookup(provider, model string, overrides map[string]Price) (Price, bool) {
	provider = strings.ToLower(strings.TrimSpace(provider))
	model = strings.TrimSpace(model)
	if provider == "google" {
		provider = "gemini"
	}
	table, err := snapshot()
	if err != nil {
		table = nil // a broken snapshot only means "unknown", never a failed run
	}
	candidates := []string{provider + "/" + model}
	if lm := strings.ToLower(model); lm != model {
		candidates = append(candidates, provider+"/"+lm)
	}
	if undated, ok := cutDate(strings.ToLower(model)); ok {
		candidates = append(candidates, provider+"/"+undated)
	}
	candidates = append(candidates, provider+"/*")

	for _, key := range candidates {
		base, inTable := table[key]
		over, overridden := overrides[key]
		if !inTable && !overridden {
			continue
		}
		p := base.over(over)
		if p.Known() {
			return p, true
		}
	}
	if provider == "openrouter" && strings.HasSuffix(model, ":free") {
		zero := 0.0
		return Price{Input: &zero, Output: &zero, CacheRead: &zero}, true
	}
	return Price{}, false
}

// Cost prices usage per providers.md §5: cr = min(cacheRead, prompt); cost =
// (prompt−cr)×input + cr×(cache_read, else input) + completion×output, each
// per 1M tokens, rounded to 8 decimals. known is false when neither the input
// nor the output price is known; when only one is, the other counts as 0.
func Cost(p Price, u messages.Usage) (usd float64, known bool) {
	if !p.Known() {
		return 0, false
	}
	prompt := max(u.PromptTokens, 0)
	cr := min(max(u.CacheReadTokens, 0), prompt)
	in := val(p.Input)
	cacheRate := in
	if valid(p.CacheRead) {
		cacheRate = *p.CacheRead
	}
	own := float64(prompt-cr)*in/1e6 + float64(cr)*cacheRate/1e6 + float64(max(u.CompletionTokens, 0))*val(p.Output)/1e6
	return Round8(own), true
}

// Round8 rounds a USD figure to 8 decimals, the precision costs are
// reported with (a run's own cost plus its children's).
func Round8(usd float64) float64 { return math.Round(usd*1e8) / 1e8 }

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
