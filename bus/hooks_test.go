package bus

import (
	"context"
	"testing"
	"time"

	"github.com/jazz-run/jazz/internal/testutil"
)

// TestOnClosedTellsEveryListener: each listener hears the close once; a
// removed one does not; Close still completes its drain (it listens the
// same way).
func TestOnClosedTellsEveryListener(t *testing.T) {
	b := inProcessBus(t, testutil.NATSOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	heard := make(chan string, 4)
	b.OnClosed(func() { heard <- "a" })
	remove := b.OnClosed(func() { heard <- "removed" })
	b.OnClosed(func() { heard <- "b" })
	remove()
	if !b.Connected() {
		t.Fatal("not connected after Start")
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for len(got) < 2 {
		select {
		case n := <-heard:
			got[n]++
		case <-ctx.Done():
			t.Fatalf("listeners heard %v", got)
		}
	}
	select {
	case n := <-heard:
		got[n]++
	case <-time.After(50 * time.Millisecond):
	}
	if got["a"] != 1 || got["b"] != 1 || got["removed"] != 0 {
		t.Fatalf("listeners heard %v", got)
	}
	if b.Connected() {
		t.Fatal("connected after Close")
	}
}
