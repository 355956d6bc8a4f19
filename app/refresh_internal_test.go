package app

import (
	"context"
	"testing"
	"time"
)

// TestCatalogRefreshWaitsForALongerRun: the refresh starts once the run has
// lived for the delay, with the run's context.
func TestCatalogRefreshWaitsForALongerRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan context.Context, 1)
	refreshLater(ctx, 10*time.Millisecond, func(c context.Context) { started <- c })
	select {
	case c := <-started:
		if c != ctx {
			t.Error("refresh got another context than the run's")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("refresh not started 10 s after a 10 ms delay")
	}
}

// TestCatalogRefreshNeverStartsForAShortRun: a run that ends before the
// delay never starts the fetch it could not finish.
func TestCatalogRefreshNeverStartsForAShortRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{}, 1)
	refreshLater(ctx, 50*time.Millisecond, func(context.Context) { started <- struct{}{} })
	cancel()
	select {
	case <-started:
		t.Fatal("refresh started after the run ended")
	case <-time.After(300 * time.Millisecond):
	}
}
