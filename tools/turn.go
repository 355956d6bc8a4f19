package tools

import "context"

// Turn lets the acting twins of one run act one at a time (Env.Acts). The
// calls of a batch run at once, and a sub-agent's beside its parent's: a
// twin checks that what it finds is what was approved, then acts, and
// another twin acting between the two would change what the first acts
// on unseen (a HEAD made beside the directory an allowlisted write goes
// into). Holding the turn from the check to the act closes that window.
type Turn struct{ ch chan struct{} }

// NewTurn is a free turn, for one run tree.
func NewTurn() *Turn { return &Turn{ch: make(chan struct{}, 1)} }

// Take waits for the turn, or for ctx to end (the run stopped, the call
// timed out); release gives the turn back. A nil Turn is always free: a
// handler run where no turn is wired is not held back.
func (t *Turn) Take(ctx context.Context) (release func(), err error) {
	if t == nil {
		return func() {}, nil
	}
	select {
	case t.ch <- struct{}{}:
		return func() { <-t.ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
