package supervisor_test

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jazz-run/jazz/supervisor"
)

// job is a Runner that records the goroutine it ran on and can block or
// panic.
type job struct {
	gid     chan uint64
	block   <-chan struct{}
	panics  bool
	reasons chan string
}

func (j *job) Run() {
	j.gid <- goid()
	if j.block != nil {
		<-j.block
	}
	if j.panics {
		panic("handler blew up")
	}
}

func (j *job) Panicked(reason string) { j.reasons <- reason }

// goid is the running goroutine's id, from its stack header.
func goid() uint64 {
	var buf [64]byte
	s := strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	var id uint64
	for _, r := range s {
		if r < '0' || r > '9' {
			break
		}
		id = id*10 + uint64(r-'0')
	}
	return id
}

func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s within 5s", what)
		panic("unreachable")
	}
}

// TestWorkerReusesItsGoroutine: Runners given one after another run on
// one goroutine; a panic is reported to its Runner and the goroutine goes
// on; a Runner given while another is blocked runs at once on a second
// goroutine; Close ends every parked goroutine.
func TestWorkerReusesItsGoroutine(t *testing.T) {
	w := supervisor.NewWorker()
	gids, reasons := make(chan uint64, 8), make(chan string, 8)
	run := func(j *job) uint64 {
		j.gid, j.reasons = gids, reasons
		w.Run(j)
		return recv(t, gids, "run")
	}
	// A parked goroutine is one blocked in loop's select; give it the time
	// to get there so the handoff, not a new goroutine, is what is tested.
	parked := func(want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for parkedWorkers() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%d parked worker goroutines, want %d", parkedWorkers(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	first := run(&job{})
	parked(1)
	if g := run(&job{panics: true}); g != first {
		t.Fatalf("second Runner ran on goroutine %d, want the parked %d", g, first)
	}
	if r := recv(t, reasons, "panic report"); r != "handler blew up" {
		t.Fatalf("Panicked(%q), want the panic's value", r)
	}
	parked(1)
	if g := run(&job{}); g != first {
		t.Fatalf("the goroutine did not survive the panic: ran on %d, want %d", g, first)
	}
	parked(1)

	release := make(chan struct{})
	blocked := run(&job{block: release})
	other := run(&job{}) // must not wait for the blocked one
	if other == blocked {
		t.Fatal("a Runner ran on the goroutine of one still running")
	}
	close(release)
	parked(2)

	w.Close()
	w.Close() // idempotent
	parked(0)
}

// parkedWorkers counts goroutines parked in a Worker's loop.
func parkedWorkers() int {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	var count int
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		if strings.Contains(g, "supervisor.(*Worker).loop") && strings.Contains(g, "[select") {
			count++
		}
	}
	return count
}

// TestWorkerConcurrentRun: many Runs at once all run, exactly once each,
// and Close leaves no goroutine behind (run with -race).
func TestWorkerConcurrentRun(t *testing.T) {
	w := supervisor.NewWorker()
	const n = 200
	gids, reasons := make(chan uint64, n), make(chan string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Run(&job{gid: gids, reasons: reasons, panics: i%7 == 0})
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		recv(t, gids, "run")
	}
	w.Close()
	deadline := time.Now().Add(5 * time.Second)
	for parkedWorkers() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d worker goroutines left after Close", parkedWorkers())
		}
		time.Sleep(time.Millisecond)
	}
}
