// Package pricing owns what a model call costs: the lookup that lets
// config overrides win over the model catalog's list prices (USD per 1M
// tokens, keyed `provider/model`), and the cost formula of providers.md §5.
// The prices themselves live in the catalog (package catalog), beside each
// model's window and limits.
package pricing

import (
	"math"
	"strings"

	"github.com/jazz-run/jazz/catalog"
	"github.com/jazz-run/jazz/messages"
)

// Price is what one model charges, in USD per 1M tokens. A nil field is an
// unknown price, which is not the same as a free one; a negative value counts
// as unknown too (models.dev uses them as placeholders).
type Price = catalog.Price

func val(v *float64) float64 {
	if catalog.Valid(v) {
		return *v
	}
	return 0
}

// Lookup finds the price of provider/model in the embedded catalog; see
// LookupIn.
func Lookup(provider, model string, overrides map[string]Price) (Price, bool) {
	return LookupIn(nil, provider, model, overrides)
}

// LookupIn finds the price of provider/model in cat (nil: the embedded
// snapshot). Overrides (keyed `provider/model`, usually config `pricing`)
// win field by field over the catalog. When the exact id is unknown, a
// dated snapshot id such as gpt-4o-2024-08-06 falls back to gpt-4o, and a
// local provider's `provider/*` entry prices every model it serves.
// OpenRouter `:free` models cost 0. known is false when neither an input
// nor an output price was found.
func LookupIn(cat *catalog.Catalog, provider, model string, overrides map[string]Price) (Price, bool) {
	provider = catalog.Normalize(provider)
	model = strings.TrimSpace(model)
	candidates := catalog.Candidates(provider, strings.ToLower(model))
	if exact := provider + "/" + model; exact != candidates[0] {
		candidates = append([]string{exact}, candidates...)
	}
	for _, key := range candidates {
		base, inTable := cat.Entry(key)
		over, overridden := overrides[key]
		if !inTable && !overridden {
			continue
		}
		p := base.Price.Over(over)
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

// Cost prices usage per providers.md §5, cache writes added: cr =
// min(cacheRead, prompt), cw = min(cacheWrite, prompt−cr); cost =
// (prompt−cr−cw)×input + cr×(cache_read, else input) + cw×(cache_write,
// else input) + completion×output, each per 1M tokens, rounded to 8
// decimals. The prompt counts every token read, cached or not (providers
// whose input count leaves the cache out, as Anthropic's does, are mapped
// so by their client). known is false when neither the input nor the
// output price is known; when only one is, the other counts as 0.
func Cost(p Price, u messages.Usage) (usd float64, known bool) {
	if !p.Known() {
		return 0, false
	}
	prompt := max(u.PromptTokens, 0)
	cr := min(max(u.CacheReadTokens, 0), prompt)
	cw := min(max(u.CacheWriteTokens, 0), prompt-cr)
	in := val(p.Input)
	readRate, writeRate := in, in
	if catalog.Valid(p.CacheRead) {
		readRate = *p.CacheRead
	}
	if catalog.Valid(p.CacheWrite) {
		writeRate = *p.CacheWrite
	}
	own := float64(prompt-cr-cw)*in/1e6 + float64(cr)*readRate/1e6 + float64(cw)*writeRate/1e6 +
		float64(max(u.CompletionTokens, 0))*val(p.Output)/1e6
	return Round8(own), true
}

// Round8 rounds a USD figure to 8 decimals, the precision costs are
// reported with (a run's own cost plus its children's).
func Round8(usd float64) float64 { return math.Round(usd*1e8) / 1e8 }
