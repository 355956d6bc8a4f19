//go:build unix

package safefile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within fails the test if f does not return in d: the reads under test
// must never wait for a writer.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still blocked after %v", d)
	}
}

func TestReadFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pipe.json")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, func() {
		_, _, err := Read(context.Background(), p, Options{MaxBytes: 10, What: "config file"})
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "named pipe") || !strings.Contains(err.Error(), p) {
			t.Errorf("err = %v", err)
		}
	})
	// With a writer holding it open (data would flow for ever) it is
	// refused the same way.
	w, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	within(t, 5*time.Second, func() {
		if _, _, err := Read(context.Background(), p, Options{MaxBytes: 10}); !errors.Is(err, ErrNotRegular) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestReadDevice(t *testing.T) {
	within(t, 5*time.Second, func() {
		_, _, err := Read(context.Background(), "/dev/zero", Options{MaxBytes: 10})
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "character device") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestPrivateModes(t *testing.T) {
	tests := []struct {
		name     string
		fileMode os.FileMode
		dirMode  os.FileMode
		wantErr  string // "" = accepted
	}{
		{"private", 0o600, 0o700, ""},
		{"readable by others is not a write", 0o644, 0o755, ""},
		{"group-writable file", 0o660, 0o700, "writable by group (mode 0660)"},
		{"world-writable file", 0o606, 0o700, "writable by others (mode 0606)"},
		{"world-writable directory", 0o600, 0o777, "its directory"},
		{"group-writable directory", 0o600, 0o770, "writable by group (mode 0770)"},
		{"sticky world-writable directory", 0o600, 0o777 | os.ModeSticky, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "home")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			p := write(t, filepath.Join(dir, "config.json"), "{}", tt.fileMode)
			if err := os.Chmod(dir, tt.dirMode); err != nil {
				t.Fatal(err)
			}
			_, _, err := Read(context.Background(), p, Options{MaxBytes: 10, Private: true})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "chmod go-w") {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			// Without Private the same file is read: the check is opt-in.
			if _, _, err := Read(context.Background(), p, Options{MaxBytes: 10}); err != nil {
				t.Fatalf("plain read: %v", err)
			}
			if err := CheckPrivate(p); !errors.Is(err, ErrUnsafe) {
				t.Fatalf("CheckPrivate = %v", err)
			}
		})
	}
}

func TestPrivateAncestor(t *testing.T) {
	// A world-writable directory two levels up lets another user rename
	// the whole subtree away and put their own in its place.
	root := t.TempDir()
	open := filepath.Join(root, "shared")
	home := filepath.Join(open, "me", ".jazz")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrivate(home); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), open) {
		t.Fatalf("err = %v, want a refusal naming %s", err, open)
	}
}

func TestPrivateThroughSymlink(t *testing.T) {
	// The directory a symlink resolves to is checked as well as the one
	// the path names.
	root := t.TempDir()
	open := filepath.Join(root, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	target := write(t, filepath.Join(open, "real.json"), "{}", 0o600)
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(home, "config.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	_, _, err := Read(context.Background(), link, Options{MaxBytes: 10, Private: true})
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), open) {
		t.Fatalf("err = %v", err)
	}
}

func TestRestrict(t *testing.T) {
	dir := t.TempDir()
	p := write(t, filepath.Join(dir, "config.json"), "{}", 0o644)
	if _, warns, err := Read(context.Background(), p, Options{MaxBytes: 10, Private: true, Restrict: true}); err != nil || len(warns) != 0 {
		t.Fatalf("err %v warns %v", err, warns)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %04o, want 0600", st.Mode().Perm())
	}

	// Through a symlink: the target keeps its mode, and the reader is told.
	target := write(t, filepath.Join(dir, "elsewhere.json"), "{}", 0o644)
	link := filepath.Join(dir, "linked.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	data, warns, err := Read(context.Background(), link, Options{MaxBytes: 10, Private: true, Restrict: true})
	if err != nil || string(data) != "{}" {
		t.Fatalf("err %v", err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "symlink") || !strings.Contains(warns[0], "0644") {
		t.Fatalf("warnings %q", warns)
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o644 {
		t.Fatalf("the symlink's target was changed to %04o", st.Mode().Perm())
	}
}

// asRoot skips tests that need to give files away.
func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown files to another user")
	}
}

func TestPrivateForeignOwner(t *testing.T) {
	asRoot(t)
	const other = 4242
	dir := t.TempDir()
	p := write(t, filepath.Join(dir, "persona.json"), "{}", 0o600)
	if err := os.Chown(p, other, other); err != nil {
		t.Fatal(err)
	}
	_, _, err := Read(context.Background(), p, Options{MaxBytes: 10, Private: true})
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "owned by uid 4242") {
		t.Fatalf("err = %v", err)
	}

	// A directory owned by someone else.
	sub := filepath.Join(dir, "theirs")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := write(t, filepath.Join(sub, "a.json"), "{}", 0o600)
	if err := os.Chown(sub, other, other); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrivate(mine); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), sub) {
		t.Fatalf("err = %v", err)
	}

	// A symlink someone else owns can be repointed by them.
	target := write(t, filepath.Join(dir, "real.json"), "{}", 0o600)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, other, other); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrivate(link); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "symlink owned by uid 4242") {
		t.Fatalf("err = %v", err)
	}
}
