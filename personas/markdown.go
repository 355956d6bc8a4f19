package personas

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/jazz-run/jazz/safefile"
)

// MarkdownFile is the original's persona layout:
// JAZZ_HOME/personas/<name>/persona.md.
const MarkdownFile = "persona.md"

// readMarkdown reads a persona.md: an optional front matter between
// "---" lines of `key: value` (name, description; tone and style are
// added to the instructions), then the instructions as the body.
func readMarkdown(ctx context.Context, path, name string) (Persona, error) {
	data, _, err := safefile.Read(ctx, path, safefile.Options{MaxBytes: MaxFileBytes, What: "persona file", Private: true})
	if errors.Is(err, fs.ErrNotExist) {
		return Persona{}, err
	}
	if err != nil {
		return Persona{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	text := strings.TrimPrefix(strings.ReplaceAll(string(data), "\r\n", "\n"), "\ufeff")
	p := Persona{Name: name}
	var tone, style string
	if rest, ok := strings.CutPrefix(text, "---\n"); ok {
		head, body, closed := strings.Cut(rest, "\n---")
		if !closed {
			return Persona{}, fmt.Errorf("%w %s: the front matter's closing --- is missing", ErrInvalid, path)
		}
		text = strings.TrimPrefix(strings.TrimLeft(body, "-"), "\n")
		sc := bufio.NewScanner(strings.NewReader(head))
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			v = strings.Trim(strings.TrimSpace(v), `"'`)
			switch strings.TrimSpace(strings.ToLower(k)) {
			case "name":
				if v != "" && v != name {
					return Persona{}, fmt.Errorf("%w %s: its name is %q but its directory is named for %q", ErrInvalid, path, v, name)
				}
			case "description":
				p.Description = v
			case "tone":
				tone = v
			case "style":
				style = v
			case "systemprompt":
				if v != "" {
					text = v + "\n\n" + text
				}
			}
		}
	}
	prompt := strings.TrimSpace(text)
	if tone != "" {
		prompt += "\n\nTone: " + tone + "."
	}
	if style != "" {
		prompt += "\nStyle: " + style + "."
	}
	p.SystemPrompt = strings.TrimSpace(prompt)
	if p.SystemPrompt == "" {
		return Persona{}, fmt.Errorf("%w %s: it holds no instructions", ErrInvalid, path)
	}
	return p, nil
}
