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
		// list is the tools or deny list that "- name" lines below a
		// bare "tools:" or "deny:" extend.
		var list *[]string
		for sc.Scan() {
			line := sc.Text()
			if item, ok := strings.CutPrefix(strings.TrimSpace(line), "-"); ok && list != nil {
				*list = append(*list, strings.Trim(strings.TrimSpace(item), `"'`))
				continue
			}
			list = nil
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			v = strings.Trim(strings.TrimSpace(v), `"'`)
			switch key := strings.TrimSpace(strings.ToLower(k)); key {
			case "tools", "deny":
				// The two keys that narrow the tool set are read, never
				// skipped: a deny left unread would withhold nothing.
				dst := &p.Tools
				if key == "deny" {
					dst = &p.Deny
				}
				*dst = append(*dst, inlineList(v)...)
				if *dst == nil {
					*dst = []string{}
				}
				if strings.TrimSpace(v) == "" {
					list = dst
				}
			case "categories":
				return Persona{}, fmt.Errorf("%w %s: tool categories are not supported; list the tools (or deny) by name", ErrInvalid, path)
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
	if len(p.Deny) == 0 {
		p.Deny = nil
	}
	if err := p.Validate(); err != nil {
		return Persona{}, fmt.Errorf("%w %s: %w", ErrInvalid, path, err)
	}
	return p, nil
}

// inlineList reads "a, b", "[a, b]" or "['a', \"b\"]" as its names.
func inlineList(v string) []string {
	v = strings.TrimSpace(v)
	v = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.Trim(strings.TrimSpace(f), `"'`); f != "" {
			out = append(out, f)
		}
	}
	return out
}
