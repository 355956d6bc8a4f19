//go:build linux

package safefile_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jazz-run/jazz/safefile"
)

// within fails the test if fn has not returned after d: the property under
// test is that nothing blocks.
func within(t *testing.T, d time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still blocked after %v", d)
	}
}

func mkfifo(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return p
}

// A FIFO with no writer, /dev/zero, a directory and a socket are refused
// without blocking and without reading a byte; a symlink to one is too.
func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := mkfifo(t, dir)
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	link := filepath.Join(dir, "zero-link")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, kind string }{
		{fifo, "FIFO"},
		{"/dev/zero", "character device"},
		{"/dev/null", "character device"},
		{link, "character device"},
		{dir, "directory"},
		{sock, "socket"},
	} {
		within(t, 5*time.Second, func() {
			_, err := readFile(tt.path, 1<<20)
			var nr *safefile.NotRegularError
			if !errors.As(err, &nr) || safefile.KindOf(nr.Mode) != tt.kind || !errors.Is(err, safefile.ErrNotRegular) {
				t.Errorf("%s: err %v, want a NotRegularError of kind %s", tt.path, err, tt.kind)
			}
		})
	}
}

// /dev/stdin and /proc/self/fd/N name whatever is open: a pipe there is
// refused like any FIFO.
func TestOpenRefusesAPipeBehindAMagicLink(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	p := "/proc/self/fd/" + strconv.Itoa(int(r.Fd()))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	within(t, 5*time.Second, func() {
		if _, err := readFile(p, 1<<20); !errors.Is(err, safefile.ErrNotRegular) {
			t.Errorf("%s: err %v, want ErrNotRegular", p, err)
		}
	})
}

func TestReadAllBoundsBytes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(strings.Repeat("x", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := readFile(p, 1000)
	if err != nil || len(b) != 1000 {
		t.Fatalf("at the limit: %d bytes, %v", len(b), err)
	}
	_, err = readFile(p, 999)
	var tl *safefile.TooLargeError
	if !errors.As(err, &tl) || tl.Limit != 999 || !errors.Is(err, safefile.ErrTooLarge) {
		t.Fatalf("past the limit: %v", err)
	}
	if !strings.Contains(err.Error(), "999 bytes") {
		t.Errorf("message %q does not state the limit", err)
	}
}

// A size that lies (procfs says 0) is still bounded by what is read.
func TestReadAllBoundsAFileThatLiesAboutItsSize(t *testing.T) {
	if _, err := os.Stat("/proc/self/maps"); err != nil {
		t.Skip("no /proc")
	}
	_, err := readFile("/proc/self/maps", 16)
	if !errors.Is(err, safefile.ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
}

// Stream sizes its first buffer by the opened file's stat; a file that
// grew after it was opened (or a procfs file, which says 0 bytes) is
// still read to its end, in order.
func TestStreamReadsAFileThatGrewAfterItsStat(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := safefile.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want strings.Builder
	want.WriteString("0123456789")
	for i := 0; want.Len() < 300<<10; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if err := os.WriteFile(p, []byte(want.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []byte
	chunks := 0
	err = f.Stream(context.Background(), func(b []byte) error {
		chunks++
		got = append(got, b...)
		return nil
	})
	if err != nil || string(got) != want.String() {
		t.Fatalf("read %d of %d bytes (%v)", len(got), want.Len(), err)
	}
	// Doubling from the stat's size: far fewer reads than 512-byte ones.
	if chunks > 20 {
		t.Errorf("%d reads for %d bytes; the buffer did not grow", chunks, want.Len())
	}
}

func TestStreamStopsAtTheDeadline(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := safefile.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	chunks := 0
	err = f.Stream(ctx, func([]byte) error {
		chunks++
		time.Sleep(20 * time.Millisecond) // a slow consumer stands in for a slow disk
		return nil
	})
	var de *safefile.DeadlineError
	if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) || chunks >= 16 {
		t.Fatalf("err %v after %d chunks, want a DeadlineError before the end", err, chunks)
	}
}

// readFile is Open and ReadAll, as the read tools use them.
func readFile(path string, limit int64) ([]byte, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadAll(context.Background(), limit)
}
