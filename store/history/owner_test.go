package history

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestLockOfAKilledProcessIsTakenAtOnce(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "a.lock")
	if err := os.Mkdir(lock, 0o700); err != nil {
		t.Fatal(err)
	}
	// A real process that has exited: its pid is free.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if err := os.WriteFile(filepath.Join(lock, ownerFile), []byte(fmt.Sprintf("%s %d\n", host, cmd.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Store{Home: dir, LockAttempts: 1, LockInterval: time.Millisecond, StaleAfter: time.Hour}
	release, err := s.lock(context.Background(), lock)
	if err != nil {
		t.Fatalf("a dead owner's lock must be taken: %v", err)
	}
	release()
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatal("release must remove the lock")
	}
}

func TestLockOfALiveProcessIsRespected(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "a.lock")
	if err := os.Mkdir(lock, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	host, _ := os.Hostname()
	if err := os.WriteFile(filepath.Join(lock, ownerFile), []byte(fmt.Sprintf("%s %d\n", host, cmd.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Store{Home: dir, LockAttempts: 2, LockInterval: time.Millisecond, StaleAfter: time.Hour}
	if _, err := s.lock(context.Background(), lock); err == nil {
		t.Fatal("a live owner's lock was taken")
	}
}
