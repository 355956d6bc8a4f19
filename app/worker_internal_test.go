package app

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jazz-run/jazz/config"
)

// TestWorkerHidesItsKeyFiles: a worker's own --creds/--nkey files are
// hidden from the programs its tasks start, as a run's are.
func TestWorkerHidesItsKeyFiles(t *testing.T) {
	home := t.TempDir()
	key := filepath.Join(t.TempDir(), "worker.nk")
	if err := os.WriteFile(key, []byte("SUAWORKERSEEDFORTHETEST\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rt, err := NewWorkerRuntime(context.Background(), WorkerOptions{Config: &config.Config{Home: home},
		Getenv: func(string) string { return "" }, WorkDir: t.TempDir(), KeyFiles: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	if hidden := rt.secrets.Hidden(home); !slices.Contains(hidden, key) {
		t.Fatalf("the worker's key file is not hidden from its tasks' programs: %q", hidden)
	}
}
