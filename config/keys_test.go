package config

import (
	"strings"
	"testing"
)

func TestUnknownKeysWarned(t *testing.T) {
	b := &builder{origin: map[string]string{"autoApprovedCommand": "/h/config.json"}}
	unknownKeys(b, map[string]any{"autoApprovedCommand": []any{"ls"}, "maxRetries": 1, "zzzq": 1})
	if len(b.warnings) != 2 || !strings.Contains(b.warnings[0], `config /h/config.json: autoApprovedCommand is not a key jazz knows; did you mean "autoApprovedCommands"?`) ||
		!strings.Contains(b.warnings[1], "zzzq is not a key jazz knows; it is ignored") {
		t.Fatalf("warnings %q", b.warnings)
	}
}
