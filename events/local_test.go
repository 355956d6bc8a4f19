package events

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/jazz-run/jazz/internal/testutil/syncbuf"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jazz-run/jazz/messages"
)

// lines is the events the sink wrote to out.
func lines(t *testing.T, out *syncbuf.Buffer) []messages.Event {
	t.Helper()
	var evs []messages.Event
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	for sc.Scan() {
		var ev messages.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		evs = append(evs, ev)
	}
	return evs
}

type subjects struct {
	mu  sync.Mutex
	got []string
}

func (s *subjects) Publish(subject string, _ any, _ messages.Trace) error {
	s.mu.Lock()
	s.got = append(s.got, subject)
	s.mu.Unlock()
	return nil
}

// TestLocalSinkTakesTheRunInProcess: events published through Local's
// publisher reach the sink in publish order, everything is passed on to
// the next publisher, the run's end ends the stream, Detach returns at
// once after it, and the sink leaves no goroutine.
func TestLocalSinkTakesTheRunInProcess(t *testing.T) {
	defer goleak.VerifyNone(t)
	var out syncbuf.Buffer
	next := &subjects{}
	s := NewSink(&out, NewFilter([]string{messages.CategoryAll}))
	stream := s.Stream()
	pub := s.Local("r1", next, nil)
	em := NewEmitter(pub, "r1")
	const n = 200
	for i := range n {
		em.Emit(messages.Event{Type: messages.EventTextChunk, Delta: fmt.Sprint(i)})
	}
	// Another run's messages and other subjects of this run are passed
	// on, never rendered.
	_ = pub.Publish(messages.EventSubject("r2", messages.EventTextChunk), messages.Event{Type: messages.EventTextChunk, Delta: "other run"}, nil)
	_ = pub.Publish(messages.ApprovalRequiredSubject("r1"), messages.ApprovalRequired{ToolCallID: "c"}, nil)
	_ = pub.Publish(messages.FinishedSubject("r1"), messages.RunFinished{OK: true}, nil)
	// Published after the run's end: not part of its stream.
	em.Emit(messages.Event{Type: messages.EventTextChunk, Delta: "late"})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	s.Detach(ctx)
	if ctx.Err() != nil {
		t.Fatalf("Detach waited for its deadline (%s): the run's end never went through", time.Since(start))
	}
	got := lines(t, &out)
	if len(got) != n {
		t.Fatalf("%d lines written, want %d", len(got), n)
	}
	for i, ev := range got {
		if ev.Delta != fmt.Sprint(i) || ev.RunID != "r1" {
			t.Fatalf("line %d is %+v: out of order or from another run", i, ev)
		}
	}
	var streamed int
	for ev := range stream {
		if ev.Delta != fmt.Sprint(streamed) {
			t.Fatalf("stream event %d is %q", streamed, ev.Delta)
		}
		streamed++
	}
	if streamed != n {
		t.Errorf("stream delivered %d events, want %d", streamed, n)
	}
	next.mu.Lock()
	defer next.mu.Unlock()
	if len(next.got) != n+4 || next.got[n+2] != messages.FinishedSubject("r1") {
		t.Errorf("next publisher saw %d messages (want %d), finished at %d", len(next.got), n+4, n+2)
	}
}

// TestLocalSinkSurvivesAPanic: a panic while handling an event is told to
// onPanic with its stack, and the events after it are still written.
func TestLocalSinkSurvivesAPanic(t *testing.T) {
	defer goleak.VerifyNone(t)
	var out syncbuf.Buffer
	s := NewSink(&out, NewFilter([]string{messages.CategoryAll}))
	s.Hook(func(ev messages.Event) {
		if ev.Delta == "boom" {
			panic("sink hook")
		}
	})
	reasons := make(chan string, 4)
	pub := s.Local("r1", nil, func(reason string) { reasons <- reason })
	em := NewEmitter(pub, "r1")
	em.Emit(messages.Event{Type: messages.EventTextChunk, Delta: "a"})
	em.Emit(messages.Event{Type: messages.EventTextChunk, Delta: "boom"})
	em.Emit(messages.Event{Type: messages.EventTextChunk, Delta: "b"})
	_ = pub.Publish(messages.FinishedSubject("r1"), messages.RunFinished{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Detach(ctx)
	select {
	case r := <-reasons:
		if !strings.Contains(r, "sink hook") || !strings.Contains(r, "goroutine") {
			t.Errorf("panic reason %q lacks the value or the stack", r)
		}
	default:
		t.Fatal("onPanic was not told of the panic")
	}
	got := lines(t, &out)
	if len(got) != 2 || got[0].Delta != "a" || got[1].Delta != "b" {
		t.Errorf("written %+v, want a and b", got)
	}
}

// TestLocalSinkDetachIsBounded: a run whose end never comes (its root
// died) is detached at ctx's end, and Close stops a sink at once.
func TestLocalSinkDetachIsBounded(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := NewSink(nil, NewFilter([]string{messages.CategoryAll}))
	stream := s.Stream()
	NewEmitter(s.Local("r1", nil, nil), "r1").Emit(messages.Event{Type: messages.EventTextChunk})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	s.Detach(ctx)
	if ctx.Err() == nil {
		t.Fatal("Detach returned before the run's end or its deadline")
	}
	s.Close()
	for range stream { // closed by Close, queued events dropped
	}

	s2 := NewSink(nil, NewFilter([]string{messages.CategoryAll}))
	_ = s2.Local("r2", nil, nil)
	s2.Close()
}
