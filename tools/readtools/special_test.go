package readtools

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jazz-run/jazz/secrets"
)

// soon fails the test when fn has not returned within a few seconds: the
// property is that no read tool blocks on what it is pointed at.
func soon(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("still blocked after 10s")
	}
}

// specialFixture has a FIFO (no writer, so a read would block for ever),
// links to it and to /dev/zero (a read never ends), and a plain file.
func specialFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	if err := syscall.Mkfifo(filepath.Join(f.dir, "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for name, target := range map[string]string{"zero": "/dev/zero", "pipelink": "pipe", "urandom": "/dev/urandom"} {
		if err := os.Symlink(target, filepath.Join(f.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	f.write("tree/a.txt", "needle here\n")
	if err := syscall.Mkfifo(filepath.Join(f.dir, "tree", "b.fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(f.dir, "tree", "zero.txt")); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestReadToolsRefuseFIFOsAndDevices(t *testing.T) {
	f := specialFixture(t)
	for _, tt := range []struct{ path, kind string }{
		{"pipe", "FIFO"}, {"pipelink", "FIFO"}, {"zero", "character device"}, {"/dev/zero", "character device"}, {"urandom", "character device"},
	} {
		abs := tt.path
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(f.dir, abs)
		}
		want := "Not a file: " + abs + " (it is a " + tt.kind + "; only regular files are read)"
		for _, tool := range []string{"read_file", "head", "tail"} {
			soon(t, func() { f.fail(tool, `{"path":"`+tt.path+`"}`, want) })
		}
		soon(t, func() {
			f.fail("grep", `{"pattern":"x","path":"`+tt.path+`"}`, "grep command failed: "+want)
		})
	}
	// stat describes them without opening them.
	soon(t, func() {
		if got := obj(t, f.ok("stat", `{"path":"pipe"}`)); got["type"] != "FIFO" {
			t.Errorf("stat pipe = %v", got)
		}
	})
}

// A tree holding a FIFO and a link to /dev/zero is searched, listed and
// walked without reading either.
func TestSearchesSkipSpecialFiles(t *testing.T) {
	forEachBackend(t, func(t *testing.T) {
		f := specialFixture(t)
		for _, args := range []string{
			`{"pattern":"needle","path":"tree"}`,
			`{"pattern":"needle","path":"tree","recursive":false}`,
			`{"pattern":"needle"}`,
			`{"pattern":"needle","outputMode":"files"}`,
		} {
			soon(t, func() {
				got := obj(t, f.ok("grep", args))
				if got["totalFound"] != 1.0 {
					t.Errorf("grep %s = %v", args, got)
				}
			})
		}
	})
	f := specialFixture(t)
	soon(t, func() {
		if got := names(t, f.ok("ls", `{"path":"tree"}`)); strings.Join(got, ",") != "a.txt,b.fifo,zero.txt" {
			t.Errorf("ls tree = %v", got)
		}
	})
	soon(t, func() {
		if got := obj(t, f.ok("find", `{"path":"tree","name":"*"}`)); got["totalFound"] != 3.0 {
			t.Errorf("find tree = %v", got)
		}
	})
}

// A .gitignore that is a FIFO or /dev/zero would hang or exhaust a walk.
func TestWalkSkipsASpecialGitignore(t *testing.T) {
	f := newFixture(t)
	f.write("x.txt", "")
	if err := syscall.Mkfifo(filepath.Join(f.dir, ".gitignore"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	soon(t, func() { f.ok("ls", `{}`) })
	soon(t, func() { f.ok("find", `{"smart":false}`) })
	if err := os.Remove(filepath.Join(f.dir, ".gitignore")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(f.dir, ".gitignore")); err != nil {
		t.Fatal(err)
	}
	soon(t, func() { f.ok("ls", `{}`) })
}

// A huge file is not read whole: one past the scan bound is refused at
// once (a sparse file, so the test costs no disk), and a long line keeps
// only what the result can hold.
func TestReadBounds(t *testing.T) {
	f := newFixture(t)
	big := filepath.Join(f.dir, "big.log")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxScanBytes+1); err != nil {
		t.Skipf("sparse file: %v", err)
	}
	soon(t, func() {
		f.fail("tail", `{"path":"big.log"}`, big+" is larger than 1 GiB, the most the read tools scan; search it with grep instead")
	})
	line := strings.Repeat("a", 3<<20) + "END"
	f.write("long.txt", "first\n"+line)
	got := obj(t, f.ok("tail", `{"path":"long.txt","lines":1,"maxBytes":10}`))
	if got["content"] != "aaaaaaaEND" || got["truncated"] != true || got["totalLines"] != 2.0 {
		t.Errorf("tail of a long line = %.80v", got)
	}
	got = obj(t, f.ok("head", `{"path":"long.txt","lines":2,"maxBytes":8}`))
	if got["content"] != "first\naa" || got["truncated"] != true {
		t.Errorf("head of a long line = %.80v", got)
	}
	got = obj(t, f.ok("read_file", `{"path":"long.txt","startLine":2,"maxBytes":4}`))
	if got["content"] != "aaaa" || got["returnedLines"] != 1.0 || got["totalLines"] != 2.0 {
		t.Errorf("read_file range of a long line = %.80v", got)
	}
}

// searchTargets splits a search around a protected place and leaves the
// rest to the child as named paths.
func TestSearchTargets(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "u", ".jazz")
	writeFile(t, filepath.Join(home, "config.json"), "{}")
	writeFile(t, filepath.Join(root, "u", "notes.txt"), "")
	writeFile(t, filepath.Join(root, "u", ".bashrc"), "")
	writeFile(t, filepath.Join(root, "other", "x"), "")
	if err := os.Symlink("/proc/self", filepath.Join(root, "u", "self")); err != nil {
		t.Fatal(err)
	}
	g := secrets.NewGuard(home)
	got, err := searchTargets(g, root, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "other"), filepath.Join(root, "u", ".bashrc"), filepath.Join(root, "u", "notes.txt")}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("targets %v, want %v", got, want)
	}
	got, _ = searchTargets(g, root, true)
	if strings.Join(got, " ") != strings.Join([]string{want[0], want[2]}, " ") {
		t.Errorf("rg targets %v", got)
	}
	if got, _ := searchTargets(g, filepath.Join(root, "other"), false); len(got) != 1 || got[0] != filepath.Join(root, "other") {
		t.Errorf("a root without protected places is searched as is: %v", got)
	}
	if _, err := os.Stat("/proc/self"); err == nil {
		got, _ := searchTargets(g, "/", true)
		for _, p := range got {
			if secrets.Within(p, "/proc") {
				t.Errorf("a search of / is handed %s", p)
			}
		}
	}
}
