package ctxmgr

import "github.com/jazz-run/jazz/catalog"

// Window is what is known about a model's context window, from every
// source agent-loop.md §4 names.
type Window struct {
	// Local is true for ollama and llamacpp, whose window is the server's.
	Local bool
	// Pinned is the agent's numCtx, 0 when unset.
	Pinned int
	// Server is the window a local server runs the model with; ModelMax
	// the model's own maximum it reports (0 when unknown).
	Server, ModelMax int
	// Catalog is the catalog's window, 0 when unknown.
	Catalog int
	// MaxContextTokens is the agent's ceiling, 0 when unset.
	MaxContextTokens int
}

// Budget is the token budget for w: a local provider's pinned numCtx,
// else its server's window, else the model's maximum; any other provider's
// pinned numCtx, else the catalog's window. Unknown is
// catalog.DefaultWindow, a placeholder: maxContextTokens then sets the
// budget outright instead of only lowering it. guessed says the budget
// rests on that placeholder.
func Budget(w Window) (budget int, guessed bool) {
	switch {
	case w.Pinned > 0:
		budget = w.Pinned
	case w.Local && w.Server > 0:
		budget = w.Server
	case w.Local && w.ModelMax > 0:
		budget = w.ModelMax
	case w.Catalog > 0:
		budget = w.Catalog
	default:
		budget, guessed = catalog.DefaultWindow, true
	}
	if m := w.MaxContextTokens; m > 0 && (guessed || m < budget) {
		return m, false
	}
	return budget, guessed
}
