package events

import "sync"

// queue hands values to a channel without ever blocking the producer: a
// slice that grows, drained by one goroutine into out. close lets the
// rest drain, then closes out; abandon closes out now.
type queue[T any] struct {
	out  chan T
	mu   sync.Mutex
	buf  []T
	wake chan struct{}
	done bool // no more pushes; out closes once buf is empty
	quit chan struct{}
	once sync.Once
}

func newQueue[T any]() *queue[T] {
	q := &queue[T]{out: make(chan T), wake: make(chan struct{}, 1), quit: make(chan struct{})}
	go q.run()
	return q
}

// push queues v and reports whether it was taken: false once the queue
// is closed.
func (q *queue[T]) push(v T) bool {
	q.mu.Lock()
	ok := !q.done
	if ok {
		q.buf = append(q.buf, v)
	}
	q.mu.Unlock()
	q.signal()
	return ok
}

func (q *queue[T]) close() {
	q.mu.Lock()
	q.done = true
	q.mu.Unlock()
	q.signal()
}

func (q *queue[T]) abandon() {
	q.close()
	q.once.Do(func() { close(q.quit) })
}

func (q *queue[T]) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *queue[T]) run() {
	defer close(q.out)
	for {
		q.mu.Lock()
		batch, done := q.buf, q.done
		q.buf = nil
		q.mu.Unlock()
		for _, v := range batch {
			select {
			case q.out <- v:
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
