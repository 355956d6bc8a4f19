// Package personas owns the personas an agent or a subagent can take:
// the three built-ins (default, coder, researcher) and custom ones from
// JAZZ_HOME/personas/<name>.json or, as the original writes them,
// JAZZ_HOME/personas/<name>/persona.md; a custom one overrides a
// built-in of the same name. A persona changes the standing instructions and narrows the
// tool set; it can never widen it (the caller intersects with a ceiling).
package personas

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/jazz-run/jazz/safefile"
)

// Default is the persona used when none is named.
const Default = "default"

// MaxFileBytes bounds a persona file; a bigger one is refused.
const MaxFileBytes = 64 << 10

// Persona is one persona. Tools nil means "every tool the agent has";
// Deny removes names after that. Neither can add a tool the caller's
// ceiling lacks.
type Persona struct {
	Name         string   `json:"name"`
	Description  string   `json:"description,omitempty"`
	SystemPrompt string   `json:"systemPrompt,omitempty"`
	Tools        []string `json:"tools,omitempty"`
	Deny         []string `json:"deny,omitempty"`
}

// ErrUnknown matches (errors.Is) a lookup of a persona that does not exist.
var ErrUnknown = errors.New("unknown persona")

// ErrInvalid matches (errors.Is) a persona file that cannot be used.
var ErrInvalid = errors.New("invalid persona file")

var validName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// Builtins returns the built-in personas by name (a fresh map each call).
func Builtins() map[string]Persona {
	return map[string]Persona{
		"default": {
			Name:        "default",
			Description: "A general assistant with the parent's tools.",
		},
		"coder": {
			Name:        "coder",
			Description: "Writes and changes code; reads before editing, keeps changes small, checks its work.",
			SystemPrompt: "You are working as a coder. Read the relevant code before changing it, make the smallest change " +
				"that does the job, follow the existing style, and verify what you changed (build or test when you can).",
		},
		"researcher": {
			Name:        "researcher",
			Description: "Finds and reads; never writes files or runs commands.",
			SystemPrompt: "You are working as a researcher. Find and read what the task needs, cite the files and lines " +
				"you rely on, separate facts from guesses, and do not change anything.",
			// Mutations are withheld (tool-schemas.md: write, shell and
			// git mutations, http_request, which may POST, and the
			// low-risk session tools, which write work state), whatever
			// the parent holds.
			Deny: []string{"write_file", "edit_file", "mkdir", "rm", "mv", "cp", "execute_command",
				"git_add", "git_commit", "git_push", "git_pull", "git_checkout", "git_merge", "git_rm", "git_tag", "http_request",
				"manage_todos", "update_task_state", "update_work_state"},
		},
	}
}

// Lookup finds a persona: JAZZ_HOME/personas/<name>.json first (so a
// file overrides a built-in), then the built-ins. An empty name is
// Default. An unknown name is an ErrUnknown that lists the known ones. A
// persona file must be a regular file of at most MaxFileBytes that only
// the user (or root) can change: a persona decides a subagent's
// instructions and tools.
func Lookup(ctx context.Context, jazzHome, name string) (Persona, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		name = Default
	}
	if !validName().MatchString(name) {
		return Persona{}, fmt.Errorf("%w %q: a persona name is 1-64 letters, digits, '-' or '_'", ErrUnknown, name)
	}
	if jazzHome != "" {
		p, err := readFile(ctx, filepath.Join(jazzHome, "personas", name+".json"), name)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return Persona{}, err
		}
		p, err = readMarkdown(ctx, filepath.Join(jazzHome, "personas", name, MarkdownFile), name)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return Persona{}, err
		}
	}
	if p, ok := Builtins()[name]; ok {
		return p, nil
	}
	return Persona{}, fmt.Errorf("%w %q: use one of %s", ErrUnknown, name, strings.Join(Names(jazzHome), ", "))
}

// Names lists every persona that Lookup can find, sorted. A missing or
// unreadable personas directory just contributes nothing.
func Names(jazzHome string) []string {
	set := map[string]bool{}
	for n := range Builtins() {
		set[n] = true
	}
	if jazzHome != "" {
		entries, _ := os.ReadDir(filepath.Join(jazzHome, "personas"))
		for _, e := range entries {
			n, ok := strings.CutSuffix(e.Name(), ".json")
			if ok && !e.IsDir() && validName().MatchString(n) {
				set[n] = true
			}
			if e.IsDir() && validName().MatchString(e.Name()) {
				if _, err := os.Lstat(filepath.Join(jazzHome, "personas", e.Name(), MarkdownFile)); err == nil {
					set[e.Name()] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func readFile(ctx context.Context, path, name string) (Persona, error) {
	data, _, err := safefile.Read(ctx, path, safefile.Options{MaxBytes: MaxFileBytes, What: "persona file", Private: true})
	if errors.Is(err, fs.ErrNotExist) {
		return Persona{}, err // falls through to the built-ins
	}
	if err != nil {
		return Persona{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var p Persona
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Persona{}, fmt.Errorf("%w %s: %w", ErrInvalid, path, err)
	}
	if p.Name == "" {
		p.Name = name
	}
	if p.Name != name {
		return Persona{}, fmt.Errorf("%w %s: its name is %q but the file is named for %q", ErrInvalid, path, p.Name, name)
	}
	if err := p.Validate(); err != nil {
		return Persona{}, fmt.Errorf("%w %s: %w", ErrInvalid, path, err)
	}
	return p, nil
}
