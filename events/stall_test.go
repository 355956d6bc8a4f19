package events

import (
	"context"
	"fmt"
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

// TestStalledReaderBoundsTheBacklog: a reader that stopped reading makes
// the run's text deltas past maxBacklog be left out, not pile up; every
// other event still comes, in order, after a warning saying how many
// deltas were left out, once the reader reads again.
func TestStalledReaderBoundsTheBacklog(t *testing.T) {
	defer goleak.VerifyNone(t)
	w := &stalled{release: make(chan struct{})}
	s := NewSink(w, NewFilter([]string{messages.CategoryAll}))
	pub := s.Local("r1", nil, nil)
	em := NewEmitter(pub, "r1")
	delta := strings.Repeat("d", MaxString)
	const chunks = 60_000 // some 30 MB of lines
	for i := range chunks {
		em.Emit(messages.Event{Type: messages.EventTextChunk, Delta: delta, Accumulated: delta})
		if i%15_000 == 0 {
			ev := messages.Event{Type: messages.EventToolExecutionComplete}
			ev.ToolCallID = fmt.Sprint(i)
			em.Emit(ev)
		}
	}
	if b := s.backlog.Load(); b > maxBacklog+64<<10 {
		t.Errorf("%d MiB queued for a reader that stopped reading", b>>20)
	}
	_ = pub.Publish(messages.FinishedSubject("r1"), messages.RunFinished{}, nil)
	close(w.release)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s.Detach(ctx)
	out := w.got.String()
	for i := 0; i < chunks; i += 15_000 {
		if !strings.Contains(out, fmt.Sprintf(`"toolCallId":"%d"`, i)) {
			t.Errorf("tool_execution_complete %d was lost", i)
		}
	}
	if !strings.Contains(out, "chunks were left out") {
		t.Error("no warning says deltas were left out")
	}
}

// TestLogWriterNeverBlocks: a logger writing through LogWriter to a
// reader that stopped reading never waits for it, and its entries come,
// as warning lines, once the reader reads again.
func TestLogWriterNeverBlocks(t *testing.T) {
	w := &stalled{release: make(chan struct{})}
	lw := LogWriter(w)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2560 {
			_, _ = fmt.Fprintf(lw, "entry %d\n", i)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a log entry waited for a reader that stopped reading")
	}
	close(w.release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.mu.Lock()
		got := w.got.String()
		w.mu.Unlock()
		if strings.Contains(got, `"message":"entry 0"`) {
			if !strings.HasPrefix(got, `{"type":"warning"`) {
				t.Errorf("not a warning line: %.100s", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first entry never came: %.200s", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
