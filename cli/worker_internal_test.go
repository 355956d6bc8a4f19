package cli

import (
	"strings"
	"testing"
	"unicode"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/workerpool"
)

// TestWorkerRowIsInert: what a worker says of itself (name, pool,
// version) reaches the terminal with no control character, and a tab or
// newline in it cannot add a column or a row.
func TestWorkerRowIsInert(t *testing.T) {
	hostile := []string{"\x1b]0;owned\x07", "a\tb", "line\nforged-row\t9\t9", "\x1b[2J\x1b[H", "\u202eevil", "\x9b31m", "ok"}
	for _, h := range hostile {
		row := workerRow(workerpool.LiveWorker{WorkerStatus: messages.WorkerStatus{Worker: "UKEY", Name: h, Pool: h, Version: h}})
		if strings.Count(row, "\t") != 7 || strings.Count(row, "\n") != 1 || !strings.HasSuffix(row, "\n") {
			t.Errorf("%q: the row's shape moved: %q", h, row)
		}
		for _, r := range strings.TrimSuffix(row, "\n") {
			if r != '\t' && (unicode.IsControl(r) || r == '\u202e') {
				t.Errorf("%q: %U reaches the terminal: %q", h, r, row)
			}
		}
	}
}
