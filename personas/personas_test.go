package personas

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writePersona(t *testing.T, home, name, body string) {
	t.Helper()
	dir := filepath.Join(home, "personas")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLookup(t *testing.T) {
	home := t.TempDir()
	writePersona(t, home, "reviewer", `{"name":"reviewer","description":"reviews","systemPrompt":"Review.","tools":["read_file","grep"]}`)
	writePersona(t, home, "coder", `{"systemPrompt":"My coder.","tools":["read_file"]}`)
	writePersona(t, home, "badjson", `{"name":`)
	writePersona(t, home, "unknownfield", `{"name":"unknownfield","tool":["x"]}`)
	writePersona(t, home, "misnamed", `{"name":"someone-else"}`)
	writePersona(t, home, "emptytool", `{"tools":["read_file",""]}`)
	writePersona(t, home, "huge", `{"description":"`+strings.Repeat("x", MaxFileBytes)+`"}`)

	tests := []struct {
		name     string
		home     string
		persona  string
		wantName string
		wantErr  error
		check    func(t *testing.T, p Persona)
	}{
		{name: "empty is default", home: home, persona: "", wantName: "default",
			check: func(t *testing.T, p Persona) {
				if p.Tools != nil || p.Deny != nil {
					t.Fatalf("default narrows tools: %+v", p)
				}
			}},
		{name: "builtin researcher denies mutations", home: home, persona: "researcher", wantName: "researcher",
			check: func(t *testing.T, p Persona) {
				if !contains(p.Deny, "execute_command") || !contains(p.Deny, "write_file") {
					t.Fatalf("researcher deny = %v", p.Deny)
				}
			}},
		{name: "file overrides builtin", home: home, persona: "coder", wantName: "coder",
			check: func(t *testing.T, p Persona) {
				if p.SystemPrompt != "My coder." || !reflect.DeepEqual(p.Tools, []string{"read_file"}) {
					t.Fatalf("override not used: %+v", p)
				}
			}},
		{name: "custom", home: home, persona: " reviewer ", wantName: "reviewer",
			check: func(t *testing.T, p Persona) {
				if !reflect.DeepEqual(p.Tools, []string{"read_file", "grep"}) {
					t.Fatalf("tools = %v", p.Tools)
				}
			}},
		{name: "no home, builtin", home: "", persona: "coder", wantName: "coder"},
		{name: "missing home dir", home: filepath.Join(home, "nope"), persona: "researcher", wantName: "researcher"},
		{name: "unknown", home: home, persona: "wizard", wantErr: ErrUnknown},
		{name: "path traversal is not a name", home: home, persona: "../etc/passwd", wantErr: ErrUnknown},
		{name: "bad json", home: home, persona: "badjson", wantErr: ErrInvalid},
		{name: "unknown field", home: home, persona: "unknownfield", wantErr: ErrInvalid},
		{name: "name mismatch", home: home, persona: "misnamed", wantErr: ErrInvalid},
		{name: "empty tool entry", home: home, persona: "emptytool", wantErr: ErrInvalid},
		{name: "too big", home: home, persona: "huge", wantErr: ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Lookup(context.Background(), tt.home, tt.persona)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Lookup(%q) error = %v, want %v", tt.persona, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Lookup(%q): %v", tt.persona, err)
			}
			if p.Name != tt.wantName {
				t.Fatalf("name = %q, want %q", p.Name, tt.wantName)
			}
			if tt.check != nil {
				tt.check(t, p)
			}
		})
	}
}

func TestUnknownListsKnown(t *testing.T) {
	home := t.TempDir()
	writePersona(t, home, "reviewer", `{}`)
	_, err := Lookup(context.Background(), home, "wizard")
	if err == nil || !strings.Contains(err.Error(), "coder, default, researcher, reviewer") {
		t.Fatalf("error = %v, want it to list the known personas", err)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
