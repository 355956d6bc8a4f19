package secrets

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
)

// Set is what one run knows about its own secrets: their values, for the
// Redactor, and the files outside JAZZ_HOME that hold them, for the
// Guard. The run wiring builds it once and hands it to every tool call
// (tools.Env.Secrets); what it knows never changes. A nil Set knows
// nothing.
type Set struct {
	redactor *Redactor
	files    []string

	// guards holds the Guard made for each JAZZ_HOME asked about: every
	// tool call asks, and making one resolves and stats the protected
	// places, a few system calls a call need not repeat.
	mu     sync.Mutex
	guards map[string]Guard
}

// Sources are where a run's secrets come from; every field is optional.
type Sources struct {
	// Environ is the process environment (os.Environ()).
	Environ []string
	// Home is JAZZ_HOME: every small file in it is searched (FromHome).
	Home string
	// Files are the config files read (--config, JAZZ_CONFIG_PATH, a
	// project config): they are searched, and each that holds a secret is
	// guarded like JAZZ_HOME.
	Files []string
	// KeyFiles are credential files (a NATS creds or nkey seed file, a
	// client key): guarded whatever they hold, and searched. "" is none.
	KeyFiles []string
	// Documents are typed configuration marshalled to JSON (the merged
	// config, the agent): whatever they hold under secret-looking keys.
	Documents []any
	// Headers are OTLP (or other) request headers: every value is secret.
	Headers map[string]string
	// Values are secrets known by value (a NATS password, a provider key
	// resolved elsewhere).
	Values []string
}

// Collect builds a Set from src. It reads JAZZ_HOME and the files within
// ctx, boundedly, and never fails: what cannot be read is skipped (the
// Guard refuses those places whether or not their values are known).
func Collect(ctx context.Context, src Sources) *Set {
	vals := slices.Clone(src.Values)
	vals = append(vals, FromEnviron(src.Environ)...)
	// The config file in JAZZ_HOME is one of src.Files too: it is read
	// once.
	inHome := map[string][]string{}
	vals = append(vals, fromHome(ctx, src.Home, inHome)...)
	vals = append(vals, FromHeaders(src.Headers)...)
	var guarded []string
	for _, f := range src.Files {
		found, read := inHome[f]
		if !read {
			found = fromFile(ctx, f)
		}
		if NewRedactor(found...).Len() > 0 {
			vals = append(vals, found...)
			guarded = append(guarded, f)
		}
	}
	for _, f := range src.KeyFiles {
		if f != "" {
			vals = append(vals, fromFile(ctx, f)...)
			guarded = append(guarded, f)
		}
	}
	for _, d := range src.Documents {
		vals = append(vals, fromDocument(d)...)
	}
	return &Set{redactor: NewRedactor(vals...), files: guarded}
}

// NewSet is a Set of known values and guarded files, for tests and for
// callers that collect on their own.
func NewSet(values []string, files ...string) *Set {
	return &Set{redactor: NewRedactor(values...), files: slices.Clone(files)}
}

// Redactor is the Set's redactor (nil for a nil Set: redacts nothing).
func (s *Set) Redactor() *Redactor {
	if s == nil {
		return nil
	}
	return s.redactor
}

// Files are the guarded files outside JAZZ_HOME.
func (s *Set) Files() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.files)
}

// Guard is the Guard for a run whose JAZZ_HOME is home.
// It is made on the first call for home and the same one is returned
// after that, as if made when the run started (see NewGuard).
func (s *Set) Guard(home string) Guard {
	if s == nil {
		return NewGuard(home)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.guards[home]; ok {
		return g
	}
	g := NewGuard(home, s.files...)
	if s.guards == nil {
		s.guards = map[string]Guard{}
	}
	s.guards[home] = g
	return g
}

// Redact is s.Redactor().String(text).
func (s *Set) Redact(text string) string { return s.Redactor().String(text) }

// RedactJSON is s.Redactor().JSON(raw).
func (s *Set) RedactJSON(raw json.RawMessage) json.RawMessage { return s.Redactor().JSON(raw) }

// Hidden are the paths the programs a run starts must not see: JAZZ_HOME
// (home; "" adds none) and the guarded files outside it.
func (s *Set) Hidden(home string) []string {
	var out []string
	if home != "" {
		out = append(out, home)
	}
	return append(out, s.Files()...)
}

// RedactValue returns v with s's secrets replaced in every string it
// holds, by a JSON round trip; v itself when it holds none. ok is false
// when the redacted document no longer decodes into a T (the caller then
// keeps none of v's text).
func RedactValue[T any](s *Set, v T) (out T, ok bool) {
	if s.Redactor().Len() == 0 {
		return v, true
	}
	data, err := json.Marshal(v)
	if err != nil {
		return v, false
	}
	clean := s.RedactJSON(data)
	if string(clean) == string(data) {
		return v, true
	}
	if err := json.Unmarshal(clean, &out); err != nil {
		var zero T
		return zero, false
	}
	return out, true
}
