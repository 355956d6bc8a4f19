package events

import "sync"

// queue hands events to a channel without ever blocking the producer: a
// slice that grows, drained by one goroutine into out. close lets the
// rest drain, then closes out; abandon closes out now.
type queue struct {
	out  chan Event
	mu   sync.Mutex
	buf  []Event
	wake chan struct{}
	done bool // no more pushes; out closes once buf is empty
	quit chan struct{}
	once sync.Once
}

func newQueue() *queue {
	q := &queue{out: make(chan Event), wake: make(chan struct{}, 1), quit: make(chan struct{})}
	go q.run()
	return q
}

func (q *queue) push(ev Event) {
	q.mu.Lock()
	if !q.done {
		q.buf = append(q.buf, ev)
	}
	q.mu.Unlock()
	q.signal()
}

func (q *queue) close() {
	q.mu.Lock()
	q.done = true
	q.mu.Unlock()
	q.signal()
}

func (q *queue) abandon() {
	q.close()
	q.once.Do(func() { close(q.quit) })
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *queue) run() {
	defer close(q.out)
	for {
		q.mu.Lock()
		batch, done := q.buf, q.done
		q.buf = nil
		q.mu.Unlock()
		for _, ev := range batch {
			select {
			case q.out <- ev:
			case <-q.quit:
				return
			}
		}
		if done && len(batch) == 0 {
			return
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-q.wake:
		case <-q.quit:
			return
		}
	}
}
