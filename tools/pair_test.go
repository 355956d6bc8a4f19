package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestPairTakesTheTurn: the twin Pair declares runs only while it holds
// the run's turn (Env.Acts), whichever package declares the pair; one
// whose call ends waiting runs nothing and says nothing was changed. A
// PairBeside twin runs beside a held turn.
func TestPairTakesTheTurn(t *testing.T) {
	ran := make(chan struct{}, 2)
	h := func(context.Context, *Env, json.RawMessage) Result { ran <- struct{}{}; return OK("done") }
	env := &Env{Acts: NewTurn()}
	release, err := env.Acts.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	twin := Pair(Tool{Name: "x", Handler: h}, h, 0)[1]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	r := twin.Handler(ctx, env, nil)
	cancel()
	if r.Success || !strings.Contains(r.Error, "Nothing was changed") || len(ran) != 0 {
		t.Fatalf("a twin that never had the turn: %+v, ran %d", r, len(ran))
	}
	out := make(chan Result, 1)
	go func() { out <- twin.Handler(context.Background(), env, nil) }()
	select {
	case <-ran:
		t.Fatal("the twin ran while the turn was held")
	case <-time.After(50 * time.Millisecond):
	}
	release()
	select {
	case r := <-out:
		if !r.Success {
			t.Fatalf("after the turn was free: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the twin did not run within 10 s of the turn being free")
	}

	// Beside a held turn, a PairBeside twin runs.
	release, err = env.Acts.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	beside := PairBeside(Tool{Name: "y", Handler: h}, h, 0)[1]
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r := beside.Handler(ctx, env, nil); !r.Success {
		t.Fatalf("PairBeside twin: %+v", r)
	}
}
