package personas

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func TestMatches(t *testing.T) {
	tests := []struct {
		entry, name string
		want        bool
	}{
		{"write_file", "write_file", true},
		{" Write_File\t", "write_file", true},
		{"git_*", "git_push", true},
		{"*", "anything", true},
		{"r?", "rm", true},
		{"mcp_gh", "mcp_gh_delete_repo", true},
		{"MCP_GH_*", "mcp_gh_delete_repo", true},
		{"mcp_gh", "mcp_ghost_x", false},
		{"git_*", "grep", false},
		{"write", "write_file", false},
		{"writе_file", "write_file", false}, // Cyrillic е: refused by Validate, matches nothing
		{"", "x", false},
	}
	for _, tt := range tests {
		if got := Matches(tt.entry, tt.name); got != tt.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tt.entry, tt.name, got, tt.want)
		}
	}
}

func TestValidateRefusesEntriesThatNameNoTool(t *testing.T) {
	for _, e := range []string{"writе_file", "write file", "write_file\x00", "[w]rite_file", "a\\b", "", "  ", "ｗrite_file"} {
		if err := (Persona{Deny: []string{e}}).Validate(); err == nil {
			t.Errorf("deny %q accepted", e)
		}
		if err := (Persona{Tools: []string{e}}).Validate(); err == nil {
			t.Errorf("tools %q accepted", e)
		}
	}
	if err := (Persona{Tools: []string{" read_file ", "mcp_gh_*"}, Deny: []string{"git_?ush", "x.y-z"}}).Validate(); err != nil {
		t.Fatal(err)
	}
	for name, p := range Builtins() {
		if err := p.Validate(); err != nil {
			t.Errorf("builtin %s: %v", name, err)
		}
	}
}

// A persona file's tools and deny entries are checked when it is read: a
// deny that could name no tool fails the lookup instead of denying
// nothing.
func TestLookupRefusesUnreadableEntries(t *testing.T) {
	home := t.TempDir()
	writePersona(t, home, "lookalike", `{"deny":["exеcute_command"]}`)
	writeMarkdown(t, home, "mdlookalike", "---\ndeny: exеcute_command\n---\nBe careful.")
	for _, n := range []string{"lookalike", "mdlookalike"} {
		if _, err := Lookup(context.Background(), home, n); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", n, err)
		}
	}
}

// A persona.md's tools and deny keys narrow the tool set as a JSON
// file's do; they used to be skipped, so its denies withheld nothing.
func TestMarkdownPersonaTools(t *testing.T) {
	home := t.TempDir()
	writeMarkdown(t, home, "inline", "---\ntools: read_file, grep\ndeny: [\"execute_command\", 'git_*']\n---\nRead.")
	writeMarkdown(t, home, "block", "---\ntools:\n  - read_file\n  - \"grep\"\ndeny:\n  - write_file\ndescription: d\n---\nRead.")
	writeMarkdown(t, home, "none", "---\ntools: []\n---\nThink.")
	writeMarkdown(t, home, "cats", "---\ncategories: []\n---\nThink.")
	writeMarkdown(t, home, "emptyitem", "---\ndeny:\n  -\n---\nThink.")
	ctx := context.Background()
	check := func(name string, tools, deny []string) {
		t.Helper()
		p, err := Lookup(ctx, home, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(p.Tools, tools) || !reflect.DeepEqual(p.Deny, deny) {
			t.Fatalf("%s: tools %#v deny %#v, want %#v %#v", name, p.Tools, p.Deny, tools, deny)
		}
	}
	check("inline", []string{"read_file", "grep"}, []string{"execute_command", "git_*"})
	check("block", []string{"read_file", "grep"}, []string{"write_file"})
	check("none", []string{}, nil)
	for _, bad := range []string{"cats", "emptyitem"} {
		if _, err := Lookup(ctx, home, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", bad, err)
		}
	}
}
