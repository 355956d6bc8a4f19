// Package agents owns the agent definitions stored as one JSON file per
// agent in JAZZ_HOME/agents/<id>.json (config.md §4): creating them with
// validated fields, finding one by id or name, listing and deleting them.
package agents

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/safefile"
)

// Agent is one agent file.
type Agent struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Model is `provider/model`.
	Model     string `json:"model"`
	Config    Config `json:"config"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
}

// Config is an agent's `config` object.
type Config struct {
	// Persona defaults to "default".
	Persona     string `json:"persona"`
	LLMProvider string `json:"llmProvider"`
	LLMModel    string `json:"llmModel"`
	// Tools are tool names, trimmed and de-duplicated; unknown names are
	// dropped at run time, not here.
	Tools []string `json:"tools,omitempty"`
	// ReasoningEffort is disable|low|medium|high; "" means disable.
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	// SummarizerModel is `provider/model`; a bad one falls back to the
	// agent's own model at run time, with a warning.
	SummarizerModel string `json:"summarizerModel,omitempty"`
	// LLMAPIKeys are per-provider key overrides; secrets.
	LLMAPIKeys       map[string]string `json:"llmApiKeys,omitempty"`
	NumCtx           *int              `json:"numCtx,omitempty"`
	MaxContextTokens *int              `json:"maxContextTokens,omitempty"`
	// Temperature nil means "not sent".
	Temperature  *float64 `json:"temperature,omitempty"`
	EnvAllowlist []string `json:"envAllowlist,omitempty"`
	// CustomTools are the agent's declared tools (tools-and-approval.md
	// §8), kept as written and validated on every load; see
	// config.ParseCustomToolsJSON. Command tools run with this agent's
	// EnvAllowlist.
	CustomTools json.RawMessage `json:"customTools,omitempty"`
	// SystemPrompt replaces the built-in standing instructions when set.
	SystemPrompt string `json:"systemPrompt,omitempty"`
}

// ErrNotFound matches (errors.Is) the error of a Lookup or Delete that found
// no agent.
var ErrNotFound = errors.New("agent not found")

// NotFoundError is the error for an unknown agent id or name. Unreadable
// lists the agent files a lookup by name could not read: one of them may
// be the agent meant, so the error names them rather than hide them.
type NotFoundError struct {
	ID         string
	Unreadable []string
}

func (e *NotFoundError) Error() string {
	msg := "No agent found with ID: " + e.ID
	if len(e.Unreadable) > 0 {
		msg += fmt.Sprintf(". %d agent file(s) could not be read, and the agent may be among them: %s",
			len(e.Unreadable), strings.Join(e.Unreadable, "; "))
	}
	return msg
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// ErrInvalid marks an agent definition that breaks a rule of config.md §4.
var ErrInvalid = errors.New("invalid agent")

// ValidID reports whether id may name an agent (and its files): it matches
// ^[A-Za-z0-9_-]{1,64}$. Checked by hand so importing the package costs no
// regexp compilation at start-up.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Store reads and writes agent files under Home/agents.
type Store struct {
	// Home is JAZZ_HOME.
	Home string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (s *Store) dir() string { return filepath.Join(s.Home, "agents") }

func (s *Store) path(id string) string { return filepath.Join(s.dir(), id+".json") }

func (s *Store) now() string {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	return now().UTC().Format("2006-01-02T15:04:05.000Z")
}

// Create validates a and stores it as a new agent. An empty ID is generated;
// a given one must be valid and free. The name must be non-empty and not used
// by another agent. Model (or LLMProvider + LLMModel) must be a valid
// `provider/model`. Returns the agent as stored.
func (s *Store) Create(ctx context.Context, a Agent) (Agent, error) {
	if err := ctx.Err(); err != nil {
		return Agent{}, err
	}
	if err := normalize(&a); err != nil {
		return Agent{}, err
	}
	if a.ID == "" {
		a.ID = newID()
	} else if !ValidID(a.ID) {
		return Agent{}, fmt.Errorf("agent id %q must match ^[A-Za-z0-9_-]{1,64}$: %w", a.ID, ErrInvalid)
	}
	existing, _, err := s.List(ctx)
	if err != nil {
		return Agent{}, err
	}
	for _, e := range existing {
		if e.Name == a.Name {
			return Agent{}, fmt.Errorf("an agent named %q already exists (id %s): %w", a.Name, e.ID, ErrInvalid)
		}
	}
	a.CreatedAt = s.now()
	a.UpdatedAt = a.CreatedAt
	if err := s.write(a, false); err != nil {
		return Agent{}, err
	}
	return a, nil
}

// Lookup finds an agent by id, then by exact name. An unknown one gives a
// *NotFoundError; a corrupt file gives an error naming it.
func (s *Store) Lookup(ctx context.Context, idOrName string) (Agent, error) {
	if err := ctx.Err(); err != nil {
		return Agent{}, err
	}
	key := strings.TrimSpace(idOrName)
	if ValidID(key) {
		a, err := s.read(ctx, s.path(key))
		if err == nil {
			return a, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return Agent{}, err
		}
	}
	all, unreadable, err := s.list(ctx)
	if err != nil {
		return Agent{}, err
	}
	for _, a := range all {
		if a.Name == key {
			return a, nil
		}
	}
	return Agent{}, &NotFoundError{ID: idOrName, Unreadable: unreadable}
}

// List returns every readable agent, sorted by name. A corrupt file is
// skipped with a warning; a missing agents directory is an empty list.
func (s *Store) List(ctx context.Context) ([]Agent, []string, error) {
	out, unreadable, err := s.list(ctx)
	warnings := make([]string, len(unreadable))
	for i, u := range unreadable {
		warnings[i] = "skipping agent file: " + u
	}
	return out, warnings, err
}

// list is List with the reasons files were skipped, bare.
func (s *Store) list(ctx context.Context) ([]Agent, []string, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	entries, err := os.ReadDir(s.dir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list agents in %s: %w", s.dir(), err)
	}
	// Agents in a directory another user can write are theirs to define.
	if err := safefile.CheckPrivate(s.dir()); err != nil {
		return nil, nil, fmt.Errorf("list agents: %w", err)
	}
	var out []Agent
	var unreadable []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		a, err := s.read(ctx, filepath.Join(s.dir(), name))
		if err != nil {
			unreadable = append(unreadable, err.Error())
			continue
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ID < out[j].ID
	})
	return out, unreadable, nil
}

// Delete removes the agent with this id or name.
func (s *Store) Delete(ctx context.Context, idOrName string) error {
	a, err := s.Lookup(ctx, idOrName)
	if err != nil {
		return err
	}
	if err := os.Remove(s.path(a.ID)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &NotFoundError{ID: idOrName}
		}
		return fmt.Errorf("delete agent %s: %w", s.path(a.ID), err)
	}
	return nil
}

// MaxFileBytes bounds an agent file; a bigger one is refused, naming it.
const MaxFileBytes = 1 << 20

// read parses and validates one agent file: a regular file of at most
// MaxFileBytes that only the user (or root) can change.
func (s *Store) read(ctx context.Context, path string) (Agent, error) {
	data, _, err := safefile.Read(ctx, path, safefile.Options{MaxBytes: MaxFileBytes, What: "agent file", Private: true})
	if err != nil {
		var pe *fs.PathError
		if errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) {
			return Agent{}, err
		}
		return Agent{}, fmt.Errorf("read agent file %s: %w", path, err)
	}
	var a Agent
	if err := json.Unmarshal(data, &a); err != nil {
		return Agent{}, fmt.Errorf("agent file %s is corrupt (%v): %w", path, err, ErrInvalid)
	}
	if err := normalize(&a); err != nil {
		return Agent{}, fmt.Errorf("agent file %s: %w", path, err)
	}
	if want := strings.TrimSuffix(filepath.Base(path), ".json"); a.ID != want {
		return Agent{}, fmt.Errorf("agent file %s holds id %q, not %q: %w", path, a.ID, want, ErrInvalid)
	}
	return a, nil
}

// write stores a atomically: a temp file in the same directory, then a
// hard link (create) or rename (replace) onto the final name, so a reader
// never sees half a file and Create never overwrites an existing agent.
func (s *Store) write(a Agent, replace bool) error {
	if err := os.MkdirAll(s.dir(), 0o700); err != nil {
		return fmt.Errorf("save agent: create %s: %w", s.dir(), err)
	}
	if err := safefile.CheckPrivate(s.dir()); err != nil {
		return fmt.Errorf("save agent: %w", err)
	}
	data, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return fmt.Errorf("save agent %s: %w", a.ID, err)
	}
	final := s.path(a.ID)
	tmp, err := os.CreateTemp(s.dir(), "."+a.ID+".*.tmp")
	if err != nil {
		return fmt.Errorf("save agent %s: %w", final, err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(append(data, '\n'))
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr, os.Chmod(tmp.Name(), 0o600)); err != nil {
		return fmt.Errorf("save agent %s: %w", final, err)
	}
	if replace {
		err = os.Rename(tmp.Name(), final)
	} else {
		err = os.Link(tmp.Name(), final)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("an agent with id %q already exists: %w", a.ID, ErrInvalid)
		}
	}
	if err != nil {
		return fmt.Errorf("save agent %s: %w", final, err)
	}
	return nil
}

// normalize applies the rules of config.md §4 in place.
func normalize(a *Agent) error {
	a.Name = strings.TrimSpace(a.Name)
	if a.Name == "" {
		return fmt.Errorf("agent name must not be empty: %w", ErrInvalid)
	}
	// A name is printed in tables, headers and events: a tab or an escape
	// sequence in it would forge their layout.
	for _, r := range a.Name {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("agent name %q holds a control character (%U): %w", a.Name, r, ErrInvalid)
		}
	}
	a.Description = strings.TrimSpace(a.Description)
	c := &a.Config
	model := strings.TrimSpace(a.Model)
	if model == "" && (c.LLMProvider != "" || c.LLMModel != "") {
		model = strings.TrimSpace(c.LLMProvider) + "/" + strings.TrimSpace(c.LLMModel)
	}
	if rest, ok := strings.CutPrefix(model, "google/"); ok {
		model = "gemini/" + rest // the old provider name (config.md §2)
	}
	p, m, err := provider.ParseModelID(model)
	if err != nil {
		return fmt.Errorf("agent %q: %w: %w", a.Name, err, ErrInvalid)
	}
	if lp := strings.TrimSpace(c.LLMProvider); lp == "google" {
		c.LLMProvider = "gemini"
	}
	if (c.LLMProvider != "" && strings.TrimSpace(c.LLMProvider) != p) || (c.LLMModel != "" && strings.TrimSpace(c.LLMModel) != m) {
		return fmt.Errorf("agent %q: model %q disagrees with llmProvider %q / llmModel %q: %w", a.Name, model, c.LLMProvider, c.LLMModel, ErrInvalid)
	}
	a.Model, c.LLMProvider, c.LLMModel = p+"/"+m, p, m
	if strings.TrimSpace(c.Persona) == "" {
		c.Persona = "default"
	}
	c.Persona = strings.TrimSpace(c.Persona)
	if c.Tools != nil {
		seen := make(map[string]bool, len(c.Tools))
		tools := make([]string, 0, len(c.Tools))
		for i, t := range c.Tools {
			t = strings.TrimSpace(t)
			if t == "" {
				return fmt.Errorf("agent %q: config.tools[%d] is empty: %w", a.Name, i, ErrInvalid)
			}
			if !seen[t] {
				seen[t] = true
				tools = append(tools, t)
			}
		}
		c.Tools = tools
	}
	if _, err := config.ParseCustomToolsJSON(c.CustomTools, "config.customTools"); err != nil {
		return fmt.Errorf("agent %q: %w", a.Name, err)
	}
	c.ReasoningEffort = strings.ToLower(strings.TrimSpace(c.ReasoningEffort))
	if !validEffort(c.ReasoningEffort) {
		return fmt.Errorf("agent %q: reasoningEffort %q must be disable, low, medium or high: %w", a.Name, c.ReasoningEffort, ErrInvalid)
	}
	return nil
}

// newID returns a random UUID-shaped id (it matches ^[A-Za-z0-9_-]{1,64}$).
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥1.24)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Update replaces an existing agent's definition, keeping its id and
// createdAt and stamping updatedAt. The name must stay unique.
func (s *Store) Update(ctx context.Context, a Agent) (Agent, error) {
	prior, err := s.Lookup(ctx, a.ID)
	if err != nil {
		return Agent{}, err
	}
	if prior.ID != a.ID {
		return Agent{}, &NotFoundError{ID: a.ID}
	}
	if err := normalize(&a); err != nil {
		return Agent{}, err
	}
	all, _, err := s.List(ctx)
	if err != nil {
		return Agent{}, err
	}
	for _, e := range all {
		if e.Name == a.Name && e.ID != a.ID {
			return Agent{}, fmt.Errorf("an agent named %q already exists (id %s): %w", a.Name, e.ID, ErrInvalid)
		}
	}
	a.CreatedAt = prior.CreatedAt
	a.UpdatedAt = s.now()
	if err := s.write(a, true); err != nil {
		return Agent{}, err
	}
	return a, nil
}

func validEffort(e string) bool {
	switch e {
	case "", "disable", "low", "medium", "high":
		return true
	}
	return false
}
