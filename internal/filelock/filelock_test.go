package filelock_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jazz-run/jazz/internal/filelock"
)

// TestLockSerializesUpdates: 16 read-modify-write appends at once, each
// under the lock, lose none (with a lock that admits everyone, most are
// lost).
func TestLockSerializesUpdates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "list")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	const n = 16
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := filelock.Lock(ctx, path)
			if err != nil {
				t.Error(err)
				return
			}
			defer unlock()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Error(err)
				return
			}
			time.Sleep(2 * time.Millisecond) // widen the window a lost update needs
			if err := os.WriteFile(path, append(b, strconv.Itoa(i)+"\n"...), 0o600); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(path)
	lines := 0
	for _, c := range b {
		if c == '\n' {
			lines++
		}
	}
	if lines != n {
		t.Fatalf("%d of %d updates kept:\n%s", lines, n, b)
	}
}

// TestLockWaitIsBounded: a held lock is waited for only until ctx ends,
// with an error that says why.
func TestLockWaitIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "list")
	unlock, err := filelock.Lock(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := filelock.Lock(ctx, path); err == nil {
		t.Fatal("took a lock another holder has")
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("waited %v past its deadline", waited)
	}
	unlock()
	if u, err := filelock.Lock(context.Background(), path); err != nil {
		t.Fatalf("released lock not taken again: %v", err)
	} else {
		u()
	}
}
