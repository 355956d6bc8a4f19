package suggest

import "testing"

func TestNearest(t *testing.T) {
	known := []string{"autoApprovedCommands", "maxRetries", "maxIterations", "ls", "read_file", "llm"}
	for word, want := range map[string]string{
		"autoApprovedCommand":  "autoApprovedCommands",
		"autoapprovedcommands": "autoApprovedCommands",
		"maxRetry":             "maxRetries",
		"LS":                   "ls",
		"readfile":             "read_file",
		"max_iterations":       "maxIterations",
		"bogus":                "",
		"telemetry":            "",
	} {
		if got := Nearest(word, known); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", word, got, want)
		}
	}
}
