package events

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jazz-run/jazz/messages"
)

// stalled is a stderr whose reader stopped reading (a full pipe): every
// Write blocks until release.
type stalled struct {
	mu      sync.Mutex
	release chan struct{}
	got     strings.Builder
}

func (s *stalled) Write(p []byte) (int, error) {
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got.Write(p)
	return len(p), nil
}

// TestStalledReaderNeverBlocksTheRun: with a reader that stopped reading,
// neither an emitter, nor a line written beside the events (a warning,
// a bridge's request, the run_end a teardown writes), nor Detach waits on
// it beyond its bound; once it reads again, what was queued comes in order.
func TestStalledReaderNeverBlocksTheRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	w := &stalled{release: make(chan struct{})}
	s := NewSink(w, NewFilter([]string{messages.CategoryAll}))
	pub := s.Local("r1", nil, nil)
	em := NewEmitter(pub, "r1")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			em.Emit(messages.Event{Type: messages.EventTextChunk, Delta: "d"})
		}
		s.WriteLine(s.Render(messages.Event{Type: messages.EventWarning, Message: "a warning"}))
		_ = pub.Publish(messages.FinishedSubject("r1"), messages.RunFinished{}, nil)
		s.WriteLine(s.Render(messages.Event{Type: messages.EventRunEnd}))
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		close(w.release)
		t.Fatal("the run blocked on a reader that stopped reading")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	detached := make(chan struct{})
	go func() { s.Detach(ctx); close(detached) }()
	select {
	case <-detached:
	case <-time.After(5 * time.Second):
		close(w.release)
		t.Fatal("Detach did not return at its deadline")
	}
	// After Detach: a teardown warning waits a bounded time, then goes.
	start := time.Now()
	s.WriteLine([]byte("{\"type\":\"warning\"}\n"))
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a line after Detach waited %v", took)
	}
	close(w.release)
	s.Close()
}
