package events

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jazz-run/jazz/messages"
)

// choppy is a reader of a real pipe that takes random small bites at
// random moments, so the writer side sees short and blocked writes.
func choppy(r io.Reader, rng *rand.Rand) []byte {
	var out bytes.Buffer
	buf := make([]byte, 1<<14)
	for {
		n, err := r.Read(buf[:1+rng.IntN(len(buf)-1)])
		out.Write(buf[:n])
		if err != nil {
			return out.Bytes()
		}
		if rng.IntN(8) == 0 {
			time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
		}
	}
}

// chopped writes each p in several Writes of random sizes, as a writer
// that is not atomic does (a stream that takes what fits, a wrapper that
// splits): concurrent writers of such a writer interleave mid-line
// unless one goroutine owns it.
type chopped struct{ w io.Writer }

func (c chopped) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := 1 + rand.IntN(min(len(p), 512))
		if _, err := c.w.Write(p[:k]); err != nil {
			return n - len(p), err
		}
		p = p[k:]
		if rand.IntN(4) == 0 {
			runtime.Gosched()
		}
	}
	return n, nil
}

// TestLinesNeverInterleave is a property test: any number of writers
// writing lines of any length (past a pipe's atomic PIPE_BUF, past the
// pipe's whole buffer) at once through one Lines to a real pipe, read in
// random bites, yield exactly the lines written, each whole, each
// writer's in its order, with every line left out counted.
func TestLinesNeverInterleave(t *testing.T) {
	defer goleak.VerifyNone(t)
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		writers := 1 + rng.IntN(12)
		perWriter := 1 + rng.IntN(60)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan []byte, 1)
		go func() { got <- choppy(r, rand.New(rand.NewPCG(seed, 9))) }()
		l := NewLines(chopped{w}, func(n int64) []byte { return fmt.Appendf(nil, "left out %d\n", n) })
		var wg sync.WaitGroup
		for id := range writers {
			wg.Add(1)
			go func(rng *rand.Rand) {
				defer wg.Done()
				for seq := range perWriter {
					size := 1 + rng.IntN(300)
					if rng.IntN(10) == 0 {
						size = 4096 + rng.IntN(70_000)
					}
					pad := strings.Repeat(string(rune('a'+id%26)), size)
					_, _ = fmt.Fprintf(l, "w%d s%d %s end\n", id, seq, pad)
				}
			}(rand.New(rand.NewPCG(seed, uint64(id))))
		}
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := l.Close(ctx); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		cancel()
		w.Close()
		out := <-got
		r.Close()

		next := make([]int, writers)
		var left int64
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		lines := 0
		for sc.Scan() {
			line := sc.Text()
			if n, ok := strings.CutPrefix(line, "left out "); ok {
				var k int64
				fmt.Sscan(n, &k)
				left += k
				continue
			}
			var id, seq int
			var pad string
			if _, err := fmt.Sscanf(line, "w%d s%d %s end", &id, &seq, &pad); err != nil || id >= writers ||
				strings.Trim(pad, string(rune('a'+id%26))) != "" || !strings.HasSuffix(line, " end") {
				t.Fatalf("seed %d: an interleaved or broken line: %.120q", seed, line)
			}
			if seq < next[id] {
				t.Fatalf("seed %d: writer %d's line %d came after its line %d", seed, id, seq, next[id]-1)
			}
			next[id] = seq + 1
			lines++
		}
		if int64(lines)+left != int64(writers*perWriter) {
			t.Fatalf("seed %d: %d lines written and %d told left out, of %d", seed, lines, left, writers*perWriter)
		}
	}
}

// TestLinesStalledReader: with a reader that stopped reading, Write
// never waits, the backlog stays bounded, Close returns at its deadline,
// and once the reader reads again the entries taken come, in order, and
// a notice tells how many were left out.
func TestLinesStalledReader(t *testing.T) {
	w := &stalled{release: make(chan struct{})}
	l := NewLines(w, WarningNotice)
	done := make(chan struct{})
	const n = 50_000
	go func() {
		defer close(done)
		for i := range n {
			_, _ = fmt.Fprintf(l, "entry %d %s\n", i, strings.Repeat("x", 100))
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		close(w.release)
		t.Fatal("Write waited for a reader that stopped reading")
	}
	if b := l.backlog.Load(); b > maxLinesBacklog+1<<10 {
		t.Errorf("%d bytes held for a reader that stopped reading", b)
	}
	if l.Dropped() == 0 {
		t.Error("nothing was left out of 5 MB for a reader that stopped reading")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := l.Close(ctx); err == nil {
		t.Error("Close said everything was written to a reader that stopped reading")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Close took %v past its 100ms deadline", took)
	}
	close(w.release)
}

// TestLinesToldAfterCatchingUp: entries left out while the reader
// stalled are told by a warning before the next line written once it
// reads again.
func TestLinesToldAfterCatchingUp(t *testing.T) {
	w := &stalled{release: make(chan struct{})}
	l := NewLines(w, WarningNotice)
	big := strings.Repeat("y", maxLinesBacklog/4)
	for range 10 {
		_, _ = l.Write([]byte(big + "\n"))
	}
	close(w.release)
	_, _ = l.Write([]byte("after\n"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	out := w.got.String()
	i := strings.Index(out, "lines of this stream were left out")
	if i < 0 || !strings.Contains(out[i:], "after\n") {
		t.Errorf("no notice of the lines left out before the line after them: %q", out[max(0, len(out)-300):])
	}
}

// TestSinkOnLinesKeepsItsPolicy: a Sink writing to a Lines whose reader
// stalled loses only text deltas (its own policy), never a tool event,
// though the Lines is far past its own bound.
func TestSinkOnLinesKeepsItsPolicy(t *testing.T) {
	w := &stalled{release: make(chan struct{})}
	l := NewLines(w, WarningNotice)
	s := NewSink(l, NewFilter([]string{messages.CategoryAll}))
	pub := s.Local("r1", nil, nil)
	em := NewEmitter(pub, "r1")
	delta := strings.Repeat("d", MaxString)
	const chunks = 60_000
	for i := range chunks {
		em.Emit(messages.Event{Type: messages.EventTextChunk, Delta: delta, Accumulated: delta})
		if i%15_000 == 0 {
			ev := messages.Event{Type: messages.EventToolExecutionComplete}
			ev.ToolCallID = fmt.Sprint(i)
			em.Emit(ev)
		}
	}
	_ = pub.Publish(messages.FinishedSubject("r1"), messages.RunFinished{}, nil)
	close(w.release)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.Detach(ctx)
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	out := w.got.String()
	for i := 0; i < chunks; i += 15_000 {
		if !strings.Contains(out, fmt.Sprintf(`"toolCallId":"%d"`, i)) {
			t.Errorf("tool_execution_complete %d was lost", i)
		}
	}
}
