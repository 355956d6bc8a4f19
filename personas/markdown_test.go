package personas

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeMarkdown(t *testing.T, home, name, body string) {
	t.Helper()
	dir := filepath.Join(home, "personas", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, MarkdownFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The original's layout, JAZZ_HOME/personas/<name>/persona.md, is read:
// front matter for the description, the body as the instructions.
func TestMarkdownPersona(t *testing.T) {
	home := t.TempDir()
	writeMarkdown(t, home, "pirate", "---\nname: pirate\ndescription: \"Talks like a pirate\"\ntone: salty\n---\n\nAnswer as a pirate would.\nSay arr.\n")
	writeMarkdown(t, home, "plain", "Be terse.")
	writeMarkdown(t, home, "misnamed", "---\nname: other\n---\nx")
	writeMarkdown(t, home, "empty", "---\ndescription: d\n---\n")
	writeMarkdown(t, home, "open", "---\nname: open\nBe terse.")
	ctx := context.Background()
	p, err := Lookup(ctx, home, "pirate")
	if err != nil || p.Description != "Talks like a pirate" || !strings.HasPrefix(p.SystemPrompt, "Answer as a pirate would.\nSay arr.") || !strings.Contains(p.SystemPrompt, "Tone: salty.") {
		t.Fatalf("pirate = %+v, %v", p, err)
	}
	if p, err := Lookup(ctx, home, "plain"); err != nil || p.SystemPrompt != "Be terse." || p.Name != "plain" {
		t.Fatalf("plain = %+v, %v", p, err)
	}
	for _, bad := range []string{"misnamed", "empty", "open"} {
		if _, err := Lookup(ctx, home, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", bad, err)
		}
	}
	names := strings.Join(Names(home), ",")
	if !strings.Contains(names, "pirate") || !strings.Contains(names, "plain") {
		t.Errorf("Names = %s", names)
	}
}
