package openai

import (
	"strings"

	"github.com/jazz-run/jazz/provider"
)

const (
	openTag  = "<think>"
	closeTag = "</think>"
	space    = " \t\r\n"
)

// Splitter states.
const (
	thinkDetect   = iota // only whitespace so far: is a <think> coming?
	thinkInside          // inside <think>…, before </think>
	thinkAfter           // just closed: drop the blank lines before the answer
	thinkPassthru        // plain answer text from here on
)

// thinkSplitter separates an inline <think>…</think> block from the answer
// text of models that reason in their content (DeepSeek-R1 and Qwen on
// Ollama or llama.cpp). It is defensive: only a block that opens the answer
// (after optional whitespace) counts, so text that merely mentions the tag,
// a stray </think>, or Harmony output (`<|channel|>…`, which never starts
// with <think>) passes through untouched. Tags split across chunks are
// stitched by holding back the few bytes that could still become a tag.
type thinkSplitter struct {
	state   int
	buf     string
	started bool // inside: a non-space reasoning byte was emitted
}

// feed takes the next content piece and emits what is decided.
func (s *thinkSplitter) feed(in string, emit func(provider.Delta)) {
	if in == "" {
		return
	}
	switch s.state {
	case thinkPassthru:
		emit(provider.Delta{Text: in})
	case thinkDetect:
		s.buf += in
		t := strings.TrimLeft(s.buf, space)
		switch {
		case strings.HasPrefix(t, openTag):
			s.state, s.buf = thinkInside, ""
			s.feed(t[len(openTag):], emit)
		case strings.HasPrefix(openTag, t):
			// "", "<", "<thi": still undecided.
		default:
			s.state = thinkPassthru
			text := s.buf
			s.buf = ""
			emit(provider.Delta{Text: text})
		}
	case thinkInside:
		s.buf += in
		if i := strings.Index(s.buf, closeTag); i >= 0 {
			s.emitReasoning(s.buf[:i], emit)
			rest := s.buf[i+len(closeTag):]
			s.state, s.buf = thinkAfter, ""
			s.feed(rest, emit)
			return
		}
		keep := partialSuffix(s.buf, closeTag)
		s.emitReasoning(s.buf[:len(s.buf)-keep], emit)
		s.buf = s.buf[len(s.buf)-keep:]
	case thinkAfter:
		t := strings.TrimLeft(in, space)
		if t != "" {
			s.state = thinkPassthru
			emit(provider.Delta{Text: t})
		}
	}
}

func (s *thinkSplitter) emitReasoning(r string, emit func(provider.Delta)) {
	if !s.started {
		r = strings.TrimLeft(r, space)
	}
	if r == "" {
		return
	}
	s.started = true
	emit(provider.Delta{Reasoning: r})
}

// flush emits whatever is held back at the end of the answer. An unclosed
// <think> is all reasoning: the model ran out before answering.
func (s *thinkSplitter) flush(emit func(provider.Delta)) {
	switch s.state {
	case thinkDetect:
		if s.buf != "" {
			emit(provider.Delta{Text: s.buf})
		}
	case thinkInside:
		s.emitReasoning(s.buf, emit)
	}
	s.buf = ""
}

// partialSuffix is the length of the longest suffix of s that is a proper
// prefix of tag: the bytes that may still turn into the tag.
func partialSuffix(s, tag string) int {
	for n := min(len(tag)-1, len(s)); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}
