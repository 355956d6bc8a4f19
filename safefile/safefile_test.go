package safefile

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, content string, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // umask
		t.Fatal(err)
	}
	return path
}

func TestReadRegular(t *testing.T) {
	p := write(t, filepath.Join(t.TempDir(), "c.json"), `{"a":1}`, 0o600)
	data, warns, err := Read(context.Background(), p, Options{MaxBytes: 100, Private: true})
	if err != nil || string(data) != `{"a":1}` || len(warns) != 0 {
		t.Fatalf("data %q warns %v err %v", data, warns, err)
	}
}

func TestReadMissing(t *testing.T) {
	_, _, err := Read(context.Background(), filepath.Join(t.TempDir(), "none"), Options{MaxBytes: 10})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
}

func TestReadTooLarge(t *testing.T) {
	p := write(t, filepath.Join(t.TempDir(), "big.json"), strings.Repeat("x", 2048), 0o600)
	_, _, err := Read(context.Background(), p, Options{MaxBytes: 1024, What: "history file"})
	var tl *TooLargeError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &tl) || tl.Size != 2048 {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"history file", p, "2 KiB", "limit of 1 KiB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	// Exactly at the limit is fine.
	if _, _, err := Read(context.Background(), p, Options{MaxBytes: 2048}); err != nil {
		t.Fatal(err)
	}
}

func TestReadDirectory(t *testing.T) {
	_, _, err := Read(context.Background(), t.TempDir(), Options{MaxBytes: 10, What: "agent file"})
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a directory") {
		t.Fatalf("err = %v", err)
	}
}

func TestReadCancelled(t *testing.T) {
	p := write(t, filepath.Join(t.TempDir(), "c.json"), "{}", 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := Read(ctx, p, Options{MaxBytes: 10, What: "replay script"})
	var de *DeadlineError
	if !errors.As(err, &de) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "replay script "+p) {
		t.Fatalf("err = %v", err)
	}
}

func TestNoLimitRefused(t *testing.T) {
	p := write(t, filepath.Join(t.TempDir(), "c.json"), "{}", 0o600)
	if _, _, err := Read(context.Background(), p, Options{}); err == nil {
		t.Fatal("a read without a limit was accepted")
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 KiB", 1536: "1.5 KiB", 16 << 20: "16 MiB", 100 << 20: "100 MiB", 3 << 30: "3 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
